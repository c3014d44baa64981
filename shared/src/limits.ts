// Every limit and pattern the product documentation states, defined once. Anything that enforces or
// renders one of these imports it from here; search for the seed's own words to find it.

/** caplo.yaml apiVersion: v1, v1.0 and v1.0.0 resolve to the latest matching schema. */
export const API_VERSION_PATTERN = /^v1(\.0(\.0)?)?$/;
/** Package name: lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters. */
export const PACKAGE_NAME_PATTERN = /^[a-z][a-z0-9-]{1,39}$/;
/** Tool name: lowercase letters, digits and underscores, starting with a letter, at most 48 characters. */
export const TOOL_NAME_PATTERN = /^[a-z][a-z0-9_]{0,47}$/;
/** The model sees `<package>__<tool>` (dashes turned into underscores); at most 64 characters. */
export const MODEL_TOOL_NAME_MAX = 64;
export const PACKAGE_DESCRIPTION_MAX = 500;
/** Entry module: relative, no `..` segment, a .ts/.mts/.js/.mjs file. */
export const ENTRY_PATTERN = /^(?!\/)(?!.*(^|\/)\.\.(\/|$))[A-Za-z0-9._/-]+\.(ts|mts|js|mjs)$/;
export const RUNTIMES = ["node24"] as const;
export const DEFAULT_FUNCTION_ENTRY = "src/tool.ts";
export const DEFAULT_MCP_ENTRY = "src/server.ts";
export const DEFAULT_TESTS_GLOB = "tests/*.json";

export const TIMEOUT_SECONDS_MIN = 1;
export const TIMEOUT_SECONDS_MAX = 30;
export const MCP_TOOLS_MIN = 1;
export const MCP_TOOLS_MAX = 64;
export const EGRESS_MAX = 50;
export const SECRETS_MAX = 50;
/**
 * An egress entry: an exact host name, or `*.suffix` (any name under suffix, not suffix itself).
 * Lowercase DNS names only; IP literals are refused here and again by the egress proxy.
 */
