// The runner: implements ToolRunner. It validates arguments before a handler runs, sends the per-call
// context in `_meta`, aborts at the tool's timeout, takes files out of results, validates output and
// size, maps write outcomes, keeps secrets out of everything it returns, and records each invocation's
// log lines. Package versions run in warm sandboxed processes; other kinds of targets (remote MCP servers
// over their URL, in-memory servers) are registered with it (target.ts).
import { randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { CallToolResultSchema, ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CALL_META_KEY,
  EFFECT_META_KEY,
  OPERATION_STATUS_CAPABILITY,
  RESULT_BYTES_MAX,
  STATUS_METHOD,
  type CallMeta,
  type PackageVersion,
  type WriteOutcome,
} from "@caplo/shared";
import type {
  CallContextInput,
  LogLine,
  StatusCheckRequest,
  ToolCallRequest,
  ToolCallResult,
  ToolRunner,
} from "./api.ts";
import type { EgressEvent } from "./egressProxy.ts";
import { parseResolveOverrides, type ResolveOverride } from "./egressRule.ts";
import { callClock, type CallClock } from "./callClock.ts";
import { elicitationHandler } from "./elicitationPolicy.ts";
import { extractFiles, scanFiles, undeliveredFiles } from "./fileExtraction.ts";
import type { FileScanner } from "./fileScanner.ts";
import { MemoryLogStore, recordContext, type LogStore } from "./logStore.ts";
import { CallLog } from "./logBounds.ts";
import { memoryLimitKind } from "./cgroup.ts";
import { ensureHostBundle } from "./hostBundle.ts";
import { HOST_MODULE, RUNTIME_READ_PATHS, findNode24 } from "./node24.ts";
import { mapStatusResult, mapWriteResult, readStepUp, type ResultShape } from "./outcomeMapping.ts";
import type { CallRoute } from "./routedClient.ts";
import type { Session, Target, TargetKind } from "./target.ts";

export type { Session, Target } from "./target.ts";
import { ProcessPool } from "./processPool.ts";
import { chooseSandbox, type SandboxMode } from "./sandbox.ts";
import { validateAgainst } from "./schemaValidator.ts";
import { resultBytes } from "./resultSize.ts";
import { redactorFor } from "./secretRedaction.ts";
import { checkFrozen } from "../build/frozenVersion.ts";

/** An error the runner reports by code (for load and configuration problems; calls return results). */
export class RunnerError extends Error {
  readonly code: string;
  readonly path: string;
  constructor(code: string, message: string, path = "/") {
    super(message);
    this.code = code;
    this.path = path;
  }
}

export type RunnerOptions = {
  /** Node 24 binary; default runtime/node24 of this repository (the server passes CAPLO_NODE24; a missing one is node24_missing at load). */
  node?: string;
  /**
   * Run untrusted packages without namespaces (permission model and proxy only, as an unprivileged user)
   * when namespaces are unavailable. For `caplo tool test` with CAPLO_SANDBOX=weak only: serve never sets it.
   */
  allowWeakSandbox?: boolean;
  /**
   * The module that serves a package over stdio. Default: the prebuilt host bundle (hostBundle.ts),
   * built on first use; sdk/src/host.ts if it cannot be built (see hostNote).
   */
  hostModule?: string;
  /** Warm processes kept at most (LRU). */
  maxProcesses?: number;
  /** V8 heap cap per package process, MiB (default 256). */
  memoryMb?: number;
  /**
   * The whole package process's memory cap, MiB (V8 heap, Buffers and other off-heap memory, code):
   * a cgroup memory limit where cgroups are usable (see memoryNote). Default memoryMb + 128.
   */
  processMemoryMb?: number;
  /** Processes and threads a package process may have at once (cgroup pids.max). Default 128. */
  pidsMax?: number;
  /** false: no control groups even where they work (the V8 heap cap only; CAPLO_CGROUPS=off). Default: use them. */
  cgroups?: boolean;
  startTimeoutMs?: number;
  /** How long each look of a process's CPU between calls lasts (IDLE_CPU_WINDOW_MS, 5 s; tests shorten it). */
  idleCpuWindowMs?: number;
  /** Operator's host→address map, CAPLO_EGRESS_RESOLVE syntax (the caller passes the setting). */
  egressResolve?: string;
  /**
   * Operator-only, for local development: a PEM file of certificate authorities that packages' TLS
   * trusts besides Node's own, so a local test API with its own certificate can be reached over https
   * (with egressResolve mapping its host); CAPLO_EXTRA_CA_CERTS. A package cannot set it.
   */
  extraCaCerts?: string;
  logStore?: LogStore;
  /** The operator's file scanner (clamd or a command; see fileScanner.ts): a file it does not call clean is not delivered. */
  fileScanner?: FileScanner;
  /**
   * Other kinds of targets than package versions, registered by the composition root: remote MCP server
   * versions (remote/remoteTarget.ts remoteTargetKind; app/runnerSettings.ts). The runner imports none of them.
   */
  targetKinds?: readonly TargetKind[];
};

/** The sandbox package processes run in and their memory limit, with what the operator is told of them. */
type Isolation = { mode: SandboxMode | "unavailable"; note: string; memoryNote: string; processMemoryMb: number | undefined };

const STUCK_PING_MS = 1000;
/** Records of a package process's egress between calls kept per process (betweenCallsRecorder). */
export const EGRESS_BETWEEN_CALLS_RECORDS = 20;
/** The longest timer Node keeps (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The operator's extra CA file, absolute, or a RunnerError naming what is wrong with it. */
function checkExtraCaCerts(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  const file = resolve(path);
  const invalid = (why: string) => new RunnerError("extra_ca_certs_invalid", `CAPLO_EXTRA_CA_CERTS ${file}: ${why}`);
  let stat;
  try {
    stat = statSync(file);
  } catch {
    throw invalid("no such file");
  }
  if (!stat.isFile()) throw invalid("not a file");
  if (stat.size > 1024 * 1024) throw invalid("over 1 MiB");
  if (!readFileSync(file, "latin1").includes("-----BEGIN CERTIFICATE-----")) throw invalid("holds no PEM certificate");
  return file;
}

function textOf(content: readonly unknown[]): string {
  return content
    .map((item) => (item as { type?: unknown; text?: unknown; resource?: { text?: unknown } }))
    .map((item) => (item.type === "text" && typeof item.text === "string" ? item.text : item.type === "resource" && typeof item.resource?.text === "string" ? item.resource.text : ""))
    .filter(Boolean)
    .join("\n");
}

function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^MCP error -?\d+: /, "");
}

