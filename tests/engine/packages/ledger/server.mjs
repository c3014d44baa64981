// A test package for the engine over the real sandboxed runner: a read with a result layout, a write
// whose outcome follows its `mode` argument (applied once per idempotency key), and status checks.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

const EFFECT = "si.caplo/effect";
const CALL = "si.caplo/call";
const text = (value) => [{ type: "text", text: typeof value === "string" ? value : JSON.stringify(value) }];
/** The package's own system, in its process: what was applied, by idempotency key. */
const applied = new Map();
const handlerRuns = [];

export function createServer() {
  const server = new McpServer(
    { name: "ledger", version: "1.0.0" },
    { capabilities: { logging: {}, experimental: { "si.caplo/effect-outcome": { version: 1 }, "si.caplo/operation-status": { version: 1 } } } },
  );
  server.registerTool("balance", { inputSchema: { account: z.string() } }, async ({ account }) => {
    const result = { account, balance: 120.5, currency: "EUR", iban: "SI56192001234567892" };
    return { content: text(result), structuredContent: result };
  });
  server.registerTool("audit", { inputSchema: {} }, async () => {
    const result = { runs: handlerRuns.length, applied: [...applied.values()] };
    return { content: text(result), structuredContent: result };
  });
  server.registerTool("transfer", { inputSchema: { to: z.string(), amount: z.string(), mode: z.string() } }, async (args, extra) => {
    const key = extra._meta?.[CALL]?.idempotencyKey;
    handlerRuns.push(key);
    if (!key) return { isError: true, content: text("no key"), _meta: { [EFFECT]: { version: 1, outcome: "not_applied" } } };
    if (args.mode === "pending") {
      applied.set(key, { key, to: args.to, amount: args.amount, done: false });
      return { content: text("Processing."), _meta: { [EFFECT]: { version: 1, outcome: "pending", operationRef: "op_1" } } };
    }
    if (!applied.has(key)) applied.set(key, { key, to: args.to, amount: args.amount, done: true });
    // Slow enough that a second confirm arrives while this one runs.
    await new Promise((resolve) => setTimeout(resolve, 100));
    return { content: text({ to: args.to, amount: args.amount }), structuredContent: { to: args.to, amount: args.amount }, _meta: { [EFFECT]: { version: 1, outcome: "applied" } } };
  });
  server.server.setRequestHandler(
    z.object({ method: z.literal("caplo/status"), params: z.object({ name: z.string(), operationRef: z.string().optional(), _meta: z.record(z.string(), z.unknown()).optional() }) }),
    async (request) => {
      const key = request.params._meta?.[CALL]?.idempotencyKey;
      const entry = applied.get(key);
      if (!entry) return { isError: true, content: text("not found"), _meta: { [EFFECT]: { version: 1, outcome: "not_applied" } } };
      entry.done = true;
      return { content: text({ to: entry.to, amount: entry.amount }), _meta: { [EFFECT]: { version: 1, outcome: "applied" } } };
    },
  );
  return server;
}
