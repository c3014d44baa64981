// agent.yaml (kind: Agent) and the immutable agent release, as zod schemas: the one definition that
// `caplo agent validate`, the generated JSON Schema (schemas/agent.schema.json), publishing and the
// engine use. Every object is strict ("Other fields are refused"), as in caplo.yaml.
import { z } from "zod";
import * as L from "./limits.ts";
import { CHANNEL_KINDS } from "./channel.ts";
import { modelToolName, toolPolicySchema } from "./manifest.ts";
import { formatPath } from "./manifestParse.ts";
import { packageVersionSchema } from "./version.ts";

/** The body of a pattern (its source without the ^ and $ anchors), to build larger patterns from it. */
const body = (pattern: RegExp) => pattern.source.replace(/^\^/, "").replace(/\$$/, "");

export const AGENT_KIND = "Agent";
/** Agent names follow the package name rule: lowercase letters, digits and dashes, 2 to 40 characters. */
export const AGENT_NAME_PATTERN = L.PACKAGE_NAME_PATTERN;
/** A tool reference as agents write it: `package/tool`, for example orders/get_order. */
export const TOOL_REF_PATTERN = new RegExp(`^(${body(L.PACKAGE_NAME_PATTERN)})/(${body(L.TOOL_NAME_PATTERN)})$`);
/** At most this many tools per agent (OpenAI-compatible APIs accept 128 tool definitions per request). */
export const AGENT_TOOLS_MAX = 128;
export const AGENT_DESCRIPTION_MAX = 500;
export const INSTRUCTIONS_MAX = 32_000;
export const GREETING_MAX = 500;
/** How customers reach a person where a messaging channel has no handoff destination. */
export const CONTACT_MAX = 200;
export const DEFAULT_TIME_ZONE = "UTC";
/** Allowed website origins of the widget. */
export const AGENT_ORIGINS_MAX = 20;
/** An origin as a browser sends it: https, or http only on localhost (a secure context in browsers). */
export const AGENT_ORIGIN_PATTERN = L.PAGE_ORIGIN_PATTERN;
/** A BCP 47 language tag such as en, sl or pt-BR (the widget's hello frame allows 35 characters). */
export const LOCALE_PATTERN = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8}){0,4}$/;
export const LOCALE_MAX = 35;
export const DEFAULT_LOCALE = "en";
/** The model override: `provider/model`, for example openai/gpt-4.1-mini or openai/llama3.1:8b. */
export const MODEL_PROVIDERS = ["openai", "scripted"] as const;
export const MODEL_REF_PATTERN = /^(openai|scripted)\/([\x21-\x7E]{1,200})$/;
/** A team queue a conversation is handed to (shown in the console and the handoff HTTP API). */
export const HANDOFF_QUEUE_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;
export const HANDOFF_MESSAGE_MAX = 500;
/** A WhatsApp sender number in E.164 form. */
export const E164_PATTERN = /^\+[1-9][0-9]{6,14}$/;
/** Meta page, account and scoped user ids are decimal numbers. */
export const META_ID_PATTERN = /^[0-9]{1,32}$/;

/** Identity tokens: the algorithms a site owner may sign with. `none` is never accepted. */
export const IDENTITY_ALGORITHMS = ["HS256", "ES256"] as const;
export const IDENTITY_TOKEN_AGE_MIN = 1;
export const IDENTITY_TOKEN_AGE_MAX = 86_400;
export const IDENTITY_TOKEN_AGE_DEFAULT = 600;
export const IDENTITY_LEVEL_MAPPINGS_MAX = 20;
export const IDENTITY_JWKS_KEYS_MAX = 10;
export const IDENTITY_CLAIM_VALUE_MAX = 255;
/** Tolerated clock difference between the owner's backend and Caplo when checking exp, nbf and iat. */
export const IDENTITY_CLOCK_SKEW_SECONDS = 30;
/** A compact JWS longer than this is refused unread (the widget's identify frame carries at most 8192). */
export const IDENTITY_TOKEN_MAX = 8192;

const plainText = (max: number) =>
  z.string().max(max).regex(L.PLAIN_TEXT_PATTERN, "plain text: no markup, control characters, or surrounding whitespace");
/** Free text shown to customers: lines allowed, other control characters and markup refused. */
const messageText = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^<>\u0000-\u0009\u000B-\u001F\u007F]*$/, "text without markup or control characters (line breaks are allowed)");

