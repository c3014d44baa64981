// The benchmark's trivial package: one read tool that echoes its argument.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

export function createServer() {
  const server = new McpServer({ name: "bench-echo", version: "1.0.0" });
  server.registerTool("echo", { description: "Echo a word", inputSchema: { word: z.string() } }, async ({ word }) => ({
    content: [{ type: "text", text: word }],
    structuredContent: { word },
  }));
  return server;
}
