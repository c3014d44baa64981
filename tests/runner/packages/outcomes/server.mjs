// A test package that exercises every path of a call: context, logs, timeouts, crashes, write
// outcomes in `_meta`, status checks, files, sizes, output schemas and elicitation.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

const EFFECT = "si.caplo/effect";
const STEP_UP = "si.caplo/step-up";
const CALL = "si.caplo/call";
const text = (value) => [{ type: "text", text: typeof value === "string" ? value : JSON.stringify(value) }];
const log = (extra, message, data) =>
  extra.sendNotification({ method: "notifications/message", params: { level: "info", logger: "caplo", data: { invocationId: extra._meta?.[CALL]?.invocationId, message, data } } });

export function createServer() {
  const server = new McpServer(
    { name: "outcomes", version: "1.0.0" },
    { capabilities: { logging: {}, experimental: { "si.caplo/effect-outcome": { version: 1 }, "si.caplo/operation-status": { version: 1 } } } },
  );
  server.registerTool("echo", { inputSchema: { word: z.string().optional(), ref: z.string().optional() } }, async (args, extra) => {
    const call = extra._meta?.[CALL] ?? {};
    const seen = { args, ...call, secretNames: Object.keys(call.secrets ?? {}) };
    delete seen.secrets;
    await log(extra, `echo with key ${call.secrets?.API_KEY ?? "none"}`);
    return { content: text(`key is ${call.secrets?.API_KEY ?? "none"}`), structuredContent: seen };
  });
  server.registerTool("slow", { inputSchema: { port: z.number().optional() } }, async (args, extra) => {
    await log(extra, "slow started");
    // The handler's fetch gets the call's signal: the runner's abort at the deadline must reach it.
    await fetch("http://allowed.test/hang", { signal: extra.signal }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 60_000));
    return { content: text("too late") };
  });
  server.registerTool("spin", { inputSchema: {} }, async () => {
    for (;;) {}
  });
  server.registerTool("hog", { inputSchema: {} }, async () => {
    const hoard = [];
    for (;;) hoard.push(new Array(1_000_000).fill(hoard.length));
  });
  server.registerTool("crash", { inputSchema: {} }, async () => {
    setTimeout(() => process.exit(3), 10);
    return new Promise(() => undefined);
  });
  server.registerTool("cancel", { inputSchema: { mode: z.string() } }, async ({ mode }, extra) => {
    const key = extra._meta?.[CALL]?.idempotencyKey;
    switch (mode) {
      case "applied": return { content: text({ cancelled: true, key }), structuredContent: { cancelled: true, key }, _meta: { [EFFECT]: { version: 1, outcome: "applied" } } };
      case "plain": return { content: text("done"), structuredContent: { cancelled: true, key } };
      case "not_applied": return { isError: true, content: text("Order already shipped."), _meta: { [EFFECT]: { version: 1, outcome: "not_applied" } } };
      case "pending": return { content: text("Processing."), _meta: { [EFFECT]: { version: 1, outcome: "pending", operationRef: "op_123" } } };
      case "pending_with_content": return { content: text("Processing."), structuredContent: { partial: true }, _meta: { [EFFECT]: { version: 1, outcome: "pending", operationRef: "op_124" } } };
      case "applied_off_schema": return { content: text("done"), structuredContent: { cancelled: "yes" }, _meta: { [EFFECT]: { version: 1, outcome: "applied" } } };
      case "applied_bare": return { content: text("done"), _meta: { [EFFECT]: { version: 1, outcome: "applied" } } };
      case "pending_bad_ref": return { content: text("Processing."), _meta: { [EFFECT]: { version: 1, outcome: "pending", operationRef: "bad\nref" } } };
      case "pending_long_ref": return { content: text("Processing."), _meta: { [EFFECT]: { version: 1, outcome: "pending", operationRef: "x".repeat(257) } } };
      case "pending_max_ref": return { content: text("Processing."), _meta: { [EFFECT]: { version: 1, outcome: "pending", operationRef: "x".repeat(256) } } };
      case "error": return { isError: true, content: text("upstream 500") };
      case "error_claims_applied": return { isError: true, content: text("hmm"), _meta: { [EFFECT]: { version: 1, outcome: "applied" } } };
      case "bad_meta": return { content: text("?"), _meta: { [EFFECT]: { version: 2, outcome: "applied" } } };
      case "step_up": return { content: text("verify again"), _meta: { [STEP_UP]: { level: "high", maxAuthAgeSeconds: 300 } } };
      case "throw": throw new Error("network reset");
      default: return { content: text("?") };
    }
  });
  server.registerTool("files", { inputSchema: { files: z.array(z.object({ uri: z.string(), mimeType: z.string().optional(), blob: z.string() })) } }, async ({ files }) => ({
    content: [{ type: "text", text: "here you go" }, ...files.map((file) => ({ type: "resource", resource: file }))],
  }));
  server.registerTool("big", { inputSchema: { bytes: z.number() } }, async ({ bytes }) => ({ content: [{ type: "text", text: "x".repeat(bytes) }] }));
  // A structured object with its JSON text beside it, as defineTool and the seed's MCP example send it.
  server.registerTool("big_object", { inputSchema: { bytes: z.number() } }, async ({ bytes }) => {
    const value = { data: "x".repeat(bytes) };
    return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
  });
  server.registerTool("typed", { inputSchema: { valid: z.boolean() } }, async ({ valid }) => ({
    content: text("typed"),
    structuredContent: valid ? { orderId: "SO-1002", status: "shipped" } : { orderId: "SO-1002", status: 42 },
  }));
  server.registerTool("ask", { inputSchema: { schema: z.record(z.string(), z.unknown()), message: z.string().optional(), times: z.number().optional() } }, async ({ schema, message, times }) => {
    const answers = [];
    for (let i = 0; i < (times ?? 1); i += 1) {
      try {
        answers.push(await server.server.elicitInput({ mode: "form", message: message ?? "Which size?", requestedSchema: schema }));
      } catch (error) {
        answers.push({ error: String(error.message) });
      }
    }
    return { content: text(answers), structuredContent: { answers } };
  });
  server.server.setRequestHandler(
    z.object({ method: z.literal("caplo/status"), params: z.object({ name: z.string(), operationRef: z.string().optional(), _meta: z.record(z.string(), z.unknown()).optional() }) }),
    async (request) => {
      const key = request.params._meta?.[CALL]?.idempotencyKey;
      switch (request.params.operationRef) {
        case "op-applied": return { content: text({ key }), structuredContent: { cancelled: true, key }, _meta: { [EFFECT]: { version: 1, outcome: "applied" } } };
        case "op-rejected": return { isError: true, content: text("It was not cancelled."), _meta: { [EFFECT]: { version: 1, outcome: "not_applied" } } };
        case "op-pending": return { content: text("still going"), _meta: { [EFFECT]: { version: 1, outcome: "pending", operationRef: "op-pending" } } };
        case "op-weird": return { whatever: 1 };
        default: throw new Error("provider cannot tell");
      }
    },
  );
  return server;
}
