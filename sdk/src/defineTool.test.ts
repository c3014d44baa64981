import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CallToolResultSchema, ElicitRequestSchema, LoggingMessageNotificationSchema, type LoggingMessageNotification } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { CALL_META_KEY, EFFECT_META_KEY, EFFECT_OUTCOME_CAPABILITY, OPERATION_STATUS_CAPABILITY, STATUS_METHOD, STEP_UP_META_KEY, type CallMeta } from "@caplo/shared/outcome";
import { applied, defineTool, pending, rejected, stepUpRequired, type CallContext, type Tool } from "./index.ts";
import { setDeclaredSecrets } from "./runtime.ts";

type Connected = { client: Client; logs: LoggingMessageNotification["params"][] };
const open: Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close()));
  setDeclaredSecrets([]);
  (globalThis as Record<symbol, unknown>)[Symbol.for("si.caplo/tools.runtime")] = undefined;
});

async function connect(tool: Tool<never, never> | Tool, options: { elicitation?: boolean } = {}): Promise<Connected> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "test", version: "1" }, { capabilities: options.elicitation ? { elicitation: { form: {} } } : {} });
  const logs: Connected["logs"] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params);
  });
  await (tool as Tool).createServer().connect(serverSide);
  await client.connect(clientSide);
  open.push(client);
  return { client, logs };
}

const meta = (extra: Partial<CallMeta> = {}): Record<string, unknown> => ({
  [CALL_META_KEY]: { invocationId: "inv_1", deadline: new Date(Date.now() + 10_000).toISOString(), secrets: {}, ...extra },
});

async function call(client: Client, name: string, args: Record<string, unknown>, callMeta = meta()) {
  return client.request({ method: "tools/call", params: { name, arguments: args, _meta: callMeta } }, CallToolResultSchema);
}

const echo = (handler: (args: { value: string }, ctx: CallContext) => unknown, extra: Partial<Parameters<typeof defineTool>[0]> = {}) =>
  defineTool({
    name: "echo",
    description: "Echo a value.",
    inputSchema: { type: "object", properties: { value: { type: "string" } }, required: ["value"], additionalProperties: false },
    handler: handler as never,
    ...extra,
  });

describe("function tool results", () => {
  it("turns a plain object into structuredContent, its JSON text, and applied", async () => {
    const { client } = await connect(echo(({ value }) => ({ value, length: value.length })));
    const result = await call(client, "echo", { value: "abc" });
    expect(result).toEqual({
      content: [{ type: "text", text: '{"value":"abc","length":3}' }],
      structuredContent: { value: "abc", length: 3 },
      _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "applied" } },
    });
  });

  it("turns a string into text content", async () => {
    const { client } = await connect(echo(({ value }) => `you said ${value}`));
    const result = await call(client, "echo", { value: "hi" });
    expect(result.content).toEqual([{ type: "text", text: "you said hi" }]);
    expect(result.structuredContent).toBeUndefined();
  });

  it("maps applied(value) like the value itself", async () => {
    const { client } = await connect(echo(({ value }) => applied({ value })));
    expect((await call(client, "echo", { value: "x" })).structuredContent).toEqual({ value: "x" });
  });

  it("maps rejected to an error result with outcome not_applied", async () => {
    const { client } = await connect(echo(() => rejected("This order can no longer be cancelled.")));
    expect(await call(client, "echo", { value: "x" })).toEqual({
      isError: true,
      content: [{ type: "text", text: "This order can no longer be cancelled." }],
      _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "not_applied" } },
    });
  });

  it("maps pending to outcome pending with its operationRef", async () => {
    const { client } = await connect(echo(() => pending("op_123", "The cancellation is being processed.")));
    expect(await call(client, "echo", { value: "x" })).toEqual({
      content: [{ type: "text", text: "The cancellation is being processed." }],
      _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "pending", operationRef: "op_123" } },
    });
  });

  it("leaves the outcome unknown when pending gets an operationRef that is not 1 to 256 printable ASCII", async () => {
    const { client } = await connect(echo(() => pending("x".repeat(257))));
    const result = await call(client, "echo", { value: "x" });
    expect(result.isError).toBe(true);
    expect(result._meta?.[EFFECT_META_KEY]).toBeUndefined();
  });

  it("maps stepUpRequired to step-up metadata and applies nothing", async () => {
    const { client } = await connect(echo(() => stepUpRequired({ level: "high", maxAuthAgeSeconds: 300 })));
    const result = await call(client, "echo", { value: "x" });
    expect(result.isError).toBe(true);
    expect(result._meta).toEqual({ [STEP_UP_META_KEY]: { level: "high", maxAuthAgeSeconds: 300 } });
  });

  it("turns a throw into an error result with the message and no outcome (unknown)", async () => {
    const { client } = await connect(echo(() => {
      throw new Error("cancel failed with 500");
    }));
    expect(await call(client, "echo", { value: "x" })).toEqual({ isError: true, content: [{ type: "text", text: "cancel failed with 500" }] });
  });

  it("refuses arguments that do not match inputSchema before the handler runs (not applied)", async () => {
    let ran = false;
    const { client } = await connect(echo(() => {
      ran = true;
      return "ran";
    }));
    const result = await call(client, "echo", { value: 5 });
    expect(ran).toBe(false);
    expect(result.isError).toBe(true);
    expect(result._meta).toEqual({ [EFFECT_META_KEY]: { version: 1, outcome: "not_applied" } });
  });

  it("fails a result that does not match outputSchema, leaving the outcome unknown", async () => {
    const tool = echo(() => ({ wrong: true }), { outputSchema: { type: "object", properties: { value: { type: "string" } }, required: ["value"] } });
    const { client } = await connect(tool);
    const result = await call(client, "echo", { value: "x" });
    expect(result).toMatchObject({ isError: true, content: [{ text: expect.stringContaining("outputSchema") }] });
    expect(result._meta?.[EFFECT_META_KEY]).toBeUndefined();
  });

  it("lists exactly its one tool with both schemas", async () => {
    const outputSchema = { type: "object", properties: { value: { type: "string" } } } as const;
    const { client } = await connect(echo(() => "x", { outputSchema }));
    const { tools } = await client.listTools();
    expect(tools).toEqual([{ name: "echo", description: "Echo a value.", inputSchema: expect.objectContaining({ type: "object" }), outputSchema }]);
  });
});

