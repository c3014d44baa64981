// context(extra) in MCP packages written as the seeds show: McpServer.registerTool handlers and the
// low-level Server with EFFECT_OUTCOME_CAPABILITY.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { CallToolRequestSchema, CallToolResultSchema, ListToolsRequestSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { CALL_META_KEY, EFFECT_META_KEY, EFFECT_OUTCOME_CAPABILITY, context } from "./index.ts";

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

async function connect(server: { connect: Server["connect"] }) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "runner", version: "1" });
  const logs: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params);
  });
  await server.connect(serverSide);
  await client.connect(clientSide);
  clients.push(client);
  return { client, logs };
}

const callMeta = { [CALL_META_KEY]: { invocationId: "inv_7", deadline: new Date(Date.now() + 10_000).toISOString(), secrets: { SHOP_API_KEY: "sk_test_abcdef" }, idempotencyKey: "key_7" } };

describe("context(extra) in an MCP package", () => {
  it("gives an McpServer tool handler secrets, log (with the invocationId), signal and idempotencyKey", async () => {
    const server = new McpServer({ name: "orders", version: "1.0.0" }, { capabilities: { logging: {} } });
    server.registerTool(
      "get_order",
      { description: "Look up an order.", inputSchema: { orderId: z.string().regex(/^SO-[0-9]{4}$/) }, outputSchema: { orderId: z.string(), key: z.string() } },
      async ({ orderId }, extra) => {
        const { secrets, signal, log, idempotencyKey } = context(extra);
        log.info("order found", { orderId });
        const result = { orderId, key: `${secrets.get("SHOP_API_KEY").slice(0, 7)}/${idempotencyKey}/${signal.aborted}` };
        return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
      },
    );
    const { client, logs } = await connect(server);
    const result = await client.request({ method: "tools/call", params: { name: "get_order", arguments: { orderId: "SO-1002" }, _meta: callMeta } }, CallToolResultSchema);
    expect(result.structuredContent).toEqual({ orderId: "SO-1002", key: "sk_test/key_7/false" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(logs).toEqual([{ level: "info", logger: "caplo", data: { invocationId: "inv_7", message: "order found", data: { orderId: "SO-1002" } } }]);
  });

  it("drops log lines without failing the tool when the server lacks the logging capability", async () => {
    const server = new McpServer({ name: "orders", version: "1.0.0" });
    server.registerTool("ping", { description: "Ping." }, async (extra) => {
      context(extra).log.info("dropped");
      return { content: [{ type: "text", text: "pong" }] };
    });
    const { client, logs } = await connect(server);
    expect(await client.callTool({ name: "ping", arguments: {} })).toMatchObject({ content: [{ text: "pong" }] });
    expect(logs).toEqual([]);
  });

  it("passes a low-level Server's outcome metadata through with EFFECT_OUTCOME_CAPABILITY advertised", async () => {
    const server = new Server(
      { name: "orders", version: "1.0.0" },
      { capabilities: { tools: {}, logging: {}, experimental: { ...EFFECT_OUTCOME_CAPABILITY } } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: "cancel_order", inputSchema: { type: "object" } }] }));
    server.setRequestHandler(CallToolRequestSchema, async (_request, extra) => {
      const { idempotencyKey } = context(extra);
      return { content: [{ type: "text", text: "The cancellation is being processed." }], _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "pending", operationRef: `op_${idempotencyKey}` } } };
    });
    const { client } = await connect(server);
    expect(client.getServerCapabilities()?.experimental).toEqual(EFFECT_OUTCOME_CAPABILITY);
    const result = await client.request({ method: "tools/call", params: { name: "cancel_order", arguments: {}, _meta: callMeta } }, CallToolResultSchema);
    expect(result._meta).toEqual({ [EFFECT_META_KEY]: { version: 1, outcome: "pending", operationRef: "op_key_7" } });
  });

  it("learns whether the client can elicit from the server when given one", async () => {
    const server = new McpServer({ name: "slots", version: "1.0.0" });
    server.registerTool("can", { description: "Can elicit?" }, async (extra) => ({ content: [{ type: "text", text: String(context(extra, server).canElicit) }] }));
    const { client } = await connect(server);
    expect(await client.callTool({ name: "can", arguments: {} })).toMatchObject({ content: [{ text: "false" }] });
  });

  it("refuses a malformed call context instead of guessing", async () => {
    const server = new McpServer({ name: "orders", version: "1.0.0" });
    server.registerTool("ping", { description: "Ping." }, async (extra) => ({ content: [{ type: "text", text: context(extra).invocationId }] }));
    const { client } = await connect(server);
    const result = await client.request({ method: "tools/call", params: { name: "ping", arguments: {}, _meta: { [CALL_META_KEY]: { invocationId: 5 } } } }, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ text: expect.stringContaining("invalid call context") }] });
  });
});
