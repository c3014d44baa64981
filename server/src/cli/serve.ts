// `caplo serve`: start the gateway (WebSocket, widget, schemas, team API) with the engine, the sandboxed
// runner and the store (SQLite file by default, PostgreSQL by URL), serving each agent's latest release.
import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import { z } from "zod";
import type { Release } from "@caplo/shared";
import type { IncomingMessage, ServerResponse } from "node:http";
import { FileReleaseStore } from "../agents/releaseStore.ts";
import { runnerSettings } from "../app/runnerSettings.ts";
import { envSecrets, parseSetting, readConfig } from "../config/index.ts";
import { openEventBus } from "../bus/index.ts";
import { channelAgentProblems, mountChannels, readChannelSettings, webhookUrls, type ChannelSettings, type ChannelSetupError } from "../channels/channelSetup.ts";
import type { ChannelAgentConfig } from "../channels/ports.ts";
import { startClusterNode, uniqueNodeId, type ClusterNode } from "../cluster/clusterNode.ts";
import { PostgresInboxStore } from "../cluster/postgresInboxStore.ts";
import { Engine } from "../engine/engine.ts";
import { DAY_MS } from "../engine/fileRetention.ts";
import { HandoffDelivery, readHandoffWebhooks } from "../engine/handoff.ts";
import { StaticReleases, type AgentRelease } from "../engine/release.ts";
import { Gateway } from "../gateway/gateway.ts";
import { readWidgetSettings } from "../gateway/settings.ts";
import { parseTeamMembers, type TeamMember } from "../gateway/teamMembers.ts";
import { describeModelConfig, modelFromEnv } from "../model/config.ts";
import type { Model } from "../model/model.ts";
import { ScriptedModel, type ScriptedRule } from "../model/scripted.ts";
import type { ToolRunner } from "../runner/api.ts";
import { JsonlLogStore, MemoryLogStore, invocationLogFile, type LogStore } from "../runner/logStore.ts";
import { EvalService } from "../eval/evalService.ts";
import { openStore } from "../store/index.ts";
import type { Store } from "../store/store.ts";

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
  CAPLO_HANDOFF_WEBHOOK_URL    where a handoff notice goes when the agent hands a conversation to its
                      queue (https; http only to this machine); CAPLO_HANDOFF_WEBHOOK_URL_<QUEUE> for one
                      queue; signed with CAPLO_HANDOFF_WEBHOOK_SECRET (at least 32 characters)
