// `caplo serve`: its flags and environment into the composition root's options (server/src/app/server.ts
// starts and stops the server), and `--check-channels`.
import { hostname } from "node:os";
import type { Release } from "@caplo/shared";
import { FileReleaseStore } from "../agents/releaseStore.ts";
import { isPostgres, readServeChannels, startServer, type ServeError, type ServeOptions } from "../app/server.ts";
import { webhookUrls } from "../channels/channelSetup.ts";
import { uniqueNodeId } from "../cluster/clusterNode.ts";
import { parseSetting } from "../config/index.ts";
import { parseTeamMembers } from "../gateway/teamMembers.ts";

// The server's start is the composition root's; these names stay for the tests that start servers.
export { startServer as startServe, type RunningServer, type ServeError, type ServeOptions } from "../app/server.ts";

export const help = `caplo serve [options]

Starts the Caplo server: the widget's WebSocket at /v1/ws, the widget's files (/widget.js, /widget/...),
/schemas/*.json, /healthz, /readyz and the team API (/v1/team/...), with each agent's latest release.

Options (each has an environment variable; a flag wins):
  --port N            port to listen on (CAPLO_PORT, default 8080; 0 picks a free one)
  --host ADDR         address to listen on (CAPLO_HOST, default 127.0.0.1)
  --db PATH|URL       the store: a SQLite file, or a postgres:// URL (CAPLO_DATABASE_URL, else CAPLO_DB,
                      default .caplo/caplo.db)
  --releases DIR      where \`caplo agent publish\` keeps releases (CAPLO_RELEASES_DIR, default .caplo/releases)
  --agent NAME        serve this agent's latest release; repeat for more (CAPLO_AGENTS, comma-separated;
                      required)
  --script FILE       rules for the scripted model, JSON (CAPLO_SCRIPT); used when no OpenAI-compatible
                      model is configured (OPENAI_API_KEY / OPENAI_BASE_URL / CAPLO_MODEL)
  --widget-dir DIR    the widget's build (CAPLO_WIDGET_DIR, default widget/dist)
  --check-channels    check the messaging channels' settings and agents, print the webhook URLs to enter
                      on each platform, and exit without starting (0: ready, 1: a problem, printed)

Environment only:
  CAPLO_TEAM_MEMBERS  the team API's members, each with a token of their own: name=sha256:<hex of the
                      token>, comma-separated (caplo team token NAME makes one); without any the team
                      API answers 503. The old shared CAPLO_TEAM_TOKEN is refused.
  CAPLO_NODE_ID       this node's id; with a postgres:// store default <host>-<pid>-<random> (unique per
                      process), with SQLite the host name (its restart recovers its own running writes)
  CAPLO_NODE_LEASE_MS with a postgres:// store: this node's liveness lease (default 15000, 1000 to 600000);
                      a node silent this long is taken over by another, which recovers its running writes
  CAPLO_REDIS_URL     share conversation events between nodes through Redis (else PostgreSQL
                      LISTEN/NOTIFY with a postgres:// store, else in-process)
  CAPLO_BUS_POLL_MS   how often a degraded bus reads the store instead (default 1000)
  CAPLO_WEBHOOKS_PER_SECOND  webhook requests accepted per second per platform on this node (default 50,
                      burst twice that); more get 429 with Retry-After (Meta retries them; Twilio only
                      with connection overrides on the webhook URL, docs/operators-multi-node.md)
  CAPLO_SECRET_<NAME> the value of workspace secret NAME (tool secrets, HS256 identity keys)
  CAPLO_TWILIO_*, CAPLO_META_*, CAPLO_INSTAGRAM_*, CAPLO_MESSENGER_*  messaging channels
                      (docs/channels.md); webhooks at /webhooks/<platform>; CAPLO_<PLATFORM>_AGENTS maps
                      each number/page/account to an agent, CAPLO_<PLATFORM>_AGENT for the rest (default:
                      the first)
  CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK=1  local development only: remote MCP versions may be reached over
                      http and at loopback or private addresses (never set it in production)
  CAPLO_SANDBOX=weak  refused: the weak sandbox is for caplo tool test only; serve runs packages only in
                      the isolated one (Linux namespaces, as root) and says which at start
  CAPLO_PUBLIC_URL    this server's public address as browsers reach it: the widget app's sockets come from
                      its origin (besides the address serve listens on; the Host header is never trusted),
                      signed webhook URLs, and files sent to messaging customers (https; without it a file
                      is not sent and the customer is told)
  CAPLO_TRUSTED_PROXIES  proxies (addresses or CIDR ranges, comma-separated) whose X-Forwarded-For names
                      the widget client's address for the per-address limits (default none: the socket's peer)
  CAPLO_WIDGET_SOCKETS_PER_ADDRESS  open widget sockets per client address on this node (default 30;
                      an IPv6 client counts by its /64); more are told too_many_connections and closed (1013)
  CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE  new widget conversations per client address per minute on this
                      node (default 20); more are told too_many_conversations and closed (1013)
  CAPLO_WIDGET_HELLO_TIMEOUT_SECONDS  a widget socket that says no hello this long is closed (4408; default 10)
  CAPLO_CHANNELS_DB   the channels' SQLite state (default: channels.db beside --db); with a postgres:// store
                      the channels' state is in PostgreSQL, shared by every node
  CAPLO_STATUS_CHECK_BASE_MS  gap before a write's first status check (default 5000; each next doubles)
  CAPLO_PROPOSAL_TTL_SECONDS  how long a proposed write waits for the customer's decision before it expires
                      (default 3600, 60 to 86400)
  CAPLO_TRANSCRIPT_BUDGET_CHARS  characters of the conversation sent to the model per step at most
                      (default 48000, 2000 to 2000000; the instructions always go in full)
  CAPLO_INVOCATION_LOG  file keeping each tool call's record and log lines (default invocations.jsonl
                      beside --db; with postgres://, .caplo/invocations.jsonl on each node); read it with
                      \`caplo tool logs --db PATH\`. CAPLO_INVOCATION_LOG_MAX_MB bounds it (default 64)
  CAPLO_FILE_RETENTION_DAYS   days a delivered file's bytes are kept (default 30, 1 to 3650); after that a
                      download answers 410 file_expired, and the conversation still shows the file
  CAPLO_FILE_SCAN_CLAMD       clamd's Unix socket (INSTREAM): every file a tool returns is scanned after the
                      built-in checks; a threat or a scanner error means it is not delivered
  CAPLO_FILE_SCAN_COMMAND     instead, an executable given each file on stdin (exit 0 clean, 1 threat)
  CAPLO_HANDOFF_WEBHOOK_URL    where a handoff notice goes when the agent hands a conversation to its
                      queue (https; http only to this machine); CAPLO_HANDOFF_WEBHOOK_URL_<QUEUE> for one
                      queue; signed with CAPLO_HANDOFF_WEBHOOK_SECRET (at least 32 characters)
`;

