// Runner benchmark: warm read-call latency through the runner and sandbox (p50, p99) for a trivial
// handler, the same call in-process over the MCP SDK's InMemoryTransport, their ratio, and the cold
// start of a package process. Run from the repository root, no npm needed:
//   node --import tsx bench/runner/index.ts [--calls 500] [--cold 9]
// Cold starts are measured for the prebuilt host bundle (the default) and for sdk/src/host.ts (the path
// without the bundle), interleaved in the same run, with the CPU time the sandbox's processes used
// (wall time on a shared machine is noisy: compare the two, and see the load average printed).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { buildPackage } from "../../server/src/build/index.ts";
import { CaploToolRunner } from "../../server/src/runner/index.ts";
import { HOST_MODULE } from "../../server/src/runner/node24.ts";
import { groupCpuMs, percentile } from "./stats.ts";

const { values } = parseArgs({ options: { calls: { type: "string", default: "500" }, cold: { type: "string", default: "9" } } });
const CALLS = Number(values.calls);
const COLD = Number(values.cold);
const WARMUP = 50;
const dir = join(import.meta.dirname, "package");

const ms = (value: number) => `${value.toFixed(3)} ms`;

const built = await buildPackage(dir);
if (!built.ok) throw new Error(`bench package did not build: ${JSON.stringify(built.errors)}`);
const version = built.version;

// 1. Through the runner and sandbox, warm.
const runner = new CaploToolRunner({});
await runner.load(version);
const sandboxed: number[] = [];
for (let i = 0; i < WARMUP + CALLS; i += 1) {
  const started = performance.now();
  const result = await runner.call({ packageVersionId: version.id, tool: "echo", args: { word: "hi" }, context: { invocationId: `bench-${i}`, secrets: {} } });
  const elapsed = performance.now() - started;
  if (result.isError) throw new Error(result.modelText);
  if (i >= WARMUP) sandboxed.push(elapsed);
}

// 2. The same server in-process over InMemoryTransport.
const { createServer } = (await import(join(dir, "server.mjs"))) as { createServer: () => { connect: (t: InMemoryTransport) => Promise<void> } };
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await createServer().connect(serverSide);
const client = new Client({ name: "bench", version: "1.0.0" });
await client.connect(clientSide);
const inProcess: number[] = [];
for (let i = 0; i < WARMUP + CALLS; i += 1) {
  const started = performance.now();
  await client.request({ method: "tools/call", params: { name: "echo", arguments: { word: "hi" } } }, CallToolResultSchema);
  const elapsed = performance.now() - started;
  if (i >= WARMUP) inProcess.push(elapsed);
}
await client.close();

// 3. Cold start: a fresh sandboxed process until it answers initialize and tools/list, with the
// prebuilt host bundle (default) and with sdk/src/host.ts, alternating.
const source = new CaploToolRunner({ hostModule: HOST_MODULE });
const variants = [
  { name: "prebuilt host bundle", runner, wall: [] as number[], cpu: [] as number[] },
  { name: "sdk/src/host.ts (no bundle)", runner: source, wall: [] as number[], cpu: [] as number[] },
];
for (let i = 0; i < COLD; i += 1) {
  for (const variant of variants) {
    await variant.runner.unload(version.id);
    const started = performance.now();
    await variant.runner.load(version);
    variant.wall.push(performance.now() - started);
    const pid = (await variant.runner.processOf(version.id))?.pid;
    if (pid !== undefined && process.platform === "linux") variant.cpu.push(groupCpuMs(pid));
  }
}
await runner.close();
await source.close();

const p50 = percentile(sandboxed, 50);
const p99 = percentile(sandboxed, 99);
const base50 = percentile(inProcess, 50);
const base99 = percentile(inProcess, 99);
const load = process.platform === "linux" ? readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ") : "n/a";
console.log(`runner benchmark (${CALLS} warm calls after ${WARMUP} warm-up; ${COLD} cold starts each; load average ${load})`);
console.log(`  ${runner.sandboxNote}; ${runner.hostNote}`);
console.log(`  warm read call, runner + sandbox:   p50 ${ms(p50)}  p99 ${ms(p99)}`);
console.log(`  same call in-process (InMemory):    p50 ${ms(base50)}  p99 ${ms(base99)}`);
console.log(`  ratio sandbox / in-process:         p50 ${(p50 / base50).toFixed(1)}x  p99 ${(p99 / base99).toFixed(1)}x`);
console.log(`  warm overhead (p50 difference):     ${ms(p50 - base50)}`);
console.log(`  cold start of a package process (until initialize and tools/list are answered):`);
for (const variant of variants) {
  const cpu = variant.cpu.length ? `  CPU median ${percentile(variant.cpu, 50).toFixed(0)} ms` : "";
  console.log(`    ${variant.name.padEnd(30)} median ${ms(percentile(variant.wall, 50))}  p90 ${ms(percentile(variant.wall, 90))}  min ${ms(Math.min(...variant.wall))}${cpu}`);
}
const [bundled, unbundled] = variants;
console.log(`    ratio bundle / no bundle:      wall ${(percentile(bundled!.wall, 50) / percentile(unbundled!.wall, 50)).toFixed(2)}x${bundled!.cpu.length ? `  CPU ${(percentile(bundled!.cpu, 50) / percentile(unbundled!.cpu, 50)).toFixed(2)}x` : ""}`);