export const EGRESS_HOST_PATTERN =
  /^(\*\.)?(?=[a-z0-9.-]{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** A secret name, as an environment variable would be named (serveStdio reads it from one). */
export const SECRET_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * A workspace id (docs/operators/workspaces.md): like a package name. Agents, packages, secrets and team
 * members are named uniquely within their workspace. A server with no workspace configured runs
 * everything in `default`; an agent of another workspace is addressed as `<workspace>/<agent>`.
 */
export const WORKSPACE_ID_PATTERN = /^[a-z][a-z0-9-]{1,39}$/;
export const DEFAULT_WORKSPACE = "default";
/**
 * How a workspace's agent or team member is named across the server: its name in the default workspace,
 * else `<workspace>/<name>` (names are unique within a workspace, so the reference is unique on the server).
 */
export function workspaceRef(workspaceId: string, name: string): string {
  return workspaceId === DEFAULT_WORKSPACE ? name : `${workspaceId}/${name}`;
}

/** A reference (workspaceRef) split into its workspace and name, without checking either's pattern. */
export function parseWorkspaceRef(ref: string): { workspaceId: string; name: string } {
  const slash = ref.indexOf("/");
  return slash < 0 ? { workspaceId: DEFAULT_WORKSPACE, name: ref } : { workspaceId: ref.slice(0, slash), name: ref.slice(slash + 1) };
}

/** Subject selector: an input property the runner fills with the subject's resource reference. */
export const SELECTOR_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Plain text rendered escaped: no markup, control characters, or surrounding whitespace. */
export const PLAIN_TEXT_PATTERN =
  /^[^\s<>\u0000-\u001F\u007F](?:[^<>\u0000-\u001F\u007F]*[^\s<>\u0000-\u001F\u007F])?$/;
export const TITLE_MAX = 80;
export const LABEL_MAX = 80;
/** JSON pointer to one direct property of a schema. */
export const JSON_POINTER_PATTERN = /^\/[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const DISPLAYS = ["plain", "last4"] as const;
export const PRESENTATION_FIELDS_MAX = 12;
export const RECEIPT_FIELDS_MAX = 12;
export const OPTIONS_MAX = 20;
export const OPTION_VALUE_MAX = 1000;
export const FIELD_INPUTS = ["text", "select"] as const;

export const LAYOUTS = ["list", "table", "cards", "choices", "detail", "comparison", "timeline", "page", "map"] as const;
/** How many items of the array property each layout shows. */
export const LAYOUT_ITEMS_MAX = {
  list: 20,
  table: 20,
  cards: 20,
  choices: 10,
  comparison: 4,
  timeline: 12,
  map: 20,
  detail: 1,
  page: 1,
} as const;
/** Columns: at most 6, or 12 for a detail, comparison or map. */
export const COLUMNS_MAX = 6;
export const COLUMNS_MAX_WIDE = 12;
export const WIDE_COLUMN_LAYOUTS = ["detail", "comparison", "map"] as const;
export const COLUMN_ROLES = [
  "image",
  "title",
  "subtitle",
  "description",
  "money",
  "badge",
  "link",
  "time",
  "status",
  "latitude",
  "longitude",
  "address",
] as const;
/** The timeline state an enum value of a status column maps to. */
export const TIMELINE_STATES = ["done", "current", "upcoming", "failed"] as const;
export const CURRENCY_CODE_PATTERN = /^[A-Z]{3}$/;
/** Item controls: up to two on cards, a detail, a comparison or a map; exactly one reply on choices. */
export const ACTIONS_MAX = 2;
export const ACTION_LAYOUTS = ["cards", "detail", "comparison", "map", "choices"] as const;
export const ACTION_KINDS = ["reply", "link"] as const;
export const ACTION_LABEL_MAX = 20;
export const ACTION_TEMPLATE_MAX = 200;
export const PAGE_LABEL_MAX = 20;
export const PAGE_LABEL_PATTERN = /^[^\r\n<>]+$/;
export const PAGE_DISPLAYS = ["panel", "tab"] as const;
export const PAGE_ORIGINS_MIN = 1;
export const PAGE_ORIGINS_MAX = 5;
/** A page origin: https, or http on loopback (which browsers treat as a secure context). */
export const PAGE_ORIGIN_PATTERN =
  /^(?:https:\/\/[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?(?::[0-9]{1,5})?|http:\/\/(?:localhost|127\.0\.0\.1|\[::1\])(?::[0-9]{1,5})?)$/;

export const FILE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp", "application/pdf"] as const;
export const FILE_ACCEPT_MAX = 5;
export const FILE_MAX_BYTES_MIN = 1024;
export const FILE_MAX_BYTES_MAX = 10_485_760;
export const FILES_PER_RESULT_MAX = 3;

/**
 * Widget status line: 3 to 40 characters, no trailing punctuation, no links, never interpolated. Counted in
 * characters (the `u` flag: an emoji is one), as the seeds count them and as JSON Schema validators run the
 * pattern; without it an emoji counted twice and the build refused what the editor's schema accepted.
 */
export const PROGRESS_LABEL_PATTERN =
  /^(?![\s\S]*(?:https?:|www\.))[^\s<>{}\u0000-\u001f\u007f][^<>{}\u0000-\u001f\u007f]{1,38}[^\s.!?:;,\u2026<>{}\u0000-\u001f\u007f]$/u;
/**
 * Voice acknowledgement: one sentence of 3 to 90 characters ending with a full stop. (The seed's own
 * pattern has {1,87} here, which stops at 89; its text says 90, and 90 is what an author is promised.)
 * In characters, like the label (the `u` flag).
 */
export const PROGRESS_SPOKEN_PATTERN =
  /^(?![\s\S]*(?:https?:|www\.))[^\s<>{}\u0000-\u001f\u007f][^<>{}\u0000-\u001f\u007f]{1,88}\.$/u;

export const ELICITATION_STYLES = ["form", "questions"] as const;
export const ELICITATION_FIELDS_MAX = 12;
export const ELICITATION_FIELD_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
/** questions style: one required single choice of 2 to 9 options, labels of at most 20 characters. */
export const QUESTION_OPTIONS_MIN = 2;
export const QUESTION_OPTIONS_MAX = 9;
export const QUESTION_OPTION_LABEL_MAX = 20;
/** questions style: as many questions per call as declared fields, up to 8. */
export const QUESTIONS_PER_CALL_MAX = 8;
/**
 * How long a tool's question waits for the visitor's answer. The wait does not count against the tool's
 * timeoutSeconds; past it the tool sees cancel and a late answer is told the question expired.
 */
export const ELICITATION_WAIT_SECONDS = 300;

/** Write outcomes. */
export const OPERATION_REF_PATTERN = /^[\x20-\x7E]{1,256}$/;
export const OPERATION_REF_MAX = 256;
/** Caplo asks one check at a time per write, up to 8 times with growing gaps between checks. */
export const STATUS_CHECKS_MAX = 8;
export const STEP_UP_LEVELS = ["low", "standard", "high"] as const;
export const MAX_AUTH_AGE_SECONDS_MIN = 0;
export const MAX_AUTH_AGE_SECONDS_MAX = 86_400;
/** Results over 256 KiB fail. */
export const RESULT_BYTES_MAX = 256 * 1024;

/**
 * Characters that make text show other than it is, as a regex character class's body: bidirectional
 * embeddings, overrides, isolates and marks (U+202E shows "1234" as "4321"; a right-to-left mark can swap two
 * groups of digits) and invisible spaces and joiners between letters (U+200B, U+2060, U+FEFF). A proposed
 * write's arguments may not hold them (the card would show another call than the one that runs), nor may a
 * link sent to a messaging customer. U+200D, the joiner inside emoji, is not one of them.
 */
export const MISLEADING_CHARACTERS = "\\u061c\\u200b\\u200e\\u200f\\u202a-\\u202e\\u2060\\u2066-\\u2069\\ufeff";
export const MISLEADING_CHARACTER = new RegExp(`[${MISLEADING_CHARACTERS}]`);

/** A tool listing's bounds, a package's at build and a remote MCP server's at review and before each call: its tools as JSON, and its tools. */
export const LISTING_BYTES_MAX = 4 * 1024 * 1024;
export const LISTED_TOOLS_MAX = 1000;

/** A customer's message at most, in UTF-16 units (the inbound schema's bound): what the widget and a channel's tap or typed text send is cut to it. */
export const MESSAGE_TEXT_MAX = 4000;

/**
 * The first `max` UTF-16 units of text (the protocol's limits count them), one fewer when the cut would split
 * a character's surrogate pair: a lone half shows as a broken glyph, and the server keeps it only as U+FFFD.
 */
export function cutUnits(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