/** Flags and environment into options, or the first problem. */
export function parseServeArgs(args: string[], env: Record<string, string | undefined>): { ok: true; options: ServeOptions } | { ok: false; error: ServeError } {
  const values: Record<string, string[]> = {};
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === "--check-channels") {
      (values["check-channels"] ??= []).push("1");
      continue;
    }
    const match = /^--(port|host|db|releases|agent|script|widget-dir)(?:=(.*))?$/.exec(arg);
    if (!match) return { ok: false, error: { code: "option_unknown", path: arg, message: `unknown option ${arg} (see caplo serve --help)` } };
    const value = match[2] ?? args[++index];
    if (value === undefined) return { ok: false, error: { code: "option_value_missing", path: arg, message: `${arg} needs a value` } };
    (values[match[1]!] ??= []).push(value);
  }
  const last = (name: string) => values[name]?.at(-1);
  // The weak sandbox (no namespaces: raw network, links followed) is for a tool author's caplo tool test.
  if (env.CAPLO_SANDBOX === "weak") {
    return { ok: false, error: { code: "sandbox_weak_refused", path: "CAPLO_SANDBOX", message: "CAPLO_SANDBOX=weak is for caplo tool test only: caplo serve runs packages only in the isolated sandbox (Linux namespaces, as root); unset it" } };
  }
  // What the options need now is read here by its setting's schema (a flag's value by the same one); the
  // rest of the configuration is read once when the server starts (startServe).
  const flagPort = last("port");
  const port = parseSetting("CAPLO_PORT", flagPort ?? env.CAPLO_PORT, flagPort === undefined ? "CAPLO_PORT" : "--port");
  if (!port.ok) return { ok: false, error: { ...port.error, code: "port_invalid" } };
  const agents = values.agent ?? parseSetting("CAPLO_AGENTS", env.CAPLO_AGENTS);
  const names = Array.isArray(agents) ? agents : agents.ok ? (agents.value ?? []) : [];
  if (names.length === 0) return { ok: false, error: { code: "agent_required", path: "--agent", message: "name at least one agent to serve (--agent NAME or CAPLO_AGENTS)" } };
  const settings = (["CAPLO_STATUS_CHECK_BASE_MS", "CAPLO_NODE_LEASE_MS", "CAPLO_BUS_POLL_MS", "CAPLO_WEBHOOKS_PER_SECOND", "CAPLO_TEAM_TOKEN"] as const).map((name) => parseSetting(name, env[name]));
  const settingError = settings.find((setting) => !setting.ok);
  if (settingError && !settingError.ok) return { ok: false, error: settingError.error };
  const [statusCheckBaseMs, nodeLeaseMs, busPollMs, webhooksPerSecond] = settings.map((setting) => (setting.ok ? setting.value : undefined)) as (number | undefined)[];
  const db = last("db") ?? (env.CAPLO_DATABASE_URL || undefined) ?? (env.CAPLO_DB || ".caplo/caplo.db");
  const team = parseTeamMembers(env.CAPLO_TEAM_MEMBERS);
  if (!team.ok) return { ok: false, error: team.error };
  const script = last("script") ?? env.CAPLO_SCRIPT;
  const widgetDir = last("widget-dir") ?? env.CAPLO_WIDGET_DIR;
  return {
    ok: true,
    options: {
      port: port.value ?? 8080,
      host: last("host") ?? (env.CAPLO_HOST || "127.0.0.1"),
      db,
      releasesDir: last("releases") ?? (env.CAPLO_RELEASES_DIR || ".caplo/releases"),
      agents: names,
      ...(script && { script }),
      ...(widgetDir && { widgetDir }),
      ...(values["check-channels"] && { checkChannels: true }),
      ...(team.members.length > 0 && { teamMembers: team.members }),
      // On PostgreSQL a restarted node's old running writes are recovered by liveness takeover, so a fresh id
      // per process is safe; on SQLite (one node per file) a stable id lets the restart recover them at once.
      nodeId: env.CAPLO_NODE_ID || (isPostgres(db) ? uniqueNodeId() : hostname()),
      ...(nodeLeaseMs !== undefined && { nodeLeaseMs }),
      ...(busPollMs !== undefined && { busPollMs }),
      ...(webhooksPerSecond !== undefined && { webhooksPerSecond }),
      ...(statusCheckBaseMs !== undefined && { statusCheckBaseMs }),
      env,
    },
  };
}

