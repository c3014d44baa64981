// CLI start: the CPU and wall time of one `caplo <args>` (default `serve --help`: the whole CLI loaded, no
// server started) run from bin/caplo.mjs (the CLI's bundle, bin/cliBundle.mjs) and the same through tsx's
// loader hooks from the sources (what bin/caplo.mjs did before), interleaved. Linux only (children's CPU
// from /proc/self/stat). Run from the repository root:
//   npx tsx bench/cli/start.ts [--runs 8] [-- args...]
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({ options: { runs: { type: "string", default: "8" } }, allowPositionals: true });
const RUNS = Number(values.runs);
const ARGS = positionals.length ? positionals : ["serve", "--help"];
const ROOT = join(import.meta.dirname, "..", "..");
const TICK_MS = 10; // USER_HZ is 100 on Linux

/** CPU ms of this process's waited-for children so far. */
function childrenCpuMs(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
}

const main = pathToFileURL(join(ROOT, "server", "src", "cli", "main.ts")).href;
const variants = [
  { name: "bin/caplo.mjs (bundle)", argv: [join(ROOT, "bin", "caplo.mjs"), ...ARGS], cpu: [] as number[], wall: [] as number[] },
  {
    name: "sources through tsx",
    argv: ["--import", "tsx", "--input-type=module", "-e", `const { main } = await import(${JSON.stringify(main)}); process.exitCode = await main(${JSON.stringify(ARGS)});`],
    cpu: [] as number[],
    wall: [] as number[],
  },
];

// One run of each first, not measured: the bundle built if a source changed, the files in the page cache.
for (const variant of variants) spawnSync(process.execPath, variant.argv, { cwd: ROOT, stdio: "ignore" });
for (let i = 0; i < RUNS; i += 1) {
  for (const variant of variants) {
    const cpu = childrenCpuMs();
    const started = performance.now();
    const run = spawnSync(process.execPath, variant.argv, { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
    variant.wall.push(performance.now() - started);
    variant.cpu.push(childrenCpuMs() - cpu);
    if (run.status !== 0) throw new Error(`${variant.name} exited ${run.status}: ${run.stderr}`);
  }
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
console.log(`caplo ${ARGS.join(" ")}: ${RUNS} runs each, interleaved (load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")})`);
for (const variant of variants) console.log(`  ${variant.name.padEnd(26)} CPU median ${median(variant.cpu)} ms  wall median ${median(variant.wall).toFixed(0)} ms`);
const [bundle, sources] = variants;
console.log(`  ratio bundle / sources: CPU ${(median(bundle!.cpu) / median(sources!.cpu)).toFixed(2)}x  wall ${(median(bundle!.wall) / median(sources!.wall)).toFixed(2)}x`);