`;

export type ServeOptions = {
  port: number;
  host: string;
  db: string;
  releasesDir: string;
  agents: string[];
  script?: string;
  widgetDir?: string;
  teamMembers?: TeamMember[];
  nodeId: string;
  /** Liveness lease of this node (PostgreSQL store only). */
  nodeLeaseMs?: number;
  busPollMs?: number;
  /** Webhook requests per second per platform on this node; default 50. */
  webhooksPerSecond?: number;
  statusCheckBaseMs?: number;
  env: Record<string, string | undefined>;
  /** --check-channels: check the channels' settings and print their webhook URLs instead of starting. */
  checkChannels?: boolean;
  /** Tests may pass a runner; by default the sandboxed runner. */
  runner?: ToolRunner;
};

export type ServeError = { code: string; path: string; message: string };

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

/** The agent a platform without a per-account map is answered by: CAPLO_<PLATFORM>_AGENT, else the first --agent. */
function serverDefaultAgent(options: ServeOptions, platform: string): string {
  return options.env[`CAPLO_${platform.toUpperCase()}_AGENT`] ?? options.agents[0]!;
}

/** The channels' settings, and every agent that would answer on them served and listing the channel. */
export function readServeChannels(options: ServeOptions, releases: Array<{ agent: string; config: ChannelAgentConfig }>): { ok: true; settings: ChannelSettings } | { ok: false; errors: ChannelSetupError[] } {
  const read = readChannelSettings(options.env);
  if (!read.ok) return read;
  const problems = channelAgentProblems(read.settings, (agent) => releases.find((release) => release.agent === agent)?.config, {
    agent: (platform) => serverDefaultAgent(options, platform),
    variable: (platform) => (options.env[`CAPLO_${platform.toUpperCase()}_AGENT`] !== undefined ? `CAPLO_${platform.toUpperCase()}_AGENT` : "--agent"),
  });
  return problems.length ? { ok: false, errors: problems } : read;
}

/** A failure thrown during start, as serve's coded error (its own code and path when it has them). */
function startError(error: unknown, fallbackCode: string): ServeError {
  const typed = error as { code?: string; path?: string; message?: string };
  return { code: typed.code ?? fallbackCode, path: typed.path ?? "", message: typed.message ?? String(error) };
}

const isPostgres = (db: string) => /^postgres(ql)?:\/\//.test(db);

/**
 * Webhook routes behind a token bucket per route (rate per second, burst twice that): a flood from one
 * platform (or someone replaying signed requests) gets 429 with Retry-After before any body is read, so
 * the gateway's sockets and the store stay free for everyone else. Meta retries a 429; Twilio does not
 * unless the webhook URL asks for retries (connection overrides), so set the rate above real traffic.
 */
export function limitRoutes(gateway: { route(method: string, path: string, handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): void }, perSecond: number) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    route(method: string, path: string, handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): void {
      gateway.route(method, path, (req, res) => {
        const now = Date.now();
        const bucket = buckets.get(path) ?? { tokens: perSecond * 2, at: now };
        bucket.tokens = Math.min(perSecond * 2, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
        bucket.at = now;
        buckets.set(path, bucket);
        if (bucket.tokens < 1) {
          req.resume(); // drain the body unread
          res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
          res.end(JSON.stringify({ error: { code: "rate_limited", path: "", message: `at most ${perSecond} webhook requests per second on this node; retry later` } }));
          return;
        }
        bucket.tokens -= 1;
        return handler(req, res);
      });
    },
  };
}

const patternSchema = z.union([z.string().min(1), z.strictObject({ regex: z.string().min(1), flags: z.string().regex(/^[imsu]*$/).optional() })]);
const scriptSchema = z.array(
  z.strictObject({
    when: patternSchema.optional(),
    whenNote: patternSchema.optional(),
    replies: z.array(
      z.strictObject({
        text: z.string().optional(),
        toolCalls: z.array(z.strictObject({ name: z.string().min(1), args: z.record(z.string(), z.unknown()).optional() })).optional(),
      }),
    ),
  }),
);

/** Scripted-model rules from a JSON file: `when`/`whenNote` are substrings or `{ "regex": "...", "flags": "i" }`. */
export async function loadScript(file: string): Promise<{ ok: true; rules: ScriptedRule[] } | { ok: false; error: ServeError }> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    return { ok: false, error: { code: "script_unreadable", path: file, message: `cannot read the script: ${error instanceof Error ? error.message : String(error)}` } };
  }
  const parsed = scriptSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, error: { code: "script_invalid", path: issue.path.join("."), message: issue.message } };
  }
  const pattern = (value: z.infer<typeof patternSchema> | undefined) => (value === undefined ? undefined : typeof value === "string" ? value : new RegExp(value.regex, value.flags));
  return {
    ok: true,
    rules: parsed.data.map((rule) => ({
      ...(rule.when !== undefined && { when: pattern(rule.when) }),
      ...(rule.whenNote !== undefined && { whenNote: pattern(rule.whenNote) }),
      replies: rule.replies.map((reply) => ({ ...(reply.text !== undefined && { text: reply.text }), ...(reply.toolCalls && { toolCalls: reply.toolCalls }) })),
    })),
  };
}

export type RunningServer = { gateway: Gateway; engine: Engine; store: Store; url: string; close: () => Promise<void> };

/** Start everything; the caller closes it. */
export async function startServe(options: ServeOptions, log: (line: string) => void = console.log): Promise<{ ok: true; server: RunningServer } | { ok: false; error: ServeError }> {
  // Every setting is read and checked once, here; nothing below reads the environment.
  const read = readConfig(options.env);
  for (const warning of read.warnings) log(`warn: ${warning.message}`);
  if (!read.ok) return { ok: false, error: read.errors[0]! };
  const config = read.config;
  const releaseStore = new FileReleaseStore(options.releasesDir);
  const releases: AgentRelease[] = [];
  for (const agent of options.agents) {
    const release: Release | undefined = await releaseStore.latest(agent).catch(() => undefined);
    if (!release) return { ok: false, error: { code: "release_not_found", path: agent, message: `no published release of agent ${agent} in ${options.releasesDir} (caplo agent publish)` } };
    // Each pinned package version runs from its frozen copy kept with the releases (checked at load).
    releases.push(releaseStore.withKeptVersions(release));
  }
  // One model per agent: its `model:` override, else the environment's provider, else the scripted model.
  const models = new Map<string, Model>();
  try {
    const script = options.script ? await loadScript(options.script) : { ok: true as const, rules: [] };
    if (!script.ok) return script;
    const scripted = new ScriptedModel(script.rules, { id: "serve", fallback: "This server runs the offline scripted model; configure OPENAI_API_KEY or OPENAI_BASE_URL for a real one." });
    for (const release of releases) models.set(release.id, modelFromEnv(config.source, release.config.model) ?? scripted);
  } catch (error) {
    const typed = error as { code?: string; path?: string; message?: string };
    return { ok: false, error: { code: typed.code ?? "model_config_invalid", path: typed.path ?? "", message: typed.message ?? String(error) } };
  }
  const invocationLog = { file: invocationLogFile(options.db, config.CAPLO_INVOCATION_LOG), maxBytes: config.CAPLO_INVOCATION_LOG_MAX_MB * 1024 * 1024 };
  const widget = readWidgetSettings(config.source);
  if (!widget.ok) return widget;
  const handoffWebhooks = readHandoffWebhooks(config.source);
  if (!handoffWebhooks.ok) return handoffWebhooks;
  const store = await openStore(options.db, { synchronous: config.CAPLO_SQLITE_SYNCHRONOUS });
  // Handoff notices to the team's webhook: stored with the handoff, sent and retried in the background.
  const handoffDelivery = handoffWebhooks.webhooks
    ? new HandoffDelivery({ store, webhooks: handoffWebhooks.webhooks, log: (level, message, data) => log(`${level}: ${message}${data ? ` ${JSON.stringify(data)}` : ""}`) })
    : undefined;
  const busResult = await openEventBus({
    ...(config.CAPLO_REDIS_URL && { redisUrl: config.CAPLO_REDIS_URL }),
    ...(isPostgres(options.db) && { databaseUrl: options.db }),
    ...(options.busPollMs !== undefined && { pollIntervalMs: options.busPollMs }),
    onHealthChange: (health) => log(`${health.state === "healthy" ? "info" : "warn"}: event bus ${health.state}${health.reason ? `: ${health.reason}` : ""}`),
    latestSeqs: async (ids) => {
      const seqs = new Map<string, number>();
      for (const id of ids) {
        const conversation = await store.getConversation(id);
        if (conversation) seqs.set(id, conversation.lastSeq);
      }
      return seqs;
    },
  });
  // A configured bus that cannot start is an error: an in-process bus would silently cut this node off
  // from the others' events.
  if (!busResult.ok) {
    await store.close();
    return { ok: false, error: busResult.error };
  }
  const bus = busResult.bus;
  let runner: ToolRunner;
  if (options.runner) runner = options.runner;
  else {
    const { CaploToolRunner } = await import("../runner/toolRunner.ts");
    // Every invocation's record (log lines, secrets redacted) in a bounded file: `caplo tool logs --db DB`.
    const logStore = new JsonlLogStore(invocationLog.file, { maxBytes: invocationLog.maxBytes, onError: (error) => log(`invocation log not written: ${error.message}`) });
    const sandboxed = new CaploToolRunner({ ...runnerSettings(config), logStore });
    log(sandboxed.sandboxNote);
    log(`invocation logs: ${logStore.file} (at most ${invocationLog.maxBytes / 1024 / 1024} MiB)`);
    runner = sandboxed;
  }
  // Secrets' values are read when a call needs them (a changed value is used without a restart).
  const secrets = envSecrets(options.env);
  const engine = new Engine({
    store,
    runner,
    model: (release) => models.get(release.id)!,
    releases: new StaticReleases(releases),
    bus,
    nodeId: options.nodeId,
    ...(options.statusCheckBaseMs !== undefined && { statusCheckBaseMs: options.statusCheckBaseMs }),
    fileRetentionMs: config.CAPLO_FILE_RETENTION_DAYS * DAY_MS,
    proposalTtlMs: config.CAPLO_PROPOSAL_TTL_SECONDS * 1000,
    transcriptBudgetChars: config.CAPLO_TRANSCRIPT_BUDGET_CHARS,
    ...(handoffDelivery && { handoffNotifier: handoffDelivery }),
    secrets: (packageVersionId) => {
      const version = releases.flatMap((release) => release.packages).find((candidate) => candidate.id === packageVersionId);
      return secrets.values(version?.manifest.secrets ?? []);
    },
    log: (level, message, data) => log(`${level}: ${message}${data ? ` ${JSON.stringify(data)}` : ""}`),
  });
  let cluster: ClusterNode | undefined;
  /** Stops what this start has started so far, last first: a start that fails part way leaves nothing running. */
  const stopStarted = async () => {
    await cluster?.stop();
    await handoffDelivery?.stop();
    await engine.stop();
    await runner.close();
    await store.close();
    await bus.close();
  };
  const schema = (store as { schema?: string }).schema ?? "public";
  try {
    await engine.start();
    handoffDelivery?.start();
    // Several nodes on one PostgreSQL: a liveness lease, and takeover of nodes that stop renewing theirs.
    if (isPostgres(options.db)) {
      cluster = await startClusterNode({
        databaseUrl: options.db,
        schema,
        nodeId: options.nodeId,
        ...(options.nodeLeaseMs !== undefined && { leaseMs: options.nodeLeaseMs }),
        recover: (lostNodeId) => engine.recover(lostNodeId),
        log: (level, message, data) => log(`${level}: ${message}${data ? ` ${JSON.stringify(data)}` : ""}`),
      });
      log(`cluster: node ${options.nodeId}, liveness lease ${cluster.leaseMs} ms`);
    }
  } catch (error) {
    await stopStarted();
    return { ok: false, error: startError(error, "start_failed") };
  }
  // Evaluations from the team API: the served releases' cases and tool versions' fixtures, on this runner,
  // each eval run in stores of its own (never this server's), writes never run.
  const evals = new EvalService({
    releases: new StaticReleases(releases),
    runner,
    logStore: (runner as { logStore?: LogStore }).logStore ?? new MemoryLogStore(),
    modelFor: (release) => models.get(release.id)!,
    secret: secrets.get,
  });
  const gateway = new Gateway({
    engine,
    evals,
    releases: new StaticReleases(releases),
    ...(options.teamMembers && { teamMembers: options.teamMembers }),
    ...(options.widgetDir && { widgetDir: options.widgetDir }),
    secrets: secrets.get,
    log: (level, message, data) => log(`${level}: ${message}${data ? ` ${JSON.stringify(data)}` : ""}`),
    publicOrigins: widget.settings.publicOrigins,
    trustedProxies: widget.settings.trustedProxies,
    addressLimits: widget.settings.addressLimits,
    helloTimeoutMs: widget.settings.helloTimeoutMs,
  });
  // Messaging channels configured by environment (docs/channels.md): their webhooks mount on this gateway.
  const channelSettings = readServeChannels(options, releases);
  if (!channelSettings.ok) {
    await stopStarted();
    const first = channelSettings.errors[0]!;
    return { ok: false, error: { code: first.code, path: first.path, message: channelSettings.errors.map((error) => error.message).join("; ") } };
  }
  const channelsOn = Object.keys(channelSettings.settings).length > 0;
  // On PostgreSQL the channels' state is shared by the nodes: each webhook event is processed by one node
  // and a customer keeps one conversation whichever node their messages reach.
  let sharedChannelState: PostgresInboxStore | undefined;
  let channels: Awaited<ReturnType<typeof mountChannels>> | undefined;
  try {
    sharedChannelState =
      channelsOn && isPostgres(options.db)
        ? await PostgresInboxStore.open({ connectionString: options.db, schema, nodeId: options.nodeId })
        : undefined;
    channels = !channelsOn
      ? undefined
      : await mountChannels({
          ...(sharedChannelState && { store: sharedChannelState }),
          settings: channelSettings.settings,
          engine,
          gateway: limitRoutes(gateway, options.webhooksPerSecond ?? 50),
          agentFor: (platform) => serverDefaultAgent(options, platform),
          agentConfig: (agent) => releases.find((release) => release.agent === agent)?.config,
          file: config.CAPLO_CHANNELS_DB ?? (isPostgres(options.db) ? ".caplo/channels.db" : join(dirname(options.db), "channels.db")),
          synchronous: config.CAPLO_SQLITE_SYNCHRONOUS,
        });
  } catch (error) {
    try {
      sharedChannelState?.close();
    } catch {
      // already unusable
    }
    await stopStarted();
    const coded = startError(error, "channels_unavailable");
    return { ok: false, error: { ...coded, message: `the messaging channels could not start: ${coded.message}` } };
  }
  if (channels) {
    log(`channels: ${channels.platforms.join(", ")} (webhooks at /webhooks/<platform>)`);
    for (const webhook of webhookUrls(channelSettings.settings)) log(`  ${webhook.platform} webhook: ${webhook.url}`);
  }
  const address = await gateway.listen(options.port, options.host);
  const url = `http://${address.address.includes(":") ? `[${address.address}]` : address.address}:${address.port}`;
  log(`caplo serve: ${url} (store: ${store.kind}, ${describeModelConfig(config.source)}, agents: ${releases.map((release) => release.id).join(", ")})`);
  if (!options.teamMembers) log("team API disabled: no team members (CAPLO_TEAM_MEMBERS)");
  log(`widget app origins: ${gateway.origins.join(", ")}${widget.settings.publicOrigins.length === 0 ? " (set CAPLO_PUBLIC_URL to the address browsers use, if another)" : ""}`);
  return {
    ok: true,
    server: {
      gateway,
      engine,
      store,
      url,
      close: async () => {
        await gateway.close();
        channels?.close();
        await handoffDelivery?.stop();
        await evals.stop();
        await engine.stop();
        if (cluster) {
          // engine.stop waited for this node's work: a write of it still `running` is one whose outcome
          // could not be stored. It becomes unknown with status checks before the node leaves; if even that
          // fails (the store is away), the node does not leave, so a survivor takes it over later.
          const recovered = await engine.recover().then(
            () => true,
            (error: unknown) => (log(`warn: running writes not recovered at stop; another node will take them over: ${String(error)}`), false),
          );
          await cluster.stop({ leave: recovered });
        }
        await runner.close();
        await bus.close();
        await store.close();
      },
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
  const started = await startServe(parsed.options);
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
