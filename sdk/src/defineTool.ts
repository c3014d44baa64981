// defineTool: a function package's one tool, and its wrapper as a one-tool MCP server. The wrapper maps
// what the handler returns to an MCP result: a plain object → structuredContent + JSON text, a string →
// text, withFiles(result, ...files) → that result plus an embedded resource with a blob per file,
// rejected → not applied, pending → pending, stepUpRequired → step-up metadata, a throw → an error
// result the model sees (outcome unknown). It advertises EFFECT_OUTCOME_CAPABILITY, and
// OPERATION_STATUS_CAPABILITY with a STATUS_METHOD handler when the tool defines `status`.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import {
  EFFECT_META_KEY,
  EFFECT_OUTCOME_CAPABILITY,
  OPERATION_STATUS_CAPABILITY,
  STATUS_METHOD,
  STEP_UP_META_KEY,
  statusParamsSchema,
} from "@caplo/shared/outcome";
import { createContext, readCallMeta, type CallContext } from "./context.ts";
import { OUTCOME_TAG, outcomeOf, type Applied, type Pending, type Rejected, type StepUpRequired } from "./outcome.ts";
import { fileResource, isWithFiles, type WithFiles } from "./files.ts";
import type { FromSchema, JsonObjectSchema } from "./schemaTypes.ts";

/**
 * What a handler may return. A plain value (or applied(value)) is applied; withFiles(value, ...files)
 * adds files for the visitor (read tools with presentation.files).
 */
export type HandlerResult<Output> = Output | string | Applied<Output> | Rejected | Pending | StepUpRequired | WithFiles<Output | string>;
/** What a status check may return; any other value leaves the write unknown. */
export type StatusResult<Output> = Applied<Output> | Rejected | Pending;
export type StatusRequest = { operationRef?: string };

export type ToolDefinition<Input, Output> = {
  /** Lowercase letters, digits and underscores, starting with a letter, at most 48 characters. */
  name: string;
  /** What the tool does and when to use it: the model chooses tools by this text. */
  description: string;
  inputSchema: JsonObjectSchema;
  outputSchema?: JsonObjectSchema;
  handler(args: Input, ctx: CallContext): HandlerResult<Output> | Promise<HandlerResult<Output>>;
  /** Optional, for write tools: what happened to a pending or unknown write. */
  status?(request: StatusRequest, ctx: CallContext): StatusResult<Output> | Promise<StatusResult<Output>>;
};

const TOOL_TAG: unique symbol = Symbol.for("si.caplo/tools.tool") as never;

export type Tool<Input = unknown, Output = unknown> = Readonly<ToolDefinition<Input, Output>> & {
  readonly [TOOL_TAG]: true;
  /** A one-tool MCP server for this tool (what the runner and serveStdio connect to a transport). */
  createServer(): Server;
};

type Or<T, Fallback> = [T] extends [never] ? Fallback : T;
type OutputOf<S> = S extends { readonly properties: unknown } ? FromSchema<S> : Record<string, unknown>;

/**
 * Define a function package's tool. Give `<Input, Output>` explicitly, or let them be read from
 * inputSchema and outputSchema.
 */
export function defineTool<
  Input = never,
  Output = never,
  const InSchema extends JsonObjectSchema = JsonObjectSchema,
  const OutSchema extends JsonObjectSchema = JsonObjectSchema,
>(
  definition: ToolDefinition<Or<Input, FromSchema<InSchema>>, Or<Output, OutputOf<OutSchema>>> & { inputSchema: InSchema; outputSchema?: OutSchema },
): Tool<Or<Input, FromSchema<InSchema>>, Or<Output, OutputOf<OutSchema>>> {
  const tool = {
    ...definition,
    [TOOL_TAG]: true as const,
    createServer: () => createToolServer(tool as Tool),
  };
  return Object.freeze(tool) as unknown as Tool<Or<Input, FromSchema<InSchema>>, Or<Output, OutputOf<OutSchema>>>;
}

/** Whether a value is a tool made by defineTool (of any copy of this SDK). */
export function isTool(value: unknown): value is Tool {
  return value !== null && typeof value === "object" && (value as { [TOOL_TAG]?: unknown })[TOOL_TAG] === true;
}

/** The request an MCP package answers for status checks: method STATUS_METHOD, params name and operationRef. */
export const StatusRequestSchema = z.object({ method: z.literal(STATUS_METHOD), params: statusParamsSchema });

const PACKAGE_VERSION = "0.2.0";
const validators = new AjvJsonSchemaValidator();