export class CaploToolRunner implements ToolRunner {
  private readonly targets = new Map<string, Target>();
  private readonly pool: ProcessPool;
  private readonly options: RunnerOptions;
  private readonly overrides: ResolveOverride[];
  private readonly extraCaCerts: string | undefined;
  private isolationChosen: Isolation | undefined;
  readonly logStore: LogStore;
  /** Which host serves packages: the prebuilt bundle, or sdk/src/host.ts and why. Set by the first load. */
  hostNote = "host: not started yet";

  constructor(options: RunnerOptions = {}) {
    this.options = options;
    this.pool = new ProcessPool(options.maxProcesses ?? 16);
    this.logStore = options.logStore ?? new MemoryLogStore();
    const parsed = parseResolveOverrides(options.egressResolve);
    if (parsed.errors.length) throw new RunnerError(parsed.errors[0]!.code, parsed.errors[0]!.message);
    this.overrides = parsed.overrides;
    this.extraCaCerts = checkExtraCaCerts(options.extraCaCerts || undefined);
  }

  /**
   * The sandbox and memory limit package processes get, probed on first need (a package version's load, or
   * a caller asking): a runner serving only other kinds of targets never spawns the probes.
   */
  private get isolation(): Isolation {
    if (this.isolationChosen) return this.isolationChosen;
    const options = this.options;
    const sandbox = chooseSandbox(options.allowWeakSandbox ?? false);
    const heapMb = options.memoryMb ?? 256;
    const processMb = options.processMemoryMb ?? heapMb + 128;
    const limit =
      sandbox.mode !== "isolated"
        ? { kind: "heap" as const, reason: "the sandbox is not isolated" }
        : options.cgroups === false
          ? { kind: "heap" as const, reason: "turned off (RunnerOptions.cgroups: false)" }
          : memoryLimitKind();
    const memoryNote =
      limit.kind === "cgroup"
        ? `memory: cgroup ${limit.version} limit ${processMb} MiB per package process (heap, Buffers and all; pids.max ${options.pidsMax ?? 128}), V8 heap ${heapMb} MiB`
        : `memory: V8 heap cap only (${heapMb} MiB; Buffers and other off-heap memory are not capped): cgroups unavailable: ${limit.reason}`;
    return (this.isolationChosen = { mode: sandbox.mode, note: sandbox.note, memoryNote, processMemoryMb: limit.kind === "cgroup" ? processMb : undefined });
  }

