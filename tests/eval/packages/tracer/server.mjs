// A test package for evaluations: every call of a tool reports itself to a trace server outside the
// sandbox (http://trace.caplo.test, reached only through the runner's egress proxy, mapped to loopback by
// the operator's CAPLO_EGRESS_RESOLVE). The read `lookup` also returns what it was asked; `ask` asks the
// visitor for a size first; the writes `send` (with a status check) and `note` (no confirmation) would
// leave a trace on every call, so a trace count of zero proves they never ran.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

const EFFECT = "si.caplo/effect";
const trace = async (what, signal) => {
  const response = await fetch(`http://trace.caplo.test/${what}`, { method: "POST", signal });
  return response.text();
};
const text = (value) => [{ type: "text", text: JSON.stringify(value) }];

export function createServer() {
  const server = new McpServer(
    { name: "tracer", version: "1.0.0" },
    { capabilities: { logging: {}, experimental: { "si.caplo/effect-outcome": { version: 1 }, "si.caplo/operation-status": { version: 1 } } } },
  );
  server.registerTool("lookup", { inputSchema: { item: z.string() } }, async ({ item }, extra) => {
    const result = { item, stock: 3, traced: await trace("read", extra.signal) };
    return { content: text(result), structuredContent: result };
  });
  server.registerTool("ask", { inputSchema: {} }, async (_args, extra) => {
    await trace("read", extra.signal);
    // The question names its call (as the SDK's context(extra).elicit does), so the runner routes it to the
    // right visitor while other calls of this process are in flight.
    const invocationId = extra._meta?.["si.caplo/call"]?.invocationId;
    const answer = await server.server.elicitInput({
      mode: "form",
      message: "Which size?",
      requestedSchema: { type: "object", properties: { size: { type: "string", enum: ["S", "M", "L"] } }, required: ["size"] },
      _meta: { "si.caplo/call": { invocationId } },
    });
    const result = { action: answer.action, size: answer.content?.size ?? null };
    return { content: text(result), structuredContent: result };
  });
  for (const name of ["send", "note"]) {
    server.registerTool(name, { inputSchema: { to: z.string(), amount: z.string() } }, async (args, extra) => {
      await trace(`write/${name}`, extra.signal);
      return { content: text(args), structuredContent: args, _meta: { [EFFECT]: { version: 1, outcome: "applied" } } };
    });
  }
  server.server.setRequestHandler(
    z.object({ method: z.literal("caplo/status"), params: z.object({ name: z.string(), operationRef: z.string().optional(), _meta: z.record(z.string(), z.unknown()).optional() }) }),
    async () => {
      await trace("status");
      return { content: text("applied"), _meta: { [EFFECT]: { version: 1, outcome: "applied" } } };
    },
  );
  return server;
}
