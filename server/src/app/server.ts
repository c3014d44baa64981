// The composition root of a Caplo server: from the command's options and the one configuration it builds
// and starts the components in order (store, bus, runner, engine, handoff delivery, cluster node, evals,
// gateway, channels) on a start/stop stack (the steps every server shares in startParts.ts), and stops them
// last-first. `caplo serve`, `caplo demo` and the tests' in-process servers start through startServer (the
// tests hand it ready-made parts: ServeOptions.given); nothing here reads the environment but through readConfig.
import { dirname, join } from "node:path";
import { DEFAULT_WORKSPACE, workspaceRef } from "@caplo/shared";
import { workspaceReleasesDir } from "../agents/releaseStore.ts";
import { readServedReleases } from "../agents/servedReleases.ts";
import { readSecretKeys, WorkspaceSecrets } from "../secrets/index.ts";
import { openEventBus, type EventBus } from "../bus/index.ts";
import { webhookUrls, type MountedChannels } from "../channels/channelSetup.ts";
import { mountWorkspaceChannels, readServeChannels } from "./serveChannels.ts";
import { limitRoutes } from "../channels/webhookRateLimit.ts";
import { startClusterNode, type ClusterNode } from "../cluster/clusterNode.ts";
import { readConfig } from "../config/index.ts";
import type { Engine, EngineOptions } from "../engine/engine.ts";
import { DAY_MS } from "../engine/fileRetention.ts";
import { HandoffDelivery, readHandoffWebhooks } from "../engine/handoff.ts";
import { agentRef, StaticReleases, workspaceOf, type AgentRelease } from "../engine/release.ts";
import { EvalService } from "../eval/evalService.ts";
import { Gateway, type GatewayOptions } from "../gateway/gateway.ts";
import { readWidgetSettings } from "../gateway/settings.ts";
import type { TeamMember } from "../gateway/teamMembers.ts";
import { describeModelConfig, modelFromEnv } from "../model/config.ts";
import type { Model } from "../model/model.ts";
import { ScriptedModel } from "../model/scripted.ts";
import { loadScript } from "../model/scriptFile.ts";
import type { ToolRunner } from "../runner/api.ts";
import { JsonlLogStore, MemoryLogStore, invocationLogFile, type LogStore } from "../runner/logStore.ts";
import { openStore } from "../store/index.ts";
import type { Store } from "../store/store.ts";
import { componentLog } from "./log.ts";
import { readFileScanner } from "../runner/fileScanner.ts";
import { runnerSettings } from "./runnerSettings.ts";
import { StartStack } from "./stack.ts";
import { listenGateway, startEngine } from "./startParts.ts";
import type { AddressInfo } from "node:net";

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
  /** Parts made ready by the caller (the tests' servers); `caplo serve` and `caplo demo` give none. */
  given?: GivenParts;
};

/**
 * What a test hands the composition root instead of what it builds from the options and the configuration;
 * everything else is built as for `caplo serve`.
 */
export type GivenParts = {
  /** A store of the caller's (a PostgreSQL schema two servers share) instead of opening `db`; migrated and closed here. `db` still chooses the bus and the cluster node. */
  store?: Store;
  /** The event bus (a MemoryBus on a hub two servers share) instead of the one the configuration chooses; closed with the server. */
  bus?: EventBus;
  /** The served releases instead of the latest of each of `agents` in `releasesDir`. */
  releases?: AgentRelease[];
  /** Every release's model instead of its `model:`, the environment's provider or the scripted model. */
  model?: Model;
  /** Engine settings no CAPLO_* variable sets: the clock (also the start's record of the workspaces), the scheduler's poll, waits; `scheduler: false` starts no timers. */
  engine?: Pick<EngineOptions, "now" | "checkPollMs" | "elicitTimeoutMs" | "progressShownAfterMs"> & { scheduler?: boolean };
  /** Gateway options over those built here (team members known to this gateway only, so no start records them). */
  gateway?: Partial<GatewayOptions>;
};

export type ServeError = { code: string; path: string; message: string };


/** A failure thrown during start, as serve's coded error (its own code and path when it has them). */
export function startError(error: unknown, fallbackCode: string): ServeError {
  const typed = error as { code?: string; path?: string; message?: string };
  return { code: typed.code ?? fallbackCode, path: typed.path ?? "", message: typed.message ?? String(error) };
}

/**
 * The engine's secrets: for a call of a package version in a workspace, only the names that version declares,
 * from that workspace's secrets, and only for a version one of the workspace's own releases pins.
 */
