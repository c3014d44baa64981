// What the engine may ask of the runner. The runner (this folder) implements ToolRunner; the engine
// depends on this interface only. Scheduling of status checks belongs to the engine, not here.
import type { CallSubject, PackageVersion, StepUp, WriteOutcome } from "@caplo/shared";

export type LogLine = { level: "debug" | "info" | "warn" | "error"; message: string; data?: unknown; at: string };

/** A file a read tool returned, taken out of the result before the model sees it. */
export type DeliveredFile = { name: string; mimeType: string; size: number; bytes: Uint8Array };

/** An MCP form elicitation request from a tool, already checked against the tool's declared fields. */
export type ElicitRequest = { message: string; requestedSchema: Record<string, unknown> };
export type ElicitResponse =
  | { action: "accept"; content: Record<string, string | number | boolean> }
  | { action: "decline" }
  | { action: "cancel" };

export type CallContextInput = {
  invocationId: string;
  conversationId?: string;
  turnId?: string;
  workspaceId?: string;
  /** Write tools only: the same for every attempt and status check of one confirmed action. */
  idempotencyKey?: string;
  /** The verified customer, for tools that declare subject. Never from the model. */
  subject?: CallSubject;
  /** Secret values for the names the package declares, from the workspace's secret store. */
  secrets: Record<string, string>;
};

export type ToolCallRequest = {
  packageVersionId: string;
  /** The tool's name in its package. */
  tool: string;
  /** The arguments: validated against inputSchema by the runner before the handler runs. */
  args: unknown;
  context: CallContextInput;
  /** Present only where the visitor can answer; otherwise the tool sees a client without the capability. */
  elicit?: (request: ElicitRequest) => Promise<ElicitResponse>;
  signal?: AbortSignal;
};

export type ToolCallResult = {
  invocationId: string;
  /** What the model sees: text content (error message for an error result). Never file bytes or secrets. */
  modelText: string;
  isError: boolean;
  /** The validated structured result, for presentation.result and receipts. */
  structuredContent?: Record<string, unknown>;
  files: DeliveredFile[];
  /** Files the tool returned that were refused (a failed check or scan): the visitor is told they could not be delivered. */
  undelivered?: { name: string; code: string }[];
  /** For write tools: what happened. Reads leave it undefined (or step_up_required). */
  outcome?: WriteOutcome;
  stepUp?: StepUp;
  logs: LogLine[];
  durationMs: number;
};

export type StatusCheckRequest = {
  packageVersionId: string;
  tool: string;
  operationRef?: string;
  /** Must carry the original write's idempotencyKey. */
  context: CallContextInput;
  signal?: AbortSignal;
};

export interface ToolRunner {
  /** Make a built package version callable (idempotent). */
  load(version: PackageVersion): Promise<void>;
  call(request: ToolCallRequest): Promise<ToolCallResult>;
  /** One status check of a pending or unknown write. Any answer other than applied/rejected/pending is unknown. */
  checkStatus(request: StatusCheckRequest): Promise<WriteOutcome>;
  close(): Promise<void>;
}