function createToolServer(tool: Tool): Server {
  const experimental = { ...EFFECT_OUTCOME_CAPABILITY, ...(tool.status ? OPERATION_STATUS_CAPABILITY : {}) };
  const server = new Server(
    { name: tool.name, version: PACKAGE_VERSION },
    { capabilities: { tools: {}, logging: {}, experimental } },
  );
  const validateInput = validators.getValidator<unknown>(tool.inputSchema);
  const validateOutput = tool.outputSchema ? validators.getValidator<unknown>(tool.outputSchema) : undefined;
  const clientCanElicit = () => {
    const elicitation = server.getClientCapabilities()?.elicitation as { form?: unknown; url?: unknown } | undefined;
    return elicitation !== undefined && (elicitation.form !== undefined || elicitation.url === undefined);
  };

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      {
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema as { type: "object"; [key: string]: unknown },
        ...(tool.outputSchema && { outputSchema: tool.outputSchema as { type: "object"; [key: string]: unknown } }),
      },
    ],
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    if (request.params.name !== tool.name) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(request.params.name)}`);
    const args = request.params.arguments ?? {};
    const valid = validateInput(args);
    // The handler never ran, so nothing was applied.
    if (!valid.valid) return notApplied(`invalid arguments: ${valid.errorMessage ?? "they do not match inputSchema"}`);
    try {
      const ctx = createContext(extra, readCallMeta(extra._meta as Record<string, unknown> | undefined), clientCanElicit());
      const value = await tool.handler(args, ctx);
      return handlerResult(value, validateOutput);
    } catch (error) {
      return thrown(error);
    }
  });

  const status = tool.status;
  if (status) {
    server.setRequestHandler(StatusRequestSchema, async (request, extra): Promise<CallToolResult> => {
      if (request.params.name !== tool.name) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(request.params.name)}`);
      try {
        const meta = readCallMeta(request.params._meta ?? (extra._meta as Record<string, unknown> | undefined));
        const ctx = createContext(extra, meta, false);
        const operationRef = request.params.operationRef;
        const value = await status(operationRef === undefined ? {} : { operationRef }, ctx);
        const outcome = outcomeOf(value);
        if (!outcome || outcome[OUTCOME_TAG] === "step_up_required") {
          return { isError: true, content: [{ type: "text", text: "status returned neither applied(result), rejected(message) nor pending(operationRef): the outcome stays unknown" }] };
        }
        return handlerResult(value, validateOutput);
      } catch (error) {
        return thrown(error);
      }
    });
  }
  return server;
}

function effect(outcome: "applied" | "not_applied"): Record<string, unknown>;
function effect(outcome: "pending", operationRef: string): Record<string, unknown>;
function effect(outcome: "applied" | "not_applied" | "pending", operationRef?: string): Record<string, unknown> {
  return { [EFFECT_META_KEY]: operationRef === undefined ? { version: 1, outcome } : { version: 1, outcome, operationRef } };
}

function notApplied(message: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: message }], _meta: effect("not_applied") };
}

/** A throw: the message goes to the model as an error result, and the outcome is unknown (no metadata). */
function thrown(error: unknown): CallToolResult {
  const message = error instanceof Error ? error.message : String(error);
  return { isError: true, content: [{ type: "text", text: message || "the tool failed" }] };
}

type Validate = (value: unknown) => { valid: boolean; errorMessage?: string };

function handlerResult(value: unknown, validateOutput: Validate | undefined): CallToolResult {
  if (isWithFiles(value)) {
    const inner = outcomeOf(value.result);
    if (inner && inner[OUTCOME_TAG] !== "applied") {
      return { isError: true, content: [{ type: "text", text: "withFiles() carries a result (an object or a string), not rejected, pending or stepUpRequired" }] };
    }
    const result = appliedResult(inner ? inner.result : value.result, validateOutput);
    // A result that failed its checks delivers no files either.
    if (result.isError) return result;
    return { ...result, content: [...result.content, ...value.files.map(fileResource)] };
  }
  const outcome = outcomeOf(value);
  if (outcome) {
    switch (outcome[OUTCOME_TAG]) {
      case "not_applied":
        return notApplied(outcome.message);
      case "pending": {
        const { operationRef, message } = outcome;
        return { content: [{ type: "text", text: message ?? "The request was accepted and is still being processed." }], _meta: effect("pending", operationRef) };
      }
      case "step_up_required": {
        const { stepUp } = outcome;
        const text = `The customer must verify again (level ${stepUp.level}${stepUp.maxAuthAgeSeconds === undefined ? "" : `, within ${stepUp.maxAuthAgeSeconds} seconds`}) before this can run. Nothing was applied.`;
        return { isError: true, content: [{ type: "text", text }], _meta: { [STEP_UP_META_KEY]: stepUp } };
      }
      case "applied":
        return appliedResult(outcome.result, validateOutput);
    }
  }
  return appliedResult(value, validateOutput);
}

function appliedResult(value: unknown, validateOutput: Validate | undefined): CallToolResult {
  if (typeof value === "string") return { content: [{ type: "text", text: value }], _meta: effect("applied") };
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    // The handler ran, so the change may have happened: unknown, not "not applied".
    return { isError: true, content: [{ type: "text", text: `the handler returned ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}; return an object, a string or an outcome` }] };
  }
  if (validateOutput) {
    const valid = validateOutput(value);
    if (!valid.valid) return { isError: true, content: [{ type: "text", text: `the result does not match outputSchema: ${valid.errorMessage ?? "invalid"}` }] };
  }
  const structuredContent = value as Record<string, unknown>;
  return { content: [{ type: "text", text: JSON.stringify(structuredContent) }], structuredContent, _meta: effect("applied") };
}