  get sandboxMode(): SandboxMode | "unavailable" {
    return this.isolation.mode;
  }

  get sandboxNote(): string {
    return this.isolation.note;
  }

  /** Which memory limit applies to a package process: a cgroup's (whole process) or the V8 heap cap only, and why. */
  get memoryNote(): string {
    return this.isolation.memoryNote;
  }

  /** How many package processes are running or starting now (at most maxProcesses). */
  get processCount(): number {
    return this.pool.size;
  }

  /** The pool's start count for a version (how often its process was started). */
  starts(versionId: string): number {
    return this.pool.starts.get(versionId) ?? 0;
  }

  /** The live process of a package version, if any (tests use it to simulate crashes). */
  async processOf(versionId: string) {
    return this.pool.peek(versionId);
  }

  async load(version: PackageVersion): Promise<void> {
    if (this.targets.has(version.id)) return;
    const kind = this.options.targetKinds?.find((candidate) => candidate.loads(version.id));
    if (kind) return this.loadKind(kind, version);
    if (this.sandboxMode === "unavailable") throw new RunnerError("sandbox_unavailable", this.sandboxNote);
    // A version runs only from its frozen copy, and only while that copy still holds exactly its files:
    // an edited, added or removed file (or a package folder given instead of the copy) runs nothing.
    const frozen = checkFrozen(version.dir, version.contentHash);
    if (frozen) throw new RunnerError(frozen.code, `${version.id}: ${frozen.message}`, frozen.path);
    const found = findNode24(this.options.node);
    if (!found.ok) throw new RunnerError(found.code, found.message);
    const node = found.path;
    const host = await this.host(node);
    const processOptions = () => ({
      label: version.id,
      node,
      mode: this.sandboxMode as SandboxMode,
      // The bundle's launcher takes the manifest the build read, so the package process need not parse YAML.
      script: host.preload ? [host.module, version.dir, JSON.stringify({ type: version.manifest.type, entry: version.manifest.entry, secrets: version.manifest.secrets ?? [] })] : [host.module, version.dir],
      ...(host.preload && { preload: host.preload }),
      readPaths: [version.dir, host.module, ...RUNTIME_READ_PATHS],
      egress: version.manifest.egress ?? [],
      overrides: this.overrides,
      memoryMb: this.options.memoryMb ?? 256,
      ...(this.extraCaCerts && { extraCaCerts: this.extraCaCerts }),
      ...(this.isolation.processMemoryMb !== undefined && { processMemoryMb: this.isolation.processMemoryMb, pidsMax: this.options.pidsMax ?? 128 }),
      startTimeoutMs: this.options.startTimeoutMs ?? 30_000,
      ...(this.options.idleCpuWindowMs !== undefined && { idleCpuWindowMs: this.options.idleCpuWindowMs }),
      onEgressBetweenCalls: this.betweenCallsRecorder(version.id),
    });
    // One warm process per version and workspace: a package that keeps a call's secret or customer in
    // memory never carries it into another workspace's call (the default workspace keeps the bare id).
    const session = async (waitMs?: number, _secrets?: Record<string, string>, workspaceId?: string): Promise<Session> => {
      const key = processKey(version.id, workspaceId);
      const process = await this.pool.get(key, processOptions, waitMs ?? this.options.startTimeoutMs ?? 30_000);
      return {
        client: process.client,
        routes: process.routes,
        recover: async () => {
          const alive = await process.client.ping({ timeout: STUCK_PING_MS }).then(() => true, () => false);
          if (!alive) await this.pool.stop(key);
        },
        exitReason: () => (process.exited ? process.exitReason : undefined),
      };
    };
    const target: Target = {
      id: version.id,
      tools: version.tools,
      effectOutcomes: version.type === "function" || version.effectOutcomes,
      secretNames: version.manifest.secrets ?? [],
      session,
      close: () => this.pool.stopVersion(version.id),
    };
    // Start it now: a package that cannot start, or lists other tools than it was built with, fails here.
    const { client } = await session();
    const listed = await client.listTools();
    for (const tool of version.tools) {
      if (!listed.tools.some((candidate) => candidate.name === tool.name)) {
        await this.pool.stop(version.id);
        throw new RunnerError("tool_missing", `package ${version.id} no longer lists tool '${tool.name}'`, `/tools/${tool.name}`);
      }
    }
    this.targets.set(version.id, target);
  }

