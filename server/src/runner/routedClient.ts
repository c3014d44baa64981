// The runner's MCP client of one server, wherever the server runs (a package process, an in-memory
// server): it offers form elicitation, and routes the server's log notifications and elicitation
// requests to the call they belong to, found by the invocation id the message names.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpError, ErrorCode, ElicitRequestSchema, LoggingMessageNotificationSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { CALL_META_KEY } from "@caplo/shared";
import type { ElicitRequest, LogLine } from "./api.ts";
import type { EgressEvent } from "./egressProxy.ts";

/** Where a call in flight takes its server's messages: log lines, egress events and questions to the visitor. */
export type CallRoute = {
  invocationId: string;
  onLog: (line: LogLine) => void;
  onEgress: (event: EgressEvent) => void;
  /** Absent: the call's tool sees a client without the capability. */
  onElicit?: (request: ElicitRequest) => Promise<ElicitResult>;
};

const LEVELS: Record<string, LogLine["level"]> = {
  debug: "debug",
  info: "info",
  notice: "info",
  warning: "warn",
  error: "error",
  critical: "error",
  alert: "error",
  emergency: "error",
};

/** Turns an MCP log notification's params into a log line. */
function toLogLine(params: { level: string; logger?: string; data?: unknown }): LogLine {
  const data = params.data;
  let message: string;
  let extra: unknown;
  if (typeof data === "string") message = data;
  else if (data && typeof data === "object" && typeof (data as { message?: unknown }).message === "string") {
    message = (data as { message: string }).message;
    extra = (data as { data?: unknown }).data;
  } else message = JSON.stringify(data ?? null);
  // Not cut here: the call's CallLog bounds it at once (keeping nothing of the raw line), with the call's
  // secrets known, so that no cut leaves part of one.
  return { level: LEVELS[params.level] ?? "info", message, ...(extra !== undefined && { data: extra }), at: new Date().toISOString() };
}

/** The invocation a server-originated message names, in its params, _meta or log data. */
function namedInvocation(params: Record<string, unknown> | undefined): string | undefined {
  const meta = params?._meta as Record<string, unknown> | undefined;
  const call = meta?.[CALL_META_KEY] as { invocationId?: unknown } | undefined;
  const data = params?.data as { invocationId?: unknown } | undefined;
  for (const candidate of [call?.invocationId, meta?.invocationId, data?.invocationId, params?.logger]) {
    if (typeof candidate === "string") return candidate;
  }
  return undefined;
}

/** A client (not yet connected) and the routes of its calls in flight, which the runner sets per call. */
export function routedClient(): { client: Client; routes: Map<string, CallRoute> } {
  const client = new Client({ name: "caplo-runner", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  const routes = new Map<string, CallRoute>();
  const route = (params: Record<string, unknown> | undefined): CallRoute | undefined => {
    const id = namedInvocation(params);
    if (id && routes.has(id)) return routes.get(id);
    // Without a name, a message can belong only to the one call in flight.
    return routes.size === 1 ? [...routes.values()][0] : undefined;
  };
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    route(notification.params as Record<string, unknown>)?.onLog(toLogLine(notification.params));
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const params = request.params as Record<string, unknown>;
    const found = route(params);
    if (!found?.onElicit) throw new McpError(ErrorCode.InvalidRequest, "elicitation is not available for this call: the visitor cannot answer here");
    if (params.mode === "url") throw new McpError(ErrorCode.InvalidParams, "only form elicitation is supported");
    return found.onElicit({ message: String(params.message ?? ""), requestedSchema: (params.requestedSchema ?? {}) as Record<string, unknown> });
  });
  return { client, routes };
}