export function engineSecrets(releases: readonly AgentRelease[], secrets: Pick<WorkspaceSecrets, "values">): (packageVersionId: string, workspaceId: string) => Promise<Record<string, string>> {
  return async (packageVersionId, workspaceId) => {
    const version = releases.filter((release) => workspaceOf(release) === workspaceId).flatMap((release) => release.packages).find((candidate) => candidate.id === packageVersionId);
    return version ? secrets.values(workspaceId, version.manifest.secrets ?? []) : {};
  };
}

export const isPostgres = (db: string) => /^postgres(ql)?:\/\//.test(db);

/**
 * The cluster node leaves last of the engine's work: engine.stop (stopped before, last-first) waited for
 * this node's work, so a write of it still `running` is one whose outcome could not be stored. It becomes
 * unknown with status checks before the node leaves; if even that fails (the store is away), the node
 * does not leave, so a survivor takes it over later.
 */
async function leaveCluster(cluster: ClusterNode, engine: Engine, log: (line: string) => void): Promise<void> {
  await engine.stop();
  const recovered = await engine.recover().then(
    () => true,
    (error: unknown) => (log(`warn: running writes not recovered at stop; another node will take them over: ${String(error)}`), false),
  );
  await cluster.stop({ leave: recovered });
}

export type RunningServer = { gateway: Gateway; engine: Engine; store: Store; releases: StaticReleases; url: string; close: () => Promise<void> };