describe("capabilities and status checks", () => {
  const cancel = defineTool({
    name: "cancel_order",
    description: "Cancel an order.",
    inputSchema: { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"] },
    handler: ({ orderId }) => ({ orderId, status: "cancelled" }),
    status: ({ operationRef }, { idempotencyKey }) => {
      if (operationRef === "op_applied") return applied({ orderId: "SO-1002", status: "cancelled", key: idempotencyKey });
      if (operationRef === "op_rejected") return rejected("The order was not cancelled.");
      if (operationRef === "op_pending") return pending("op_pending");
      if (operationRef === "op_plain") return { orderId: "SO-1002" } as never;
      throw new Error("the provider cannot tell");
    },
  });
  const status = (client: Client, params: Record<string, unknown>) =>
    client.request({ method: STATUS_METHOD, params: { name: "cancel_order", ...params, _meta: meta({ idempotencyKey: "key_1" }) } } as never, CallToolResultSchema);

  it("advertises the effect outcome capability, and operation status only with a status handler", async () => {
    const withStatus = await connect(cancel);
    expect(withStatus.client.getServerCapabilities()?.experimental).toEqual({ ...EFFECT_OUTCOME_CAPABILITY, ...OPERATION_STATUS_CAPABILITY });
    const without = await connect(echo(() => "x"));
    expect(without.client.getServerCapabilities()?.experimental).toEqual({ ...EFFECT_OUTCOME_CAPABILITY });
  });

  it("answers STATUS_METHOD with applied, not applied or pending, passing operationRef and the idempotency key", async () => {
    const { client } = await connect(cancel);
    expect(await status(client, { operationRef: "op_applied" })).toMatchObject({
      structuredContent: { orderId: "SO-1002", status: "cancelled", key: "key_1" },
      _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "applied" } },
    });
    expect(await status(client, { operationRef: "op_rejected" })).toMatchObject({ isError: true, _meta: { [EFFECT_META_KEY]: { outcome: "not_applied" } } });
    expect(await status(client, { operationRef: "op_pending" })).toMatchObject({ _meta: { [EFFECT_META_KEY]: { outcome: "pending", operationRef: "op_pending" } } });
  });

  it("leaves the write unknown when status returns anything else or throws", async () => {
    const { client } = await connect(cancel);
    for (const operationRef of ["op_plain", "op_throw"]) {
      const result = await status(client, { operationRef });
      expect(result.isError).toBe(true);
      expect(result._meta?.[EFFECT_META_KEY]).toBeUndefined();
    }
  });
});

