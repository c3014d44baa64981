// @caplo/tools: the SDK for Caplo tool packages (runs on Node 24 as .ts, and on Node 20 through tsx).
export { defineTool, isTool, StatusRequestSchema } from "./defineTool.ts";
export type { HandlerResult, StatusRequest, StatusResult, Tool, ToolDefinition } from "./defineTool.ts";
export { applied, pending, rejected, stepUpRequired } from "./outcome.ts";
export type { Applied, Outcome, Pending, Rejected, StepUpRequired } from "./outcome.ts";
export { file, withFiles, FILE_NAME_PATTERN } from "./files.ts";
export type { FileInput, FileType, ToolFile, WithFiles } from "./files.ts";
export { stepUpFromChallenge } from "./challenge.ts";
export { context, ELICITATION_WAIT_MS } from "./context.ts";
export type { CallContext, ElicitRequest, ElicitResult, HandlerExtra, Log, LogData, Secrets } from "./context.ts";
export { serveStdio } from "./stdio.ts";
export type { Connectable, ServeStdioOptions } from "./stdio.ts";
export type { FromSchema, JsonObjectSchema, JsonSchema } from "./schemaTypes.ts";
export {
  CALL_META_KEY,
  EFFECT_META_KEY,
  EFFECT_OUTCOME_CAPABILITY,
  FILES_META_KEY,
  OPERATION_STATUS_CAPABILITY,
  STATUS_METHOD,
  STEP_UP_META_KEY,
} from "@caplo/shared/outcome";
export type { CallMeta, CallSubject, StepUp, StepUpLevel } from "@caplo/shared/outcome";
