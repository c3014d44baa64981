// The seeds' MCP package: get_order exactly as "MCP packages" shows it, and cancel_order reporting its
// outcome in the result metadata as "Write tools safely" shows for MCP packages.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { EFFECT_META_KEY, EFFECT_OUTCOME_CAPABILITY, context } from "@caplo/tools";
import { z } from "zod";

export function createServer() {
  // The logging capability lets context(extra).log send log lines with each call's result.
  const server = new McpServer(
    { name: "orders", version: "1.0.0" },
    { capabilities: { logging: {}, experimental: { ...EFFECT_OUTCOME_CAPABILITY } } },
  );

  server.registerTool(
    "get_order",
    {
      description: "Look up an order by its number, for example SO-1002.",
      inputSchema: { orderId: z.string().regex(/^SO-[0-9]{4}$/) },
      outputSchema: { orderId: z.string(), status: z.string() },
    },
    async ({ orderId }, extra) => {
      const { secrets, signal, log } = context(extra);
      const response = await fetch(`https://api.shop.example/orders/${encodeURIComponent(orderId)}`, {
        headers: { authorization: `Bearer ${secrets.get("SHOP_API_KEY")}` },
        signal,
      });
      if (!response.ok) throw new Error(`order lookup failed with ${response.status}`);
      const order = await response.json();
      log.info("order found", { orderId });
      const result = { orderId: order.id, status: order.status };
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
    },
  );

  server.registerTool(
    "cancel_order",
    {
      description: "Cancel an order that has not shipped yet, by its number, for example SO-1002.",
      inputSchema: { orderId: z.string().regex(/^SO-[0-9]{4}$/) },
    },
    async ({ orderId }, extra) => {
      const { secrets, signal, idempotencyKey } = context(extra);
      const response = await fetch(`https://api.shop.example/orders/${encodeURIComponent(orderId)}/cancel`, {
        method: "POST",
        headers: { authorization: `Bearer ${secrets.get("SHOP_API_KEY")}`, "idempotency-key": idempotencyKey ?? "" },
        signal,
      });
      const body = await response.json();
      if (response.status === 200) {
        const result = { orderId, status: body.status };
        return {
          content: [{ type: "text", text: JSON.stringify(result) }],
          structuredContent: result,
          _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "applied" } },
        };
      }
      if (response.status === 202) {
        return {
          content: [{ type: "text", text: "The cancellation is being processed." }],
          _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "pending", operationRef: body.operationId } },
        };
      }
      if (response.status === 409) {
        return {
          isError: true,
          content: [{ type: "text", text: body.reason ?? "This order can no longer be cancelled." }],
          _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "not_applied" } },
        };
      }
      // No metadata: Caplo records the outcome as unknown.
      throw new Error(`cancel failed with ${response.status}`);
    },
  );

  return server;
}
