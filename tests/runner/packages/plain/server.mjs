// A plain MCP server without Caplo's outcome capability: its `_meta` outcomes are not trusted, and an
// error result from a write is unknown.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
export function createServer() {
  const server = new McpServer({ name: "plain", version: "1.0.0" });
  server.registerTool("write", { inputSchema: { mode: z.string() } }, async ({ mode }) => {
    if (mode === "error") return { isError: true, content: [{ type: "text", text: "failed" }] };
    if (mode === "claims_not_applied") return { isError: true, content: [{ type: "text", text: "no" }], _meta: { "si.caplo/effect": { version: 1, outcome: "not_applied" } } };
    return { content: [{ type: "text", text: "ok" }] };
  });
  return server;
}
