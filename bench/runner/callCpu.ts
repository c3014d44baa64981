// The server's own CPU per warm tool call through the runner (this process only: the package's process is
// not counted), 40 calls at once, steady state: a package given no secrets, one given two (each call's
// result checked for every spelling of both), and the irreducible work, a JSON-RPC line to a child over a
// pipe and its answer read back, interleaved in windows:
//   npx tsx bench/runner/callCpu.ts [--calls 2000] [--rounds 6] [--against OTHER_REPO_ROOT]
// --against also runs the two-secret call through another checkout's runner (e.g. the commit before a change;
// it needs its node_modules and runtime/node24, see compare.ts).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { buildPackage } from "../../server/src/build/index.ts";
import { CaploToolRunner } from "../../server/src/runner/index.ts";
import { percentile } from "./stats.ts";

const { values } = parseArgs({ options: { calls: { type: "string", default: "2000" }, rounds: { type: "string", default: "6" }, against: { type: "string" } } });
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
const AT_ONCE = 40;

const built = await buildPackage(join(import.meta.dirname, "package"));
if (!built.ok) throw new Error(`bench package did not build: ${JSON.stringify(built.errors)}`);
const version = built.version;
const runner = new CaploToolRunner({});
await runner.load(version);

type Runner = Pick<CaploToolRunner, "load" | "call" | "close">;
const other: Runner | undefined = values.against
  ? new ((await import(join(resolve(values.against), "server", "src", "runner", "index.ts"))) as { CaploToolRunner: new (options: object) => Runner }).CaploToolRunner({})
  : undefined;
await other?.load(version);

let invocation = 0;
const viaRunner = (secrets: Record<string, string>, through: Runner = runner) => async () => {
  const result = await through.call({ packageVersionId: version.id, tool: "echo", args: { word: "hi" }, context: { invocationId: `bench-${invocation++}`, secrets } });
  if (result.isError) throw new Error(result.modelText);
};

// The reference: a child answering each JSON-RPC line with a result line.
const child = spawn(process.execPath, ["-e", `require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => { const m = JSON.parse(line); process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "hi" }] } }) + "\\n"); });`], { stdio: ["pipe", "pipe", "inherit"] });
const waiting = new Map<number, () => void>();
createInterface({ input: child.stdout! }).on("line", (line) => {
  const { id } = JSON.parse(line) as { id: number };
  waiting.get(id)!();
  waiting.delete(id);
});
let nextId = 0;
const overPipe = () =>
  new Promise<void>((resolve) => {
    const id = nextId++;
    waiting.set(id, resolve);
    child.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { word: "hi" } } })}\n`);
  });

const TWO_SECRETS = { API_KEY: "sk-bench-0123456789abcdef", API_URL: "https://api.bench.example/v1" };
const variants = [
  { name: "runner call, no secrets", call: viaRunner({}), cpu: [] as number[] },
  { name: "runner call, 2 secrets", call: viaRunner(TWO_SECRETS), cpu: [] as number[] },
  ...(other ? [{ name: `runner call, 2 secrets (${resolve(values.against!)})`, call: viaRunner(TWO_SECRETS, other), cpu: [] as number[] }] : []),
  { name: "JSON-RPC line over a pipe (reference)", call: overPipe, cpu: [] as number[] },
];
const run = async (call: () => Promise<void>, count: number) => {
  for (let done = 0; done < count; done += AT_ONCE) await Promise.all(Array.from({ length: AT_ONCE }, call));
};
for (const variant of variants) await run(variant.call, 4000);
for (let round = 0; round < ROUNDS; round++) {
  for (const variant of variants) {
    const before = process.cpuUsage();
    await run(variant.call, CALLS);
    const used = process.cpuUsage(before);
    variant.cpu.push((used.user + used.system) / 1000 / CALLS);
  }
}
await runner.close();
await other?.close();
child.kill();

const load = process.platform === "linux" ? readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ") : "n/a";
const reference = percentile(variants.at(-1)!.cpu, 50);
console.log(`server CPU per warm tool call, ${AT_ONCE} at once, ${ROUNDS} interleaved windows of ${CALLS} calls after 4000 warm-up calls each (load average ${load})`);
for (const variant of variants) {
  const median = percentile(variant.cpu, 50);
  console.log(`  ${variant.name.padEnd(44)} ${median.toFixed(4)} ms (${Math.min(...variant.cpu).toFixed(4)}–${Math.max(...variant.cpu).toFixed(4)})  ${(median / reference).toFixed(1)}x`);
}