export async function run(args: string[]): Promise<number> {
  const parsed = parseServeArgs(args, process.env);
  if (!parsed.ok) {
    console.error(`caplo serve: ${parsed.error.code} at ${parsed.error.path}: ${parsed.error.message}`);
    return 2;
  }
  if (parsed.options.checkChannels) return checkChannels(parsed.options);
  const started = await startServer(parsed.options);
  if (!started.ok) {
    console.error(`caplo serve: ${started.error.code}${started.error.path ? ` at ${started.error.path}` : ""}: ${started.error.message}`);
    return 1;
  }
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await started.server.close();
  return 0;
}

/**
 * `caplo serve --check-channels`: reads the releases and the channel variables as a start would, prints
 * every problem (variable, rule, example) or the webhook URL to enter on each platform, and starts nothing.
 */
export async function checkChannels(options: ServeOptions, out: (line: string) => void = console.log): Promise<number> {
  const releaseStore = new FileReleaseStore(options.releasesDir);
  const releases: Release[] = [];
  for (const agent of options.agents) {
    const release = await releaseStore.latest(agent).catch(() => undefined);
    if (!release) {
      out(`caplo serve --check-channels: release_not_found at ${agent}: no published release of agent ${agent} in ${options.releasesDir} (caplo agent publish)`);
      return 1;
    }
    releases.push(release);
  }
  const read = readServeChannels(options, releases);
  if (!read.ok) {
    for (const error of read.errors) out(`caplo serve --check-channels: ${error.code} at ${error.path}: ${error.message}`);
    return 1;
  }
  const webhooks = webhookUrls(read.settings);
  if (webhooks.length === 0) {
    out("caplo serve --check-channels: no messaging channel is configured (set CAPLO_TWILIO_ACCOUNT_SID, CAPLO_MESSENGER_PAGE_TOKEN or CAPLO_INSTAGRAM_TOKEN and the rest; docs/channels.md)");
    return 0;
  }
  out(`channels ready: ${webhooks.map((w) => w.platform).join(", ")}. Enter these webhook URLs:`);
  for (const webhook of webhooks) out(`  ${webhook.platform}: ${webhook.url}\n    in ${webhook.where}`);
  return 0;
}
