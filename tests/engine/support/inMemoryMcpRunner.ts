// TEST DOUBLE of the ToolRunner: runs real MCP SDK servers in this process over the SDK's
// InMemoryTransport (no sandbox, no Node 24). It maps outcomes with the real runner's own mapping
// (server/src/runner/outcomeMapping.ts), validates arguments with its validator, sends the call context
// in `_meta` and fills the subject selector as the runner does, so engine tests exercise the same
// contract. Used where a test must control or crash the tool's backend; the real runner is tested too.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { CallToolResultSchema, ElicitRequestSchema, ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { CALL_META_KEY, STATUS_METHOD, type CallMeta, type PackageVersion, type WriteOutcome } from "@caplo/shared";
import type { CallContextInput, ElicitRequest, StatusCheckRequest, ToolCallRequest, ToolCallResult, ToolRunner } from "../../../server/src/runner/api.ts";
import { mapStatusResult, mapWriteResult, readStepUp, type ResultShape } from "../../../server/src/runner/outcomeMapping.ts";
import { validateAgainst } from "../../../server/src/runner/schemaValidator.ts";
import { extractFiles, undeliveredFiles } from "../../../server/src/runner/fileExtraction.ts";

type Loaded = { version: PackageVersion; plain: Client; eliciting: Client; current?: (request: ElicitRequest) => Promise<unknown> };

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content
    .map((item) => (item && typeof item === "object" && (item as { type?: unknown }).type === "text" ? String((item as { text?: unknown }).text ?? "") : ""))
    .filter(Boolean)
    .join("\n");
}

function meta(context: CallContextInput, version: PackageVersion, timeoutSeconds: number, canElicit: boolean): CallMeta {
  return {
    invocationId: context.invocationId,
    deadline: new Date(Date.now() + timeoutSeconds * 1000).toISOString(),
    secrets: context.secrets,
    ...(context.idempotencyKey && { idempotencyKey: context.idempotencyKey }),
    ...(context.conversationId && { conversationId: context.conversationId }),
    ...(context.turnId && { turnId: context.turnId }),
    packageVersionId: version.id,
    ...(context.subject && { subject: context.subject }),
    canElicit,
  };
}

export class InMemoryMcpRunner implements ToolRunner {
  private readonly factories: Map<string, () => McpServer>;
  private readonly loaded = new Map<string, Loaded>();
  /** Every call and status check, in order (what a test asserts on besides the backend). */
  readonly calls: { kind: "call" | "status"; tool: string; args?: unknown; idempotencyKey?: string; operationRef?: string }[] = [];

  /** `factories` maps a package name to a function creating a fresh MCP server for it. */
  constructor(factories: Record<string, () => McpServer>) {
    this.factories = new Map(Object.entries(factories));
  }

  async load(version: PackageVersion): Promise<void> {
    if (this.loaded.has(version.id)) return;
    const factory = this.factories.get(version.name);
    if (!factory) throw new Error(`InMemoryMcpRunner: no server for package ${version.name}`);
    const connect = async (elicitation: boolean) => {
      const server = factory();
      const client = new Client({ name: "caplo-test-runner", version: "1.0.0" }, { capabilities: elicitation ? { elicitation: { form: {} } } : {} });
      const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
      await server.connect(serverTransport);
      await client.connect(clientTransport);
      return client;
    };
    const entry: Loaded = { version, plain: await connect(false), eliciting: await connect(true) };
    entry.eliciting.setRequestHandler(ElicitRequestSchema, async (request) => {
      const handler = entry.current;
      if (!handler) return { action: "cancel" };
      const params = request.params as { message: string; requestedSchema: Record<string, unknown> };
      return (await handler({ message: params.message, requestedSchema: params.requestedSchema })) as { action: "accept" | "decline" | "cancel" };
    });
    this.loaded.set(version.id, entry);
  }

