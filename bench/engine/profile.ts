// Summarises V8 CPU profiles (.cpuprofile, as `bench/engine/run.ts ... --profile DIR` writes them): the
// share of sampled time spent in each function itself (self), and in each source file including what it
// calls (total, each file or function counted once per sample), over all the files given.
//
//   npx tsx bench/engine/profile.ts DIR/*.cpuprofile [--top 30]
import { readFileSync } from "node:fs";

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[] };

const args = process.argv.slice(2);
const topAt = args.indexOf("--top");
const top = topAt >= 0 ? Number(args[topAt + 1]) : 30;
const files = args.filter((arg, index) => arg.endsWith(".cpuprofile") && index !== topAt + 1);
if (files.length === 0) throw new Error("usage: profile.ts FILE.cpuprofile... [--top N]");

const self = new Map<string, number>();
const total = new Map<string, number>();
const totalByFunction = new Map<string, number>();
let all = 0;
const short = (url: string) => url.replace(/^file:\/\//, "").replace(/^.*\/node_modules\//, "npm:").replace(/^.*\/(server|shared|bench)\/src\//, "$1/").replace(/^.*\/bench\//, "bench/");

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  profile.samples.forEach((id, index) => {
    const ms = (profile.timeDeltas[index] ?? 0) / 1000;
    all += ms;
    const node = byId.get(id)!;
    const frame = node.callFrame;
    const key = `${frame.functionName || "(anonymous)"} ${frame.url ? `${short(frame.url)}:${frame.lineNumber + 1}` : ""}`.trim();
    self.set(key, (self.get(key) ?? 0) + ms);
    const seen = new Set<string>();
    const seenFunctions = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      const name = `${f.functionName || "(anonymous)"} ${f.url ? short(f.url) : ""}`.trim();
      if (!seenFunctions.has(name)) {
        seenFunctions.add(name);
        totalByFunction.set(name, (totalByFunction.get(name) ?? 0) + ms);
      }
      const url = byId.get(at)!.callFrame.url;
      const where = url ? short(url) : `(${byId.get(at)!.callFrame.functionName || "native"})`;
      if (seen.has(where)) continue;
      seen.add(where);
      total.set(where, (total.get(where) ?? 0) + ms);
    }
  });
}

const rows = (map: Map<string, number>) =>
  [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, ms]) => `${((100 * ms) / all).toFixed(1).padStart(5)}%  ${key}`)
    .join("\n");
console.log(`${files.length} profile(s), ${all.toFixed(0)} ms sampled\n\nself time by function:\n${rows(self)}\n\ntotal time by file (with what it calls):\n${rows(total)}\n\ntotal time by function (with what it calls):\n${rows(totalByFunction)}`);
