// Another package, whose files the escape package must not be able to read.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
export function createServer() {
  const server = new McpServer({ name: "other", version: "1.0.0" });
  server.registerTool("noop", { description: "nothing", inputSchema: {} }, async () => ({ content: [{ type: "text", text: "ok" }] }));
  return server;
}
