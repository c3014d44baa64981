// The gateway under benchmark, in a process of its own so its memory and CPU can be measured alone: SQLite
// file store, the shop's MCP server in memory on the real runner, the scripted model. Prints its port;
// answers "mem" on its IPC channel with its memory after a full GC and its CPU time so far; with
// BENCH_PROF=DIR, "prof-start"/"prof-stop" bracket a CPU profile written to DIR (only the measured turns).
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
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
let profiler: Session | undefined;
process.on("message", (message) => {
  if (message === "mem") {
    (globalThis as { gc?: () => void }).gc?.();
    const usage = process.memoryUsage();
    const cpu = process.cpuUsage();
    process.send?.({ cpuMs: (cpu.user + cpu.system) / 1000, rss: usage.rss, heapUsed: usage.heapUsed, external: usage.external, arrayBuffers: usage.arrayBuffers, connections: stack.gateway.connectionCount });
  } else if (message === "prof-start" && process.env.BENCH_PROF) {
    profiler = new Session();
    profiler.connect();
    void profiler
      .post("Profiler.enable")
      .then(() => profiler!.post("Profiler.start"))
      .then(() => process.send?.("prof-started"));
  } else if (message === "prof-stop" && profiler) {
    void profiler.post("Profiler.stop").then(({ profile }) => {
      const file = join(process.env.BENCH_PROF!, `server-${Date.now()}.cpuprofile`);
      writeFileSync(file, JSON.stringify(profile));
      profiler!.disconnect();
      profiler = undefined;
      process.send?.({ profile: file });
    });
  }
});
process.on("SIGTERM", () => {
  void stack.close().then(() => process.exit(0));
});