describe("the call context", () => {
  it("carries every id, the deadline and the idempotency key from the call's _meta", async () => {
    let seen: CallContext | undefined;
    const { client } = await connect(echo((_args, ctx) => {
      seen = ctx;
      return "ok";
    }));
    const deadline = new Date(Date.now() + 5000);
    const subject = { id: "cus_1", level: "standard" as const, authTime: "2026-01-01T00:00:00Z" };
    await call(client, "echo", { value: "x" }, meta({
      deadline: deadline.toISOString(), idempotencyKey: "key_9", conversationId: "conv_1", turnId: "turn_1", workspaceId: "ws_1", packageVersionId: "pkg@sha256:ab", subject,
    }));
    expect(seen).toMatchObject({ invocationId: "inv_1", idempotencyKey: "key_9", conversationId: "conv_1", turnId: "turn_1", workspaceId: "ws_1", packageVersionId: "pkg@sha256:ab", subject });
    expect(seen!.deadline.getTime()).toBe(deadline.getTime());
    expect(seen!.requireSubject()).toEqual(subject);
  });

  it("requireSubject throws when the call has no verified customer", async () => {
    const { client } = await connect(echo((_args, ctx) => ctx.requireSubject().id));
    const result = await call(client, "echo", { value: "x" });
    expect(result).toMatchObject({ isError: true, content: [{ text: expect.stringContaining("no verified customer") }] });
  });

  it("secrets.get returns a declared secret's value and throws for an undeclared or missing one", async () => {
    setDeclaredSecrets(["SHOP_API_KEY", "OTHER"]);
    const { client } = await connect(echo(({ value }, { secrets }) => (secrets.has(value) ? `has ${secrets.get(value).length}` : secrets.get(value))));
    const secrets = { SHOP_API_KEY: "sk_live_123456", NOT_DECLARED: "zzz" };
    expect((await call(client, "echo", { value: "SHOP_API_KEY" }, meta({ secrets }))).content).toEqual([{ type: "text", text: "has 14" }]);
    const undeclared = await call(client, "echo", { value: "NOT_DECLARED" }, meta({ secrets }));
    expect(undeclared).toMatchObject({ isError: true, content: [{ text: 'secret "NOT_DECLARED" is not declared in caplo.yaml secrets' }] });
    const missing = await call(client, "echo", { value: "OTHER" }, meta({ secrets }));
    expect(missing).toMatchObject({ isError: true, content: [{ text: 'secret "OTHER" has no value for this call' }] });
  });

  it("sends log lines as MCP logging notifications with the invocationId, never with a secret value", async () => {
    const tool = echo((_args, { log, secrets }) => {
      log.info("order found", { orderId: "SO-1002", token: secrets.get("KEY") });
      log.warn(`calling with ${secrets.get("KEY")}`);
      log.debug("debug");
      const circular: Record<string, unknown> = {};
      circular.self = circular;
      log.error("circular", circular);
      return "done";
    });
    const { client, logs } = await connect(tool);
    await call(client, "echo", { value: "x" }, meta({ secrets: { KEY: "sk_secret_value" } }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(logs).toEqual([
      { level: "info", logger: "caplo", data: { invocationId: "inv_1", message: "order found", data: { orderId: "SO-1002", token: "[redacted]" } } },
      { level: "warning", logger: "caplo", data: { invocationId: "inv_1", message: "calling with [redacted]" } },
      { level: "debug", logger: "caplo", data: { invocationId: "inv_1", message: "debug" } },
      { level: "error", logger: "caplo", data: { invocationId: "inv_1", message: "circular", data: { self: "[circular]" } } },
    ]);
    expect(JSON.stringify(logs)).not.toContain("sk_secret_value");
  });

  it("fires signal at the deadline", async () => {
    const tool = echo((_args, { signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error(`aborted: ${(signal.reason as Error).name}`)))));
    const { client } = await connect(tool);
    const result = await call(client, "echo", { value: "x" }, meta({ deadline: new Date(Date.now() + 100).toISOString() }));
    expect(result).toMatchObject({ isError: true, content: [{ text: "aborted: TimeoutError" }] });
  });

  it("fires signal when the request is cancelled", async () => {
    let aborted: Promise<boolean> | undefined;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const tool = echo((_args, { signal }) => {
      aborted = new Promise((resolve) => signal.addEventListener("abort", () => resolve(true)));
      started();
      return new Promise(() => undefined);
    });
    const { client } = await connect(tool);
    const controller = new AbortController();
    const request = client.request({ method: "tools/call", params: { name: "echo", arguments: { value: "x" }, _meta: meta() } }, CallToolResultSchema, { signal: controller.signal });
    await running;
    controller.abort();
    await expect(request).rejects.toThrow();
    expect(await aborted).toBe(true);
  });

  it("can elicit only when the client has the capability and the call allows it", async () => {
    const tool = echo(async (_args, ctx) => {
      if (!ctx.canElicit) return "no elicitation";
      const answer = await ctx.elicit({ message: "Which day?", requestedSchema: { type: "object", properties: { day: { type: "string" } }, required: ["day"] } });
      return answer.action === "accept" ? `day ${String(answer.content?.day)}` : answer.action;
    });
    const without = await connect(tool);
    expect((await call(without.client, "echo", { value: "x" })).content).toEqual([{ type: "text", text: "no elicitation" }]);

    const withIt = await connect(tool, { elicitation: true });
    withIt.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      expect(request.params).toMatchObject({ mode: "form", message: "Which day?" });
      return { action: "accept", content: { day: "Monday" } };
    });
    expect((await call(withIt.client, "echo", { value: "x" })).content).toEqual([{ type: "text", text: "day Monday" }]);
    expect((await call(withIt.client, "echo", { value: "x" }, meta({ canElicit: false }))).content).toEqual([{ type: "text", text: "no elicitation" }]);
  });

  it("works without a runner's _meta (local MCP clients): a fresh invocationId and a 30 s deadline", async () => {
    let seen: CallContext | undefined;
    const { client } = await connect(echo((_args, ctx) => {
      seen = ctx;
      return "ok";
    }));
    await client.callTool({ name: "echo", arguments: { value: "x" } });
    expect(seen!.invocationId).toMatch(/^local-/);
    expect(seen!.deadline.getTime() - Date.now()).toBeGreaterThan(20_000);
    expect(seen!.idempotencyKey).toBeUndefined();
  });
});
