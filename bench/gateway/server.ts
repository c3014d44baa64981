// The gateway under benchmark, in a process of its own so its memory can be measured alone: SQLite file
// store, the shop's MCP server through the in-process test runner, the scripted model. Prints its port;
// answers "mem" on its IPC channel with its memory after a full GC.
import { startStack, SHOP_RULES } from "../../tests/gateway/support/stack.ts";

const dir = process.argv[2];
if (!dir) throw new Error("usage: server.ts DIR");
const stack = await startStack({
  dir,
  rules: SHOP_RULES,
  // The benchmark's clients send far more than a person would; the limits themselves are tested elsewhere.
  gateway: { limits: { framesPerSecond: 1000, burst: 1000 }, heartbeatMs: 60_000 },
});
process.stdout.write(`${JSON.stringify({ port: new URL(stack.base).port })}\n`);
process.on("message", (message) => {
  if (message !== "mem") return;
  (globalThis as { gc?: () => void }).gc?.();
  const usage = process.memoryUsage();
  const cpu = process.cpuUsage();
  process.send?.({ cpuMs: (cpu.user + cpu.system) / 1000, rss: usage.rss, heapUsed: usage.heapUsed, external: usage.external, arrayBuffers: usage.arrayBuffers, connections: stack.gateway.connectionCount });
});
process.on("SIGTERM", () => {
  void stack.close().then(() => process.exit(0));
});
