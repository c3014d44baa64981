// A package's src/stdio.ts for `caplo tool dev` tests: one tool that reports the Node version it runs
// on and whether serveStdio gave it the DEV_KEY secret from the environment.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { context, serveStdio } from "@caplo/tools";

await serveStdio(
  () => {
    const server = new McpServer({ name: "devprobe", version: "1.0.0" });
    server.registerTool("runtime", { description: "Reports the runtime" }, async (extra) => {
      const report = { node: process.version, hasKey: context(extra).secrets.has("DEV_KEY") };
      return { content: [{ type: "text", text: JSON.stringify(report) }], structuredContent: report };
    });
    return server;
  },
  { secrets: ["DEV_KEY"] },
);