  /**
   * A remote MCP server version a release pinned: its frozen version file must hash to the pinned id and
   * hold the pinned tools. Nothing is connected yet: the authorization header comes with each call's
   * secrets, so the first call connects (over the reviewed transport).
   */
  private async loadKind(kind: TargetKind, version: PackageVersion): Promise<void> {
    const loaded = await kind.load(version);
    if (!loaded.ok) throw new RunnerError(loaded.error.code, loaded.error.message, loaded.error.path);
    if (this.targets.has(version.id)) return;
    this.targets.set(version.id, loaded.target);
  }

  /** The host module (and preload) packages run with; see RunnerOptions.hostModule. */
  private async host(node: string): Promise<{ module: string; preload?: string }> {
    if (this.options.hostModule) {
      this.hostNote = `host: ${this.options.hostModule}`;
      return { module: this.options.hostModule };
    }
    const built = await ensureHostBundle(node);
    if (built.ok) {
      this.hostNote = `host: prebuilt bundle ${built.bundle.dir}`;
      return { module: built.bundle.launcher, preload: built.bundle.preload };
    }
    this.hostNote = `host: sdk/src/host.ts (the prebuilt bundle could not be built: ${built.reason}); package processes start slower`;
    return { module: HOST_MODULE };
  }

  /** Registers another kind of target (remote MCP servers use this) and opens it once. */
  async addTarget(target: Target): Promise<void> {
    await target.session();
    this.targets.set(target.id, target);
  }

  async unload(id: string): Promise<void> {
    const target = this.targets.get(id);
    this.targets.delete(id);
    await target?.close();
  }

