// A package that allocates off-heap memory (Buffers, outside the V8 heap cap) until something stops it,
// and a trivial read to show it and other packages carry on.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { EFFECT_OUTCOME_CAPABILITY } from "@caplo/tools";

const held = [];

async function allocate(limitMb) {
  for (let mb = 0; mb < limitMb; mb += 16) {
    // Buffer.alloc zero-fills: the pages are touched, so they count against the memory limit.
    held.push(Buffer.alloc(16 * 1024 * 1024, 1));
    await new Promise((resolve) => setImmediate(resolve));
  }
  return held.length * 16;
}

export function createServer() {
  const server = new McpServer({ name: "memory", version: "1.0.0" }, { capabilities: { experimental: { ...EFFECT_OUTCOME_CAPABILITY } } });
  server.registerTool("buffers", { description: "allocate Buffers" }, async () => {
    const mb = await allocate(1536);
    return { content: [{ type: "text", text: `allocated ${mb} MiB` }], structuredContent: { mb } };
  });
  server.registerTool("write_buffers", { description: "a write that allocates Buffers" }, async () => {
    const mb = await allocate(1536);
    return { content: [{ type: "text", text: `allocated ${mb} MiB` }], structuredContent: { mb }, _meta: { "si.caplo/effect": { version: 1, outcome: "applied" } } };
  });
  server.registerTool("echo", { description: "answers" }, async () => ({ content: [{ type: "text", text: "still here" }] }));
  return server;
}
