// The call context a handler receives (secrets, log, signal, deadline, ids, subject, elicitation), built
// from the MCP request: the runner sends it in `_meta[CALL_META_KEY]` of every tools/call and status
// request. `context(extra)` gives an MCP package's handler the same object.
import { randomUUID } from "node:crypto";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  ElicitResultSchema,
  type ElicitRequestFormParams,
  type ElicitResult,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { ELICITATION_WAIT_SECONDS, TIMEOUT_SECONDS_MAX } from "@caplo/shared/limits";
import { CALL_META_KEY, callMetaSchema, type CallMeta, type CallSubject } from "@caplo/shared/outcome";
import { runtime } from "./runtime.ts";

/** The `extra` argument the MCP SDK passes to every request handler. */
export type HandlerExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export type LogData = Record<string, unknown> | unknown[] | string | number | boolean | null;
export type LogFunction = (message: string, data?: LogData) => void;
export type Log = { debug: LogFunction; info: LogFunction; warn: LogFunction; error: LogFunction };

export type Secrets = {
  /** The value of a secret declared in caplo.yaml. Throws if it is not declared or the call has no value. */
  get(name: string): string;
  /** Whether the call has a value for the secret. */
  has(name: string): boolean;
};

/** A form elicitation: a message and a flat object schema of the fields to ask for. */
export type ElicitRequest = { message: string; requestedSchema: ElicitRequestFormParams["requestedSchema"] };
export type { ElicitResult };

export type CallContext = {
  secrets: Secrets;
  log: Log;
  /** Fires at the deadline or when the call is cancelled. Pass it to fetch and other I/O. */
  signal: AbortSignal;
  /** When the call times out. A wait for the visitor's answer (elicit) moves it later by the wait. */
  deadline: Date;
  /** Write tools only: the same key for every attempt and status check of one confirmed action. */
  idempotencyKey?: string;
  invocationId: string;
  conversationId?: string;
  turnId?: string;
  workspaceId?: string;
  packageVersionId?: string;
  /** The verified customer, for tools that declare subject. Never comes from arguments. */
  subject?: CallSubject;
  /** The verified customer, or a throw when the call has none. */
  requireSubject(): CallSubject;
  /** Whether elicit() can reach the visitor on this call. A tool must work without it. */
  canElicit: boolean;
  /** Ask the visitor for missing details with MCP form elicitation. Throws when canElicit is false. */
  elicit(request: ElicitRequest): Promise<ElicitResult>;
};

/** A server whose client capabilities tell whether the client can answer elicitation. */
type ServerLike = Pick<Server, "getClientCapabilities"> | { server: Pick<Server, "getClientCapabilities"> } | McpServer;

/** Read the runner's call context from a request's `_meta`; undefined when the call carries none. */
export function readCallMeta(meta: Record<string, unknown> | undefined): CallMeta | undefined {
  const raw = meta?.[CALL_META_KEY];
  if (raw === undefined) return undefined;
  const parsed = callMetaSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`invalid call context in _meta["${CALL_META_KEY}"]: ${parsed.error.issues.map((issue) => issue.path.join(".") || issue.message).join(", ")}`);
  return parsed.data;
}

/** The call context of an MCP request handler's `extra`. Pass the server too to learn the client's capabilities. */
export function context(extra: HandlerExtra, server?: ServerLike): CallContext {
  const meta = readCallMeta(extra._meta as Record<string, unknown> | undefined);
  const clientCanElicit = server ? clientElicits(server) : meta?.canElicit === true;
  return createContext(extra, meta, clientCanElicit);
}

function clientElicits(server: ServerLike): boolean {
  const low = "getClientCapabilities" in server ? server : server.server;
  const elicitation = low.getClientCapabilities()?.elicitation as { form?: unknown; url?: unknown } | undefined;
  // An empty elicitation capability means form (the spec's backwards-compatible default).
  return elicitation !== undefined && (elicitation.form !== undefined || elicitation.url === undefined);
}