  async call(request: ToolCallRequest): Promise<ToolCallResult> {
    const started = performance.now();
    const redact = redactorFor(request.context.secrets);
    const callLog = new CallLog(redact.cutPoint);
    const logs = callLog.lines;
    const invocationId = request.context.invocationId;
    const target = this.targets.get(request.packageVersionId);
    const tool = target?.tools.find((candidate) => candidate.name === request.tool);
    const finish = (result: Omit<ToolCallResult, "invocationId" | "logs" | "durationMs">): ToolCallResult => {
      const done: ToolCallResult = redact({ ...result, invocationId, logs, durationMs: Math.round(performance.now() - started) });
      this.logStore.record({
        invocationId,
        packageVersionId: request.packageVersionId,
        tool: request.tool,
        kind: "call",
        at: new Date().toISOString(),
        durationMs: done.durationMs,
        isError: done.isError,
        ...(done.outcome && { outcome: done.outcome.outcome }),
        ...recordContext(request.context),
        logs: done.logs,
      });
      return done;
    };
    const isWrite = tool?.policy.effect === "write";
    const fail = (message: string, outcome?: WriteOutcome): ToolCallResult =>
      finish({ modelText: message, isError: true, files: [], ...(isWrite && { outcome: outcome ?? { outcome: "unknown", reason: message } }) });
    // Refusals before anything runs apply nothing: a write refused here is not applied.
    const refuse = (message: string): ToolCallResult => fail(message, { outcome: "not_applied", message });

    if (!target) return refuse(`Tool package version ${request.packageVersionId} is not loaded.`);
    if (!tool) return refuse(`Tool '${request.tool}' does not exist in ${request.packageVersionId}.`);
    const policy = tool.policy;

    // The subject comes from the owner-verified context, never from the model.
    let args = request.args;
    if (policy.subject) {
      if (!request.context.subject) return refuse("This tool needs a verified customer, and none is verified in this conversation.");
      const selector = policy.subject.selector;
      if (selector && args && typeof args === "object" && !Array.isArray(args)) {
        if (Object.hasOwn(args, selector)) return refuse(`Invalid arguments: /${selector} is filled by Caplo from the verified customer and may not be given.`);
        if (request.context.subject.ref) args = { ...args, [selector]: request.context.subject.ref };
      }
    }
    const issues = validateAgainst(tool.inputSchema, args);
    if (issues.length) return refuse(`Invalid arguments: ${issues.map((issue) => issue.message).join("; ")}`);

    // A call waits for a free process place at most as long as it may run: past that it is refused
    // (nothing ran, so a write is not applied).
    const timeoutMs = policy.timeoutSeconds * 1000;
    let session: Session;
    try {
      session = await target.session(timeoutMs, request.context.secrets, request.context.workspaceId);
    } catch (error) {
      return refuse(`The tool could not be started: ${describeError(error)}`);
    }
    // A remote version lists its tools again first: a tool changed since review is not called.
    if (target.beforeCall) {
      let refusal: string | undefined;
      try {
        refusal = await target.beforeCall(session, tool.name, timeoutMs);
      } catch (error) {
        refusal = `The tool's server could not list its tools: ${describeError(error)}`;
      }
      if (refusal !== undefined) {
        callLog.push({ level: "warn", message: refusal, at: new Date().toISOString() });
        return refuse(refusal);
      }
    }

    const invoked = await this.invoke(session, CallToolResultSchema, {
      invocationId,
      timeoutMs,
      ...(request.signal && { signal: request.signal }),
      route: (clock) => ({
        invocationId,
        onLog: (line) => {
          callLog.push(line);
        },
        onEgress: (event: EgressEvent) => {
          if (!event.allowed) {
            callLog.push({ level: "warn", message: `egress refused: ${event.refusal?.message ?? event.host}`, data: { code: event.refusal?.code, host: event.host, port: event.port }, at: new Date().toISOString() });
          }
        },
        ...(request.elicit && policy.effect === "read" && {
          // The visitor (and the conversation that keeps the question) is shown no secret either.
          onElicit: elicitationHandler((question) => request.elicit!(redact(question)), policy.elicitation, clock, (line) => callLog.push(line)),
        }),
      }),
      request: (deadline, route) => {
        const meta: CallMeta = {
          ...this.contextMeta(request.context, target, deadline, policy.subject !== undefined),
          ...(isWrite && request.context.idempotencyKey !== undefined && { idempotencyKey: request.context.idempotencyKey }),
          canElicit: route.onElicit !== undefined,
        };
        if (!isWrite) delete meta.idempotencyKey;
        return { method: "tools/call", params: { name: tool.name, arguments: args as Record<string, unknown>, _meta: { [CALL_META_KEY]: meta } } };
      },
    });
    if (!invoked.ok) {
      if (invoked.why === "timeout") return fail(`The tool timed out after ${policy.timeoutSeconds} seconds.`);
      if (invoked.why === "cancelled") return fail("The call was cancelled.");
      const ended = session.exitReason?.();
      return fail(`The tool failed: ${describeError(invoked.error)}${ended ? ` (its process ${ended})` : ""}`);
    }
    const raw = invoked.raw;

    // What the package answered is its own: a result that cannot be measured or checked (nested past the
    // stack, say) fails the call like any bad result, with its record, instead of the call throwing.
    try {
      const result = raw as { content: unknown[]; structuredContent?: Record<string, unknown>; isError?: boolean; _meta?: Record<string, unknown> };
      const isError = result.isError === true;
      const files = await scanFiles(extractFiles(result.content, !isError && policy.effect === "read" ? policy.presentation?.files : undefined), this.options.fileScanner);
      const undelivered = undeliveredFiles(files);
      const text = textOf(files.content);
      const shape: ResultShape = { isError, text, ...(result.structuredContent && { structuredContent: result.structuredContent }), ...(result._meta && { meta: result._meta }) };

      // Step-up applies nothing, for reads and writes alike.
      const stepUp = readStepUp(result._meta);
      if (stepUp) {
        return finish({ modelText: "The customer must verify again before this can be done.", isError: false, files: [], stepUp, ...(isWrite && { outcome: { outcome: "step_up_required", stepUp } }) });
      }
      const size = resultBytes(files.content, result.structuredContent);
      if (size > RESULT_BYTES_MAX) return fail(`The tool's result is ${size} bytes, over the limit of ${RESULT_BYTES_MAX} bytes (256 KiB).`);
      const outcome = isWrite ? mapWriteResult(shape, target.effectOutcomes) : undefined;
      // outputSchema describes the tool's result: a read's, or an applied write's. A pending write has no
      // result yet (the seeds' pending(operationRef, message) carries only a message), so it is not checked,
      // and any structured content it carries is not passed on as a result.
      const isResult = !isError && (outcome === undefined || outcome.outcome === "applied");
      if (isResult && tool.outputSchema) {
        if (!result.structuredContent) return fail("The tool's result has no structured content, but the tool declares an outputSchema.");
        const outputIssues = validateAgainst(tool.outputSchema, result.structuredContent);
        if (outputIssues.length) return fail(`The tool's result does not match its outputSchema: ${outputIssues.map((issue) => issue.message).join("; ")}`);
      }
      const modelText = [text || (result.structuredContent ? JSON.stringify(result.structuredContent) : isError ? "The tool failed." : ""), ...files.notes].filter(Boolean).join("\n");
      return finish({
        modelText,
        isError,
        ...((isResult || (!isError && !tool.outputSchema)) && result.structuredContent && { structuredContent: result.structuredContent }),
        files: files.files,
        ...(undelivered.length > 0 && { undelivered }),
        ...(outcome && { outcome }),
      });
    } catch (error) {
      return fail(`The tool's result could not be checked: ${describeError(error)}`);
    }
  }

