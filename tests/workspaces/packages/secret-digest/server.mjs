// A test package that says which value of its declared secret API_KEY its call received, as a digest (never
// the value), with its workspace and its process id (the same warm process answers call after call).
import { createHash } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { context } from "@caplo/tools";

export function createServer() {
  const server = new McpServer({ name: "secret-digest", version: "1.0.0" });
  server.registerTool("digest", { description: "Digest of the API key this call received", inputSchema: {} }, async (_args, extra) => {
    const ctx = context(extra);
    const digest = ctx.secrets.has("API_KEY") ? createHash("sha256").update(ctx.secrets.get("API_KEY")).digest("hex").slice(0, 16) : "none";
    return { content: [{ type: "text", text: `${ctx.workspaceId}:${digest}:pid${process.pid}` }] };
  });
  return server;
}