/** Starts everything in order; the caller closes it (last-first). A start that fails part way leaves nothing running. */
export async function startServer(options: ServeOptions, log: (line: string) => void = console.log): Promise<{ ok: true; server: RunningServer } | { ok: false; error: ServeError }> {
  // Every setting is read and checked once, here; nothing below reads the environment.
  const read = readConfig(options.env);
  for (const warning of read.warnings) log(`warn: ${warning.message}`);
  if (!read.ok) return { ok: false, error: read.errors[0]! };
  const config = read.config;
  const served = options.given?.releases ? { ok: true as const, releases: options.given.releases } : await readServedReleases(options);
  if (!served.ok) return served;
  const releases = served.releases;
  // One model per agent: its `model:` override, else the environment's provider, else the scripted model.
  const models = new Map<string, Model>();
  try {
    const script = options.script ? await loadScript(options.script) : { ok: true as const, rules: [] };
    if (!script.ok) return script;
    const scripted = new ScriptedModel(script.rules, { id: "serve", fallback: "This server runs the offline scripted model; configure OPENAI_API_KEY or OPENAI_BASE_URL for a real one." });
    // A given model is every release's (modelOf below): no release's own is made.
    if (!options.given?.model) for (const release of releases) models.set(release.id, modelFromEnv(config.source, release.config.model) ?? scripted);
  } catch (error) {
    const typed = error as { code?: string; path?: string; message?: string };
    return { ok: false, error: { code: typed.code ?? "model_config_invalid", path: typed.path ?? "", message: typed.message ?? String(error) } };
  }
  const invocationLog = { file: invocationLogFile(options.db, config.CAPLO_INVOCATION_LOG), maxBytes: config.CAPLO_INVOCATION_LOG_MAX_MB * 1024 * 1024 };
  const widget = readWidgetSettings(config.source, options.port);
  if (!widget.ok) return widget;
  const handoffWebhooks = readHandoffWebhooks(config.source);
  if (!handoffWebhooks.ok) return handoffWebhooks;
  const fileScan = readFileScanner(config.source);
  if (!fileScan.ok) return fileScan;
  const secretKeys = readSecretKeys(config);
  if (!secretKeys.ok) return secretKeys;
  const stack = new StartStack();
  const failed = async (error: ServeError) => {
    await stack.stopAll().catch((stopError: unknown) => log(`warn: stopping after a failed start: ${String(stopError)}`));
    return { ok: false as const, error };
  };
  const store = stack.push("store", options.given?.store ?? (await openStore(options.db, { synchronous: config.CAPLO_SQLITE_SYNCHRONOUS })), (opened) => opened.close());
  if (options.given?.store) {
    const migrated = await store.migrate().then(() => undefined, (error: unknown) => startError(error, "store_unavailable"));
    if (migrated) return failed(migrated);
  }
  // Workspace secrets are read from the store at each call; every stored value must open with the configured
  // key, or the server stops here (secrets_key_missing, secrets_key_wrong) rather than fail calls later.
  const secrets = new WorkspaceSecrets({ store, keyring: secretKeys.keyring, env: options.env, log: componentLog(log) });
  const keyCheck = await secrets.check();
  if (!keyCheck.ok) return failed(keyCheck.error);
  if (secretKeys.keyring) log(`workspace secrets: ${keyCheck.count} stored, sealed with key ${secretKeys.keyring.current.id}${secretKeys.keyring.keys.length > 1 ? ` (${secretKeys.keyring.keys.length - 1} older key(s) still open values)` : ""}`);
  // The workspaces this server serves, their team members and served releases, recorded with what changed.
  const now = options.given?.engine?.now ?? Date.now;
  const recorded = await recordServed(store, releases, options.teamMembers ?? [], options.nodeId, now()).catch((error: unknown) => startError(error, "store_unavailable"));
  if (recorded) return failed(recorded);
  // Handoff notices to the team's webhook: stored with the handoff, sent and retried in the background.
  const handoffDelivery = handoffWebhooks.webhooks
    ? new HandoffDelivery({ store, webhooks: handoffWebhooks.webhooks, log: componentLog(log) })
    : undefined;
  const busResult = options.given?.bus ? { ok: true as const, bus: options.given.bus } : await openEventBus({
    ...(config.CAPLO_REDIS_URL && { redisUrl: config.CAPLO_REDIS_URL }),
    ...(isPostgres(options.db) && { databaseUrl: options.db }),
    ...(options.busPollMs !== undefined && { pollIntervalMs: options.busPollMs }),
    onHealthChange: (health) => log(`${health.state === "healthy" ? "info" : "warn"}: event bus ${health.state}${health.reason ? `: ${health.reason}` : ""}`),
    // Every subscribed conversation's last seq in one query (it was a read per conversation, one after another).
    latestSeqs: (ids) => store.latestSeqs(ids),
  });
  // A configured bus that cannot start is an error: an in-process bus would silently cut this node off
  // from the others' events.
  if (!busResult.ok) return failed(busResult.error);
  const bus = stack.push("bus", busResult.bus, (opened) => opened.close());
  let runner: ToolRunner;
  if (options.runner) runner = options.runner;
  else {
    const { CaploToolRunner } = await import("../runner/toolRunner.ts");
    // Every invocation's record (log lines, secrets redacted) in a bounded file: `caplo tool logs --db DB`.
    // Grouped: the calls that finish in one turn of the loop are one write; the stop writes what waits (after the runner's).
    const logStore = stack.push(
      "invocation log",
      new JsonlLogStore(invocationLog.file, { maxBytes: invocationLog.maxBytes, grouped: true, onError: (error) => log(`invocation log not written: ${error.message}`) }),
      (opened) => opened.flush(),
    );
    const sandboxed = new CaploToolRunner({ ...runnerSettings(config), logStore, ...(fileScan.scanner && { fileScanner: fileScan.scanner }) });
    log(sandboxed.sandboxNote);
    log(`files: built-in checks${fileScan.scanner ? ` and the file scanner (${fileScan.scanner.description})` : "; no file scanner (CAPLO_FILE_SCAN_CLAMD or CAPLO_FILE_SCAN_COMMAND)"}`);
    log(`invocation logs: ${logStore.file} (at most ${invocationLog.maxBytes / 1024 / 1024} MiB)`);
    runner = sandboxed;
  }
  // One source of the served releases for the engine, the evaluations and the gateway; a given model is
  // every release's, also one a test publishes after the start.
  const releaseSource = new StaticReleases(releases);
  const modelOf = (release: AgentRelease): Model | undefined => options.given?.model ?? models.get(release.id);
  const modelFor = (release: AgentRelease): Model => modelOf(release)!;
  const { scheduler, ...givenEngine } = options.given?.engine ?? {};
  const engineOptions: EngineOptions = {
    store,
    runner,
    model: modelFor,
    releases: releaseSource,
    bus,
    nodeId: options.nodeId,
    ...(options.statusCheckBaseMs !== undefined && { statusCheckBaseMs: options.statusCheckBaseMs }),
    fileRetentionMs: config.CAPLO_FILE_RETENTION_DAYS * DAY_MS,
    proposalTtlMs: config.CAPLO_PROPOSAL_TTL_SECONDS * 1000,
    transcriptBudgetChars: config.CAPLO_TRANSCRIPT_BUDGET_CHARS,
    ...(handoffDelivery && { handoffNotifier: handoffDelivery }),
    secrets: engineSecrets(releases, secrets),
    log: componentLog(log),
    ...givenEngine,
  };
  let engine: Engine;
  let cluster: ClusterNode | undefined;
  const schema = (store as { schema?: string }).schema ?? "public";
  try {
    engine = await startEngine(stack, engineOptions, { ...(scheduler !== undefined && { scheduler }) });
    if (handoffDelivery) {
      stack.push("handoff delivery", handoffDelivery, (started) => started.stop());
      handoffDelivery.start();
    }
    // Several nodes on one PostgreSQL: a liveness lease, and takeover of nodes that stop renewing theirs.
    if (isPostgres(options.db)) {
      cluster = await startClusterNode({
        databaseUrl: options.db,
        schema,
        nodeId: options.nodeId,
        ...(options.nodeLeaseMs !== undefined && { leaseMs: options.nodeLeaseMs }),
        recover: (lostNodeId) => engine.recover(lostNodeId),
        log: componentLog(log),
      });
      stack.push("cluster node", cluster, (node) => leaveCluster(node, engine, log));
      log(`cluster: node ${options.nodeId}, liveness lease ${cluster.leaseMs} ms`);
    }
  } catch (error) {
    return failed(startError(error, "start_failed"));
  }
  // Evaluations from the team API: the served releases' cases and tool versions' fixtures, on this runner,
  // each eval run in stores of its own (never this server's), writes never run.
  const evals = new EvalService({
    releases: releaseSource,
    runner,
    logStore: (runner as { logStore?: LogStore }).logStore ?? new MemoryLogStore(),
    modelFor,
    secrets: (workspaceId, names) => secrets.values(workspaceId, names),
  });
  stack.push("evaluations", evals, (started) => started.stop());
  const gateway = new Gateway({
    engine,
    evals,
    releases: releaseSource,
    ...(options.teamMembers && { teamMembers: options.teamMembers }),
    ...(options.widgetDir && { widgetDir: options.widgetDir }),
    ...((runner as { logStore?: LogStore }).logStore && { logStore: (runner as { logStore?: LogStore }).logStore! }),
    modelOf: (release) => modelOf(release)?.id ?? release.config.model ?? "the server's default model",
    secrets: (name, workspaceId) => secrets.get(workspaceId ?? DEFAULT_WORKSPACE, name),
    // The console's remote review keeps each workspace's published remote versions beside its releases.
    remoteReview: { versionsDir: (workspaceId) => join(workspaceReleasesDir(options.releasesDir, workspaceId), "remote"), allowPrivateNetwork: config.CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK },
    log: componentLog(log),
    publicOrigins: widget.settings.publicOrigins,
    trustedProxies: widget.settings.trustedProxies,
    addressLimits: widget.settings.addressLimits,
    helloTimeoutMs: widget.settings.helloTimeoutMs,
    ...(widget.settings.console && { console: widget.settings.console }),
    ...options.given?.gateway,
  });
  // Messaging channels configured by environment (docs/channels.md), and each workspace's own
  // (CAPLO_WORKSPACE_CHANNELS, docs/operators/workspaces.md): their webhooks mount on this gateway.
  const channelSettings = readServeChannels(options.agents, options.env, releases);
  if (!channelSettings.ok) {
    const first = channelSettings.errors[0]!;
    return failed({ code: first.code, path: first.path, message: channelSettings.errors.map((error) => error.message).join("; ") });
  }
  // On PostgreSQL the channels' state is shared by the nodes: each webhook event is processed by one node
  // and a customer keeps one conversation whichever node their messages reach. Each workspace's is its own.
  let channels: MountedChannels[] = [];
  try {
    channels = await mountWorkspaceChannels({
      workspaces: channelSettings.workspaces,
      releases,
      engine,
      gateway: limitRoutes(gateway, options.webhooksPerSecond ?? 50),
      file: config.CAPLO_CHANNELS_DB ?? (isPostgres(options.db) ? ".caplo/channels.db" : join(dirname(options.db), "channels.db")),
      ...(config.CAPLO_SQLITE_SYNCHRONOUS && { synchronous: config.CAPLO_SQLITE_SYNCHRONOUS }),
      log,
      ...(isPostgres(options.db) && { postgres: { connectionString: options.db, schema, nodeId: options.nodeId } }),
    });
  } catch (error) {
    const coded = startError(error, "channels_unavailable");
    return failed({ ...coded, message: `the messaging channels could not start: ${coded.message}` });
  }
  for (const [index, mounted] of channels.entries()) {
    const workspace = channelSettings.workspaces[index]!;
    stack.push("channels", mounted, (started) => started.close());
    log(`channels${workspace.workspaceId === DEFAULT_WORKSPACE ? "" : ` of workspace ${workspace.workspaceId}`}: ${mounted.platforms.join(", ")} (webhooks at ${workspace.basePath}/<platform>)`);
    for (const webhook of webhookUrls(workspace.settings, workspace.basePath)) log(`  ${webhook.platform} webhook: ${webhook.url}`);
  }
  let address: AddressInfo;
  try {
    address = await listenGateway(stack, gateway, options.port, options.host);
  } catch (error) {
    // A port taken or not allowed is the operator's to change: said by name, not thrown.
    const refused = error as NodeJS.ErrnoException & { port?: number };
    if (refused.code !== "EADDRINUSE" && refused.code !== "EACCES") throw error;
    const consolePort = widget.settings.console?.port;
    const onConsole = consolePort !== undefined && refused.port === consolePort;
    const port = refused.port ?? (onConsole ? consolePort : options.port);
    const what = onConsole ? "the team console (CAPLO_CONSOLE_PORT)" : "the gateway (--port, CAPLO_PORT)";
    return failed({
      code: refused.code === "EADDRINUSE" ? "port_in_use" : "port_not_allowed",
      path: onConsole ? "CAPLO_CONSOLE_PORT" : "--port",
      message: `port ${port} for ${what} ${refused.code === "EADDRINUSE" ? `is already in use on ${options.host}: stop what uses it or choose another` : `may not be listened on by this user on ${options.host}: choose one above 1023`}`,
    });
  }
  const url = httpUrl(address);
  log(`caplo serve: ${url} (store: ${store.kind}, ${describeModelConfig(config.source)}, agents: ${releases.map((release) => release.id).join(", ")})`);
  if (!options.teamMembers) log("team API: no configured members (CAPLO_TEAM_MEMBERS); members added with caplo member add are accepted");
  log(`widget app origins: ${gateway.origins.join(", ")}${widget.settings.publicOrigins.length === 0 ? " (set CAPLO_PUBLIC_URL to the address browsers use, if another)" : ""}`);
  const consoleAddress = gateway.consoleAddress;
  if (consoleAddress) log(`team console: ${httpUrl(consoleAddress)}/console (a port of its own; not served at ${url})`);
  return {
    ok: true,
    server: {
      gateway,
      engine,
      store,
      releases: releaseSource,
      url,
      close: () => stack.stopAll(),
    },
  };
}