  /**
   * The one way a call and a status check reach a target: routed by invocation id, timed by a clock that
   * stops while the visitor answers one of the call's questions, cancelled with the caller's signal, and a
   * server stuck for good recovered after a timeout (before the answer, so the next call does not land on it).
   */
  private async invoke<S extends typeof CallToolResultSchema | ReturnType<typeof ResultSchema.passthrough>>(
    session: Session,
    schema: S,
    options: {
      invocationId: string;
      timeoutMs: number;
      signal?: AbortSignal;
      route: (clock: CallClock) => CallRoute;
      request: (deadline: Date, route: CallRoute) => { method: string; params: Record<string, unknown> };
    },
  ): Promise<{ ok: true; raw: Awaited<ReturnType<Client["request"]>> } | { ok: false; why: "timeout" | "cancelled" | "failed"; error: unknown }> {
    const controller = new AbortController();
    const clock = callClock(options.timeoutMs, () => controller.abort(new Error("timeout")));
    const onOuterAbort = () => controller.abort(new Error("cancelled"));
    options.signal?.addEventListener("abort", onOuterAbort, { once: true });
    const route = options.route(clock);
    session.routes.set(options.invocationId, route);
    try {
      // The clock aborts the call; the SDK's own timeout is a backstop that cannot know of a visitor's
      // wait, so a call that may ask one has none that could cut it.
      const raw = await session.client.request(options.request(clock.deadline(), route), schema, { signal: controller.signal, timeout: route.onElicit ? MAX_TIMER_MS : options.timeoutMs + 1000 });
      // An error answered once the call's time is up is its timeout: the package aborts its handler at the
      // deadline the call carries (the SDK's ctx.signal) and its error can arrive a moment before this clock
      // fires. Either way the model, the customer and the write's outcome are told the same.
      if ((raw as { isError?: unknown }).isError === true && Date.now() >= clock.deadline().getTime()) return { ok: false, why: "timeout", error: new Error("timeout") };
      return { ok: true, raw };
    } catch (error) {
      if (!controller.signal.aborted) return { ok: false, why: "failed", error };
      const timedOut = (controller.signal.reason as Error | undefined)?.message === "timeout";
      // A process stuck for good (a blocked thread) is replaced (at most STUCK_PING_MS more).
      if (timedOut) await session.recover();
      return { ok: false, why: timedOut ? "timeout" : "cancelled", error };
    } finally {
      clock.stop();
      options.signal?.removeEventListener("abort", onOuterAbort);
      session.routes.delete(options.invocationId);
      this.pool.notify();
    }
  }