  async call(request: ToolCallRequest): Promise<ToolCallResult> {
    const started = Date.now();
    const entry = this.loaded.get(request.packageVersionId);
    const tool = entry?.version.tools.find((candidate) => candidate.name === request.tool);
    const isWrite = tool?.policy.effect === "write";
    const done = (result: Partial<ToolCallResult> & { modelText: string; isError: boolean }): ToolCallResult => ({
      invocationId: request.context.invocationId,
      files: [],
      logs: [],
      durationMs: Date.now() - started,
      ...result,
    });
    const refuse = (message: string) => done({ modelText: message, isError: true, ...(isWrite && { outcome: { outcome: "not_applied", message } as WriteOutcome }) });
    if (!entry || !tool) return refuse(`Tool '${request.tool}' is not loaded.`);
    let args = request.args as Record<string, unknown>;
    if (tool.policy.subject) {
      if (!request.context.subject) return refuse("This tool needs a verified customer.");
      const selector = tool.policy.subject.selector;
      if (selector && Object.hasOwn(args, selector)) return refuse(`Invalid arguments: /${selector} is filled by Caplo.`);
      if (selector && request.context.subject.ref) args = { ...args, [selector]: request.context.subject.ref };
    }
    const issues = validateAgainst(tool.inputSchema, args);
    if (issues.length) return refuse(`Invalid arguments: ${issues.map((issue) => issue.message).join("; ")}`);
    this.calls.push({ kind: "call", tool: request.tool, args, ...(request.context.idempotencyKey && { idempotencyKey: request.context.idempotencyKey }) });
    const client = request.elicit ? entry.eliciting : entry.plain;
    if (request.elicit) entry.current = request.elicit;
    let shape: ResultShape;
    let files: ToolCallResult["files"] = [];
    let undelivered: NonNullable<ToolCallResult["undelivered"]> = [];
    try {
      const raw = await client.request(
        { method: "tools/call", params: { name: request.tool, arguments: args, _meta: { [CALL_META_KEY]: meta(request.context, entry.version, tool.policy.timeoutSeconds, Boolean(request.elicit)) } } },
        CallToolResultSchema,
        { timeout: tool.policy.timeoutSeconds * 1000 },
      );
      const presentation = tool.policy.presentation;
      const extraction = extractFiles(raw.content, presentation && "files" in presentation ? presentation.files : undefined);
      files = extraction.files;
      undelivered = undeliveredFiles(extraction);
      shape = {
        ...(raw.isError !== undefined && { isError: raw.isError }),
        text: [textOf(extraction.content), ...extraction.notes].filter(Boolean).join("\n"),
        ...(raw.structuredContent && { structuredContent: raw.structuredContent as Record<string, unknown> }),
        ...(raw._meta && { meta: raw._meta as Record<string, unknown> }),
      };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return done({ modelText: message, isError: true, ...(isWrite && { outcome: { outcome: "unknown", reason: message } as WriteOutcome }) });
    } finally {
      if (request.elicit) entry.current = undefined;
    }
    const stepUp = readStepUp(shape.meta);
    if (!isWrite) {
      return done({ modelText: shape.text, isError: Boolean(shape.isError), files, ...(undelivered.length > 0 && { undelivered }), ...(shape.structuredContent && { structuredContent: shape.structuredContent }), ...(stepUp && { stepUp }) });
    }
    const outcome = mapWriteResult(shape, entry.version.type === "function" || entry.version.effectOutcomes);
    return done({
      modelText: shape.text,
      isError: Boolean(shape.isError),
      ...(shape.structuredContent && { structuredContent: shape.structuredContent }),
      outcome,
      ...(outcome.outcome === "step_up_required" && { stepUp: outcome.stepUp }),
    });
  }

  async checkStatus(request: StatusCheckRequest): Promise<WriteOutcome> {
    const entry = this.loaded.get(request.packageVersionId);
    const tool = entry?.version.tools.find((candidate) => candidate.name === request.tool);
    if (!entry || !tool) return { outcome: "unknown", reason: "not loaded" };
    this.calls.push({ kind: "status", tool: request.tool, ...(request.context.idempotencyKey && { idempotencyKey: request.context.idempotencyKey }), ...(request.operationRef && { operationRef: request.operationRef }) });
    try {
      const raw = await entry.plain.request(
        {
          method: STATUS_METHOD,
          params: {
            name: request.tool,
            ...(request.operationRef && { operationRef: request.operationRef }),
            _meta: { [CALL_META_KEY]: meta(request.context, entry.version, tool.policy.timeoutSeconds, false) },
          },
        },
        ResultSchema.passthrough(),
      );
      const result = raw as { isError?: boolean; content?: unknown; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown> };
      return mapStatusResult({
        ...(result.isError !== undefined && { isError: result.isError }),
        text: textOf(result.content),
        ...(result.structuredContent && { structuredContent: result.structuredContent }),
        ...(result._meta && { meta: result._meta }),
      });
    } catch (error) {
      return { outcome: "unknown", reason: error instanceof Error ? error.message : String(error) };
    }
  }

  async close(): Promise<void> {
    for (const entry of this.loaded.values()) {
      await entry.plain.close();
      await entry.eliciting.close();
    }
    this.loaded.clear();
  }
}