const origin = z
  .string()
  .regex(AGENT_ORIGIN_PATTERN, "an origin such as https://shop.example (https; http only for localhost), no path or trailing slash")
  .superRefine((value, ctx) => {
    const port = /:([0-9]+)$/.exec(value.replace(/^[a-z]+:\/\//, ""))?.[1];
    if (port === undefined) return;
    const number = Number(port);
    if (number < 1 || number > 65_535) {
      ctx.addIssue({ code: "custom", message: `port ${port} is not between 1 and 65535`, params: { code: "origin_invalid" } });
    } else if ((value.startsWith("https:") && number === 443) || (value.startsWith("http:") && number === 80)) {
      ctx.addIssue({
        code: "custom",
        message: "leave out the default port: browsers send the origin without it, so this entry would never match",
        params: { code: "origin_invalid" },
      });
    }
  });

export const handoffSchema = z
  .strictObject({
    queue: z.string().regex(HANDOFF_QUEUE_PATTERN, "lowercase letters, digits and dashes, starting with a letter, at most 40 characters"),
    message: messageText(HANDOFF_MESSAGE_MAX).optional(),
  })
  .meta({
    id: "AgentHandoff",
    description:
      "Where the agent hands the conversation to your team: the team queue, and the message the customer is told.",
  });

/** A Twilio Content SID: HX and 32 hex digits. */
export const TWILIO_CONTENT_SID_PATTERN = /^HX[0-9a-fA-F]{32}$/;
/** Content API variables: keys of at most 16 characters (numbers or names), values of at most 255. */
export const TEMPLATE_VARIABLE_KEY_PATTERN = /^[A-Za-z0-9_]{1,16}$/;
export const TEMPLATE_VARIABLE_VALUE_MAX = 255;
export const TEMPLATE_VARIABLES_MAX = 20;

export const outsideWindowTemplateSchema = z
  .strictObject({
    contentSid: z.string().regex(TWILIO_CONTENT_SID_PATTERN, "a Twilio Content SID: HX followed by 32 hex digits"),
    variables: z
      .record(z.string().regex(TEMPLATE_VARIABLE_KEY_PATTERN, "a variable key: letters, digits or _, at most 16"), z.string().min(1).max(TEMPLATE_VARIABLE_VALUE_MAX))
      .refine((variables) => Object.keys(variables).length <= TEMPLATE_VARIABLES_MAX, { message: `at most ${TEMPLATE_VARIABLES_MAX} variables`, params: { code: "too_many" } })
      .optional(),
  })
  .meta({
    id: "OutsideWindowTemplate",
    description:
      "An approved WhatsApp template (Twilio Content Template Builder, approved by WhatsApp) sent instead of a reply that the 24-hour window refuses, so the customer can write back and reopen the window. variables fill its {{1}}, {{2}}… placeholders.",
  });

const channelShape = { handoff: handoffSchema.optional() };
export const webChannelSchema = z.strictObject(channelShape).meta({ description: "The website widget. Needs origins." });
export const whatsappChannelSchema = z
  .strictObject({ ...channelShape, outsideWindowTemplate: outsideWindowTemplateSchema.optional() })
  .meta({ description: "WhatsApp (through Twilio)." });
export const messengerChannelSchema = z.strictObject(channelShape).meta({ description: "Facebook Messenger." });
export const instagramChannelSchema = z.strictObject(channelShape).meta({ description: "Instagram direct messages." });

export const channelsSchema = z
  .strictObject({
    web: webChannelSchema.optional(),
    whatsapp: whatsappChannelSchema.optional(),
    messenger: messengerChannelSchema.optional(),
    instagram: instagramChannelSchema.optional(),
  })
  .superRefine((channels, ctx) => {
    if (!CHANNEL_KINDS.some((kind) => channels[kind] !== undefined)) {
      ctx.addIssue({ code: "custom", message: `at least one channel: ${CHANNEL_KINDS.join(", ")}`, params: { code: "channel_required" } });
    }
  })
  .meta({ description: "The channels the agent answers on, each with its optional handoff destination. At least one.", minProperties: 1 });

const levelSchema = z.enum(L.STEP_UP_LEVELS);
const claimValue = z.string().min(1).max(IDENTITY_CLAIM_VALUE_MAX);

const identityShape = {
  /** Checked against the token's iss when set. */
  issuer: claimValue.optional(),
  /** Checked against the token's aud (a string or an array containing it) when set. */
  audience: claimValue.optional(),
  maxTokenAgeSeconds: z.int().min(IDENTITY_TOKEN_AGE_MIN).max(IDENTITY_TOKEN_AGE_MAX).default(IDENTITY_TOKEN_AGE_DEFAULT),
  /** Maps the token's `acr` values to a level. A `level` claim of low, standard or high needs no mapping. */
  levels: z
    .record(claimValue, levelSchema)
    .refine((levels) => Object.keys(levels).length <= IDENTITY_LEVEL_MAPPINGS_MAX, {
      message: `at most ${IDENTITY_LEVEL_MAPPINGS_MAX} acr values`,
      params: { code: "too_many" },
    })
    .meta({ maxProperties: IDENTITY_LEVEL_MAPPINGS_MAX })
    .optional(),
  /** The level of a token that carries neither `acr` nor `level`. */
  defaultLevel: levelSchema.default("low"),
};

/** An EC P-256 public key as a JWK. A private key (d) is refused. */
export const ecPublicJwkSchema = z.strictObject({
  kty: z.literal("EC"),
  crv: z.literal("P-256"),
  x: z.string().regex(/^[A-Za-z0-9_-]{43}$/, "43 base64url characters"),
  y: z.string().regex(/^[A-Za-z0-9_-]{43}$/, "43 base64url characters"),
  kid: z.string().min(1).max(200).optional(),
  use: z.literal("sig").optional(),
  alg: z.literal("ES256").optional(),
});
export type EcPublicJwk = z.infer<typeof ecPublicJwkSchema>;

const PEM_PUBLIC_KEY_PATTERN = /^\s*-----BEGIN PUBLIC KEY-----\r?\n[A-Za-z0-9+/=\r\n]+-----END PUBLIC KEY-----\s*$/;

export const hs256IdentitySchema = z
  .strictObject({
    algorithm: z.literal("HS256"),
    /** The name of a workspace secret holding the shared key (at least 32 bytes). Never the key itself. */
    secret: z.string().regex(L.SECRET_NAME_PATTERN, "the name of a workspace secret, such as WIDGET_IDENTITY_SECRET"),
    ...identityShape,
  })
  .meta({ description: "Tokens signed with HMAC SHA-256 using a workspace secret named by secret." });

export const es256IdentitySchema = z
  .strictObject({
    algorithm: z.literal("ES256"),
    /** A PEM SPKI public key (-----BEGIN PUBLIC KEY-----). */
    publicKey: z
      .string()
      .max(4096)
      .regex(PEM_PUBLIC_KEY_PATTERN, "a PEM public key (-----BEGIN PUBLIC KEY-----); never a private key")
      .optional(),
    /** Inline JWKS; the token's kid picks the key (needed when there is more than one). */
    jwks: z.strictObject({ keys: z.array(ecPublicJwkSchema).min(1).max(IDENTITY_JWKS_KEYS_MAX) }).optional(),
    ...identityShape,
  })
  .superRefine((identity, ctx) => {
    if ((identity.publicKey === undefined) === (identity.jwks === undefined)) {
      ctx.addIssue({ code: "custom", message: "ES256 needs exactly one of publicKey or jwks", params: { code: "identity_key_required" } });
    }
    const kids = identity.jwks?.keys.map((key) => key.kid) ?? [];
    if (kids.length > 1 && kids.some((kid) => kid === undefined)) {
      ctx.addIssue({ code: "custom", path: ["jwks", "keys"], message: "with more than one key, every key needs a kid", params: { code: "identity_kid_required" } });
    }
    if (new Set(kids).size !== kids.length) {
      ctx.addIssue({ code: "custom", path: ["jwks", "keys"], message: "every kid must be different", params: { code: "identity_kid_duplicate" } });
    }
  })
  .meta({
    description: "Tokens signed with ECDSA P-256 SHA-256; Caplo holds only the public key (publicKey or jwks, exactly one).",
    // Exactly one of the two keys (each branch names its property, as strict validators ask).
    oneOf: [
      { required: ["publicKey"], properties: { publicKey: true } },
      { required: ["jwks"], properties: { jwks: true } },
    ],
  });

export const identitySchema = z
  .discriminatedUnion("algorithm", [hs256IdentitySchema, es256IdentitySchema])
  .meta({ description: "How the widget verifies the signed identity token your backend gives it. Never alg none." });

/** Starter prompts: tappable suggestions the widget shows before the visitor's first message. */
export const STARTERS_MAX = 4;
export const STARTER_MAX = 80;
export const WIDGET_NAME_MAX = 60;
/** A map tile source: an https URL template with {z}, {x} and {y}. */
export const MAP_TILES_PATTERN = /^https:\/\/[^\s<>"'{}]+(?:\{[zxy]\}[^\s<>"'{}]*){3}$/;

export const widgetSettingsSchema = z
  .strictObject({
    /** The agent's name in the widget's header (default: the chat's generic title). */
    name: plainText(WIDGET_NAME_MAX).min(1).optional(),
    /** The agent's avatar: an https image URL. */
    avatar: z.string().max(2048).regex(/^https:\/\/[^\s<>"']+$/, "an https URL of an image").optional(),
    starters: z
      .array(plainText(STARTER_MAX).min(1))
      .max(STARTERS_MAX)
      .optional()
      .meta({ description: `Up to ${STARTERS_MAX} tappable prompts shown before the visitor's first message; tapping one sends it.` }),
    /** Map tiles for the map layout (without them the map shows each place with a directions link). */
    mapTiles: z
      .strictObject({
        url: z.string().max(500).regex(MAP_TILES_PATTERN, "an https URL template with {z}, {x} and {y}, such as https://tile.openstreetmap.org/{z}/{x}/{y}.png"),
        attribution: plainText(200).min(1),
      })
      .optional(),
  })
  .meta({ description: "How the website widget presents the agent: its name, avatar, starter prompts and map tiles." });
export type WidgetSettings = z.output<typeof widgetSettingsSchema>;

const toolRef = z.string().regex(TOOL_REF_PATTERN, "package/tool, for example orders/get_order");

export const agentConfigSchema = z
  .strictObject({
    apiVersion: z.string().regex(L.API_VERSION_PATTERN, "v1, v1.0 or v1.0.0"),
    kind: z.literal(AGENT_KIND),
    name: z.string().regex(AGENT_NAME_PATTERN, "lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters"),
    description: z.string().max(AGENT_DESCRIPTION_MAX).optional(),
    instructions: z.string().trim().min(1, "instructions must not be empty").max(INSTRUCTIONS_MAX),
    model: z.string().regex(MODEL_REF_PATTERN, "provider/model, for example openai/gpt-4.1-mini").optional(),
    tools: z
      .array(toolRef)
      .max(AGENT_TOOLS_MAX)
      .default([])
      .superRefine((refs, ctx) => {
        const seen = new Map<string, number>();
        const modelNames = new Map<string, number>();
        refs.forEach((ref, index) => {
          const match = TOOL_REF_PATTERN.exec(ref);
          if (!match) return;
          const earlier = seen.get(ref);
          if (earlier !== undefined) {
            ctx.addIssue({ code: "custom", path: [index], message: `${ref} is already listed at tools[${earlier}]`, params: { code: "tool_duplicate" } });
            return;
          }
          seen.set(ref, index);
          const modelName = modelToolName(match[1]!, match[2]!);
          if (modelName.length > L.MODEL_TOOL_NAME_MAX) {
            ctx.addIssue({
              code: "custom",
              path: [index],
              message: `the model would see ${modelName} (${modelName.length} characters); at most ${L.MODEL_TOOL_NAME_MAX}`,
              params: { code: "tool_name_invalid" },
            });
          }
          const clash = modelNames.get(modelName);
          if (clash !== undefined) {
            ctx.addIssue({
              code: "custom",
              path: [index],
              message: `${ref} and tools[${clash}] both reach the model as ${modelName}`,
              params: { code: "tool_name_conflict" },
            });
          }
          modelNames.set(modelName, index);
        });
      })
      .meta({ description: "The tools the agent may use, as package/tool. The model sees each as <package>__<tool>.", uniqueItems: true }),
    origins: z
      .array(origin)
      .max(AGENT_ORIGINS_MAX)
      .default([])
      .superRefine((origins, ctx) => {
        origins.forEach((value, index) => {
          if (origins.indexOf(value) !== index) {
            ctx.addIssue({ code: "custom", path: [index], message: `${value} is listed twice`, params: { code: "origin_duplicate" } });
          }
        });
      })
      .meta({ description: "Website origins the widget may be embedded on (exact match of the browser's Origin).", uniqueItems: true }),
    channels: channelsSchema,
    identity: identitySchema.optional(),
    greeting: messageText(GREETING_MAX).optional(),
    widget: widgetSettingsSchema.optional(),
    locale: z.string().max(LOCALE_MAX).regex(LOCALE_PATTERN, "a language tag such as en, sl or pt-BR").default(DEFAULT_LOCALE),
    timeZone: z
      .string()
      .max(64)
      .refine(isTimeZone, { message: "an IANA time zone such as Europe/Ljubljana, America/New_York or UTC", params: { code: "value_invalid" } })
      .optional()
      .meta({ description: "The IANA time zone times are written in for customers on messaging apps (UTC when absent)." }),
    contact: plainText(CONTACT_MAX)
      .min(1)
      .optional()
      .meta({ description: "How customers reach a person where a messaging channel has no handoff destination, e.g. call +386 1 234 5678 or write to help@shop.example." }),
  })
  .superRefine((agent, ctx) => {
    if (agent.channels.web !== undefined && agent.origins.length === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["origins"],
        message: "the web channel needs at least one allowed origin, such as https://shop.example",
        params: { code: "origins_required" },
      });
    }
  })
  .meta({ title: "agent.yaml (agent)", description: "A Caplo agent: instructions, tools, channels and identity settings." });

/** Whether `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export type AgentConfig = z.output<typeof agentConfigSchema>;
export type AgentConfigInput = z.input<typeof agentConfigSchema>;
export type IdentitySettings = z.output<typeof identitySchema>;
export type Handoff = z.output<typeof handoffSchema>;
export type AgentChannels = z.output<typeof channelsSchema>;

/** A problem in an agent file or a release, at a path written as caplo.yaml errors write it: tools[2]. */
export type AgentIssue = { code: string; path: string; message: string; /** 1-based line in agent.yaml, when known. */ line?: number };

/** Finds the line of a value in the source text, for located errors (the YAML reader supplies one). */
export type LineLocator = (path: readonly PropertyKey[]) => number | undefined;

/** Turn zod issues into stable `{ code, path, message }` values, with lines when a locator is given. */
export function agentIssues(error: z.ZodError, input: unknown, locate?: LineLocator): AgentIssue[] {
  const at = (path: readonly PropertyKey[]) => {
    const line = locate?.(path);
    return line === undefined ? {} : { line };
  };
  const issues: AgentIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const path = [...issue.path, key];
        issues.push({ code: "field_unknown", path: formatPath(path), message: `unknown field "${key}": other fields are refused`, ...at(path) });
      }
      continue;
    }
    const code = issue.code === "invalid_type" && valueAt(input, issue.path) === undefined ? "field_required" : issueCode(issue);
    const message = code === "field_required" ? `required: ${issue.message.replace(/^Invalid input: /, "")}` : issue.message;
    issues.push({ code, path: formatPath(issue.path), message, ...at(issue.path) });
  }
  return issues;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current = root;
  for (const segment of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

function issueCode(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "custom": {
      const code = (issue.params as { code?: unknown } | undefined)?.code;
      return typeof code === "string" ? code : "value_invalid";
    }
    case "invalid_type":
      return "type_invalid";
    case "invalid_format":
      return "pattern_mismatch";
    case "too_big":
      return issue.origin === "array" ? "too_many" : issue.origin === "string" ? "too_long" : "out_of_range";
    case "too_small":
      return issue.origin === "array" ? "too_few" : issue.origin === "string" ? "too_short" : "out_of_range";
    case "invalid_union":
      return "variant_invalid";
    default:
      return "value_invalid";
  }
}

export type AgentParseResult = { ok: true; agent: AgentConfig } | { ok: false; issues: AgentIssue[] };

/** Parse an already-decoded agent.yaml document (unknown in, AgentConfig out). */
export function parseAgentConfig(value: unknown, locate?: LineLocator): AgentParseResult {
  const result = agentConfigSchema.safeParse(value);
  return result.success ? { ok: true, agent: result.data } : { ok: false, issues: agentIssues(result.error, value, locate) };
}

/** One tool of a release: the frozen definition the model sees and the policy the engine enforces. */
export const releaseToolSchema = z.object({
  /** As the agent lists it: `package/tool`. */
  ref: z.string().regex(TOOL_REF_PATTERN),
  package: z.string(),
  tool: z.string(),
  /** `<package>__<tool>`, at most 64 characters. */
  modelName: z.string().max(L.MODEL_TOOL_NAME_MAX),
  packageVersionId: z.string(),
  description: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
  outputSchema: z.record(z.string(), z.unknown()).optional(),
  policy: toolPolicySchema,
  hasStatus: z.boolean(),
});
export type ReleaseTool = z.infer<typeof releaseToolSchema>;

/** An immutable agent release: the agent config and the exact package versions its tools come from. */
export const releaseSchema = z.object({
  /** `<agent>@sha256:<hex>`: the agent's name and the content hash. */
  id: z.string().regex(/^[a-z][a-z0-9-]{1,39}@sha256:[0-9a-f]{64}$/),
  agent: z.string().regex(AGENT_NAME_PATTERN),
  /** sha256 hex of the canonical JSON of config, pinned package version ids and tools. */
  contentHash: z.string().regex(/^[0-9a-f]{64}$/),
  config: agentConfigSchema,
  /** The package versions the tools are pinned to, one per package, whole (what the runner loads). */
  packages: z.array(packageVersionSchema),
  tools: z.array(releaseToolSchema),
  /** When this content was first published (not part of the hash). */
  publishedAt: z.string(),
});
export type Release = z.infer<typeof releaseSchema>;