  /** The per-call context in `_meta`: the secrets the target may receive, and the verified customer only for tools that declare subject. */
  private contextMeta(context: CallContextInput, target: Target, deadline: Date, withSubject: boolean): CallMeta {
    const secrets = Object.fromEntries(target.secretNames.filter((name) => name in context.secrets).map((name) => [name, context.secrets[name]!]));
    return {
      invocationId: context.invocationId,
      deadline: deadline.toISOString(),
      secrets,
      packageVersionId: target.id,
      ...(context.idempotencyKey !== undefined && { idempotencyKey: context.idempotencyKey }),
      ...(context.conversationId !== undefined && { conversationId: context.conversationId }),
      ...(context.turnId !== undefined && { turnId: context.turnId }),
      ...(context.workspaceId !== undefined && { workspaceId: context.workspaceId }),
      ...(withSubject && context.subject !== undefined && { subject: context.subject }),
    };
  }

  async checkStatus(request: StatusCheckRequest): Promise<WriteOutcome> {
    const started = performance.now();
    const redact = redactorFor(request.context.secrets);
    const callLog = new CallLog(redact.cutPoint);
    const logs = callLog.lines;
    const target = this.targets.get(request.packageVersionId);
    const tool = target?.tools.find((candidate) => candidate.name === request.tool);
    const record = (outcome: WriteOutcome): WriteOutcome => {
      const clean = redact(outcome);
      this.logStore.record({
        invocationId: request.context.invocationId,
        packageVersionId: request.packageVersionId,
        tool: request.tool,
        kind: "status",
        at: new Date().toISOString(),
        durationMs: Math.round(performance.now() - started),
        isError: clean.outcome === "unknown",
        outcome: clean.outcome,
        ...recordContext(request.context),
        logs: redact(logs),
      });
      return clean;
    };
    if (!target || !tool) return record({ outcome: "unknown", reason: `tool ${request.tool} of ${request.packageVersionId} is not loaded` });
    if (tool.policy.effect !== "write") return record({ outcome: "unknown", reason: "status checks are for write tools" });
    if (!tool.hasStatus) return record({ outcome: "unknown", reason: "the tool has no status check" });
    let session: Session;
    try {
      session = await target.session(tool.policy.timeoutSeconds * 1000, request.context.secrets, request.context.workspaceId);
    } catch (error) {
      return record({ outcome: "unknown", reason: `the tool could not be started: ${describeError(error)}` });
    }
    const capabilities = session.client.getServerCapabilities()?.experimental ?? {};
    const statusCapability = Object.keys(OPERATION_STATUS_CAPABILITY)[0]!;
    if (!(statusCapability in capabilities)) return record({ outcome: "unknown", reason: "the server does not advertise operation status" });
    const invocationId = request.context.invocationId;
    const invoked = await this.invoke(session, ResultSchema.passthrough(), {
      invocationId,
      timeoutMs: tool.policy.timeoutSeconds * 1000,
      ...(request.signal && { signal: request.signal }),
      route: () => ({
        invocationId,
        onLog: (line) => {
          callLog.push(line);
        },
        onEgress: () => undefined,
      }),
      request: (deadline) => {
        const meta = { ...this.contextMeta(request.context, target, deadline, tool.policy.subject !== undefined), canElicit: false };
        return { method: STATUS_METHOD, params: { name: tool.name, ...(request.operationRef !== undefined && { operationRef: request.operationRef }), _meta: { [CALL_META_KEY]: meta } } };
      },
    });
    if (!invoked.ok) {
      if (invoked.why === "failed") return record({ outcome: "unknown", reason: `the status check failed: ${describeError(invoked.error)}` });
      // A cancelled check may have left the server busy too: the next one finds it responsive.
      if (invoked.why === "cancelled") await session.recover();
      return record({ outcome: "unknown", reason: invoked.why === "timeout" ? "the status check timed out" : "the status check was cancelled" });
    }
    const result = invoked.raw as { content?: unknown[]; structuredContent?: Record<string, unknown>; isError?: boolean; _meta?: Record<string, unknown> };
    const text = textOf(Array.isArray(result.content) ? result.content : []);
    // A status answer may also carry the outcome at its top level ({ version, outcome, ... }).
    const answerMeta = result._meta?.[EFFECT_META_KEY] !== undefined ? result._meta : "outcome" in result ? { [EFFECT_META_KEY]: result } : result._meta;
    let outcome: WriteOutcome;
    try {
      outcome = mapStatusResult({ isError: result.isError === true, text, ...(result.structuredContent && { structuredContent: result.structuredContent }), ...(answerMeta && { meta: answerMeta }) });
    } catch (error) {
      outcome = { outcome: "unknown", reason: `the status answer could not be checked: ${describeError(error)}` };
    }
    return record(outcome);
  }

