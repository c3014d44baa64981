// Cold start of a package process, this tree against another checkout of Caplo (for example the
// commit before a change), alternating in one run so both see the same machine load:
//   node --import tsx bench/runner/compare.ts OTHER_REPO_ROOT [--cold 15]
// OTHER_REPO_ROOT needs its node_modules and runtime/node24 (a hard-linked copy is enough:
// `git archive REV | tar -x -C DIR; cp -al node_modules runtime DIR/`). Prints wall time (median,
// p90) and the CPU time of the sandbox's processes (median) for each, and their ratios.
import { join, resolve } from "node:path";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { PackageVersion } from "@caplo/shared";
import { buildPackage } from "../../server/src/build/index.ts";
import { CaploToolRunner } from "../../server/src/runner/index.ts";
import { groupCpuMs, percentile } from "./stats.ts";

const { values, positionals } = parseArgs({ allowPositionals: true, options: { cold: { type: "string", default: "15" } } });
const other = positionals[0];
if (!other) throw new Error("usage: compare.ts OTHER_REPO_ROOT [--cold N]");
const COLD = Number(values.cold);

type Runner = { load(version: PackageVersion): Promise<void>; unload(id: string): Promise<void>; close(): Promise<void>; processOf(id: string): Promise<{ pid?: number } | undefined> };
const { CaploToolRunner: OtherRunner } = (await import(join(resolve(other), "server", "src", "runner", "index.ts"))) as { CaploToolRunner: new (options: object) => Runner };


const built = await buildPackage(join(import.meta.dirname, "package"));
if (!built.ok) throw new Error(JSON.stringify(built.errors));
const version = built.version;
const variants = [
  { name: `this tree (${resolve(import.meta.dirname, "..", "..")})`, runner: new CaploToolRunner({}) as Runner, wall: [] as number[], cpu: [] as number[] },
  { name: `other (${resolve(other)})`, runner: new OtherRunner({}), wall: [] as number[], cpu: [] as number[] },
];
for (let i = 0; i < COLD + 1; i += 1) {
  for (const variant of variants) {
    await variant.runner.unload(version.id);
    const started = performance.now();
    await variant.runner.load(version);
    const wall = performance.now() - started;
    const pid = (await variant.runner.processOf(version.id))?.pid;
    // The first round builds what needs building (the host bundle): not counted.
    if (i === 0) continue;
    variant.wall.push(wall);
    if (pid !== undefined) variant.cpu.push(groupCpuMs(pid));
  }
}
for (const variant of variants) await variant.runner.close();
console.log(`cold start, ${COLD} each, alternating; load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
for (const variant of variants) {
  console.log(`  ${variant.name}\n    wall median ${percentile(variant.wall, 50).toFixed(0)} ms, p90 ${percentile(variant.wall, 90).toFixed(0)} ms; CPU median ${percentile(variant.cpu, 50).toFixed(0)} ms, p90 ${percentile(variant.cpu, 90).toFixed(0)} ms`);
}
const [mine, theirs] = variants;
console.log(`  ratio this / other: wall ${(percentile(mine!.wall, 50) / percentile(theirs!.wall, 50)).toFixed(2)}x, CPU ${(percentile(mine!.cpu, 50) / percentile(theirs!.cpu, 50)).toFixed(2)}x`);