/**
 * At start: every served workspace exists in the store, and its configured team members are recorded, with
 * what changed since the last start in its audit (member.added, member.removed, member.token_changed). The
 * actor is this node. (Releases are audited when they are published: caplo agent publish.)
 */
async function recordServed(store: Store, releases: readonly AgentRelease[], members: readonly TeamMember[], nodeId: string, now: number): Promise<ServeError | undefined> {
  const actor = `node:${nodeId}`;
  const workspaces = new Set([DEFAULT_WORKSPACE, ...releases.map(workspaceOf), ...members.map((member) => member.workspaceId)]);
  for (const workspaceId of workspaces) {
    await store.ensureWorkspace(workspaceId, now);
    const configured = members.filter((member) => member.workspaceId === workspaceId).map((member) => ({ name: member.name, tokenSha256: member.tokenSha256.toString("hex") }));
    const synced = await store.syncTeamMembers(workspaceId, configured, actor, now);
    if (!synced.ok) {
      const names = synced.conflicts.map((name) => workspaceRef(workspaceId, name));
      return { code: "team_member_conflict", path: "CAPLO_TEAM_MEMBERS", message: `${names.join(", ")} ${names.length === 1 ? "is" : "are"} both in CAPLO_TEAM_MEMBERS and added with caplo member add: a name is one member's in its workspace; remove the entry from CAPLO_TEAM_MEMBERS, or the member from the store (caplo member rm ${synced.conflicts[0]}${workspaceId === DEFAULT_WORKSPACE ? "" : ` --workspace ${workspaceId}`})` };
    }
  }
  return undefined;
}

/** A listening address as an http URL (an IPv6 address in brackets). */
function httpUrl(address: AddressInfo): string {
  return `http://${address.address.includes(":") ? `[${address.address}]` : address.address}:${address.port}`;
}