  /**
   * What a package process does on the network while none of its calls is in flight (a timer left running
   * after its answer, say) goes to the invocation log as records of their own, kind "between calls": the
   * allowlist holds then too, but no call's record would show it. At most EGRESS_BETWEEN_CALLS_RECORDS per
   * process, so a package cannot push the calls' records out of the bounded log; the last says so.
   */
  private betweenCallsRecorder(packageVersionId: string): (event: EgressEvent) => void {
    let recorded = 0;
    return (event) => {
      if (recorded >= EGRESS_BETWEEN_CALLS_RECORDS) return;
      recorded++;
      const at = new Date().toISOString();
      const target = `${event.host}:${event.port}`;
      const logs: LogLine[] = [
        event.allowed
          ? { level: "warn", message: `egress between calls: connected to ${target}`, data: { host: event.host, port: event.port }, at }
          : { level: "warn", message: `egress between calls refused: ${event.refusal?.message ?? target}`, data: { code: event.refusal?.code, host: event.host, port: event.port }, at },
      ];
      if (recorded === EGRESS_BETWEEN_CALLS_RECORDS) logs.push({ level: "warn", message: `egress between calls: ${EGRESS_BETWEEN_CALLS_RECORDS} recorded for this process; any more are not recorded`, at });
      this.logStore.record({ invocationId: `between_${randomBytes(8).toString("hex")}`, packageVersionId, tool: "", kind: "between calls", at, durationMs: 0, isError: !event.allowed, logs });
    };
  }

  async close(): Promise<void> {
    const targets = [...this.targets.values()];
    this.targets.clear();
    await Promise.all(targets.map((target) => target.close().catch(() => undefined)));
    await this.pool.close();
  }
}

/** The process pool's key for a version in a workspace: the bare version id in the default workspace. */
export function processKey(versionId: string, workspaceId: string | undefined): string {
  return workspaceId === undefined || workspaceId === "default" ? versionId : `${versionId}@${workspaceId}`;
}
