// A package with fixtures, for `caplo tool test`: a read that echoes and logs, a write with outcomes.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { context, EFFECT_OUTCOME_CAPABILITY } from "@caplo/tools";
import { z } from "zod";

export function createServer() {
  const server = new McpServer({ name: "fixtured", version: "1.0.0" }, { capabilities: { logging: {}, experimental: { ...EFFECT_OUTCOME_CAPABILITY } } });
  server.registerTool("lookup", { description: "Look up an item", inputSchema: { id: z.string().regex(/^IT-[0-9]{3}$/) } }, async ({ id }, extra) => {
    const ctx = context(extra);
    ctx.log.info("looked up", { id });
    const item = { id, name: `Item ${id}`, keyLength: ctx.secrets.get("DEMO_KEY").length };
    return { content: [{ type: "text", text: JSON.stringify(item) }], structuredContent: item };
  });
  server.registerTool("book", { description: "Book an item", inputSchema: { id: z.string(), full: z.boolean().optional() } }, async ({ id, full }, extra) => {
    const ctx = context(extra);
    if (full) return { isError: true, content: [{ type: "text", text: "Fully booked." }], _meta: { "si.caplo/effect": { version: 1, outcome: "not_applied" } } };
    return { content: [{ type: "text", text: `booked ${id}` }], structuredContent: { id, key: ctx.idempotencyKey }, _meta: { "si.caplo/effect": { version: 1, outcome: "applied" } } };
  });
  return server;
}