export function createContext(extra: HandlerExtra, meta: CallMeta | undefined, clientCanElicit: boolean): CallContext {
  const invocationId = meta?.invocationId ?? `local-${randomUUID()}`;
  const clock = deadlineClock(extra.signal, meta ? new Date(meta.deadline) : new Date(Date.now() + TIMEOUT_SECONDS_MAX * 1000));
  const values = meta ? new Map(Object.entries(meta.secrets)) : new Map(runtime().localSecrets);
  const secrets = secretStore(values);
  const log = logger(extra, invocationId, [...values.values()]);
  const canElicit = clientCanElicit && meta?.canElicit !== false;
  const subject = meta?.subject;
  return {
    secrets,
    log,
    signal: clock.signal,
    get deadline() {
      return clock.deadline();
    },
    idempotencyKey: meta?.idempotencyKey,
    invocationId,
    conversationId: meta?.conversationId,
    turnId: meta?.turnId,
    workspaceId: meta?.workspaceId,
    packageVersionId: meta?.packageVersionId,
    subject,
    requireSubject() {
      if (!subject) throw new Error("this call has no verified customer: declare subject in caplo.yaml and let the customer verify");
      return subject;
    },
    canElicit,
    async elicit(request) {
      if (!canElicit) throw new Error("elicitation is not available on this call: check canElicit and carry on without it");
      // The visitor's time to answer does not count against the call's timeout: the deadline stops meanwhile
      // (the runner's clock does too). The wait itself is limited to ELICITATION_WAIT_SECONDS.
      clock.pause();
      try {
        return await extra.sendRequest(
          // The invocation id names the call this question belongs to: over stdio, several calls may be in flight.
          {
            method: "elicitation/create",
            params: { mode: "form", message: request.message, requestedSchema: request.requestedSchema, _meta: { [CALL_META_KEY]: { invocationId } } },
          },
          ElicitResultSchema,
          { signal: extra.signal, timeout: ELICITATION_WAIT_MS + 5000 },
        );
      } finally {
        clock.resume();
      }
    },
  };
}

function secretStore(values: ReadonlyMap<string, string>): Secrets {
  const declared = runtime().declaredSecrets;
  return {
    get(name) {
      if (declared && !declared.has(name)) throw new Error(`secret ${JSON.stringify(name)} is not declared in caplo.yaml secrets`);
      const value = values.get(name);
      if (value === undefined) throw new Error(`secret ${JSON.stringify(name)} has no value for this call`);
      return value;
    },
    has(name) {
      return (!declared || declared.has(name)) && values.has(name);
    },
  };
}

/** How long elicit() waits for the visitor's answer at most (the runner's limit; pass it to an MCP server's elicitInput as its timeout). */
export const ELICITATION_WAIT_MS = ELICITATION_WAIT_SECONDS * 1000;

/**
 * The call's deadline: a signal that aborts when the request is cancelled or the deadline passes, and a
 * deadline that stops while the visitor answers (pause/resume around each elicitation).
 */
function deadlineClock(cancelled: AbortSignal, initial: Date): { signal: AbortSignal; deadline: () => Date; pause: () => void; resume: () => void } {
  const passed = new AbortController();
  let end = initial.getTime();
  let waits = 0;
  let pausedAt = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const ms = end - Date.now();
    const fire = () => passed.abort(new DOMException("The call's deadline has passed", "TimeoutError"));
    if (!Number.isFinite(ms) || ms <= 0) return fire();
    timer = setTimeout(fire, ms);
    // Like AbortSignal.timeout: a pending deadline alone does not keep the process alive.
    timer.unref?.();
  };
  arm();
  return {
    signal: AbortSignal.any([cancelled, passed.signal]),
    deadline: () => new Date(waits > 0 ? end + (Date.now() - pausedAt) : end),
    pause() {
      if (passed.signal.aborted || waits++ > 0) return;
      clearTimeout(timer);
      pausedAt = Date.now();
    },
    resume() {
      if (waits === 0 || --waits > 0 || passed.signal.aborted) return;
      end += Date.now() - pausedAt;
      arm();
    },
  };
}

const LEVELS = { debug: "debug", info: "info", warn: "warning", error: "error" } as const;

/** Log lines go to the client as MCP logging notifications carrying the invocationId; they never throw. */
function logger(extra: HandlerExtra, invocationId: string, secretValues: string[]): Log {
  // Secret values never leave in a log line, whatever the tool passes.
  const hidden = secretValues.filter((value) => value.length >= 4).sort((a, b) => b.length - a.length);
  const redact = (text: string) => hidden.reduce((out, value) => out.split(value).join("[redacted]"), text);
  const send = (level: keyof typeof LEVELS) => (message: string, data?: LogData) => {
    try {
      const payload: Record<string, unknown> = { invocationId, message: redact(String(message)) };
      if (data !== undefined) payload.data = JSON.parse(redact(safeJson(data)));
      extra
        .sendNotification({ method: "notifications/message", params: { level: LEVELS[level], logger: "caplo", data: payload } })
        .catch(() => undefined);
    } catch {
      // A log call never fails the tool (for example without the logging capability).
    }
  };
  return { debug: send("debug"), info: send("info"), warn: send("warn"), error: send("error") };
}

/** JSON text of any value: cycles, bigints and functions become strings instead of throwing. */
function safeJson(value: unknown): string {
  const seen = new WeakSet<object>();
  try {
    return (
      JSON.stringify(value, (_key, v: unknown) => {
        if (typeof v === "bigint") return v.toString();
        if (typeof v === "function" || typeof v === "symbol") return String(v);
        if (v instanceof Error) return { name: v.name, message: v.message };
        if (v !== null && typeof v === "object") {
          if (seen.has(v)) return "[circular]";
          seen.add(v);
        }
        return v;
      }) ?? "null"
    );
  } catch {
    return JSON.stringify(String(value));
  }
}
