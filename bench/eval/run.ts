// What an evaluation costs per case run beyond the conversation itself: the eval suite (a fresh engine and
// in-memory store per run, the metered model, the read-only guard, fixture reads, reading back and checking
// what happened) against a minimal reference doing the irreducible work, the same two turns (a read, then a
// proposed write confirmed) through the same Engine over an in-memory SQLite store with a runner answering
// from constants. Interleaved rounds after a warm-up; prints ms per case run and the ratio.
//   npx tsx bench/eval/run.ts [--runs 200] [--rounds 4]
import { join } from "node:path";
import { parseEvalCases } from "@caplo/shared";
import { Engine } from "../../server/src/engine/engine.ts";
import { releaseFromVersions, StaticReleases } from "../../server/src/engine/release.ts";
import { runEvaluation } from "../../server/src/eval/index.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import type { ToolRunner } from "../../server/src/runner/api.ts";
import { SqliteStore } from "../../server/src/store/sqliteStore.ts";
import { testVersion } from "../../tests/runner/testPackages.ts";

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(name);
  return index === -1 ? fallback : Number(process.argv[index + 1]);
};
const RUNS = arg("--runs", 200);
const ROUNDS = arg("--rounds", 4);

const version = testVersion(
  "tracer",
  [
    { name: "lookup", policy: { effect: "read", timeoutSeconds: 10 }, inputSchema: { type: "object", properties: { item: { type: "string" } }, required: ["item"] } },
    { name: "send", policy: { effect: "write", timeoutSeconds: 10, confirmation: "required" }, inputSchema: { type: "object", properties: { to: { type: "string" }, amount: { type: "string" } }, required: ["to", "amount"] } },
  ],
  { dir: join(import.meta.dirname, "..", "..", "tests", "eval", "packages", "tracer") },
);
const release = releaseFromVersions({ agent: "bank", instructions: "Help.", versions: [version] });
const model = () =>
  new ScriptedModel([
    { whenNote: /outcome: applied/i, replies: [{ text: "Sent." }] },
    { when: /how many (\w+)/i, replies: [{ toolCalls: [{ name: "tracer__lookup", args: { item: "$1" } }] }, { text: "{{tool}}" }] },
    { when: /send (\d+) to (\w+)/i, replies: [{ toolCalls: [{ name: "tracer__send", args: { to: "$2", amount: "$1" } }] }] },
  ]);
const parsed = parseEvalCases(`apiVersion: v1
kind: EvalCases
reads: fixtures
cases:
  - name: read then write
    turns:
      - customer: how many socks
        expect:
          - called: { tool: tracer/lookup, args: { item: socks } }
          - reply: { contains: '"stock":3' }
      - customer: send 25 to Ana
        confirm: { outcome: applied, result: { to: Ana, amount: "25" } }
        expect:
          - proposed: { tool: tracer/send, args: { to: Ana } }
          - reply: { contains: Sent. }
`);
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
const cases = parsed.cases;
const refuse = async (): Promise<never> => {
  throw new Error("not reached: fixture reads");
};
const untouched: ToolRunner = { load: async () => undefined, call: refuse, checkStatus: refuse, close: async () => undefined };

async function evalRuns(runs: number): Promise<number> {
  const started = performance.now();
  const result = await runEvaluation({ cases, release, model: model(), runner: untouched, settings: { repeat: runs, minPassBasisPoints: 10_000, concurrency: 1 } });
  if (!result.ok) throw new Error("the bench's case failed");
  return (performance.now() - started) / runs;
}

/** The irreducible work: the same two turns through a fresh engine and in-memory store, nothing checked. */
const constants: ToolRunner = {
  load: async () => undefined,
  call: async (request) =>
    request.tool === "lookup"
      ? { invocationId: "i", modelText: '{"item":"socks","stock":3}', isError: false, structuredContent: { item: "socks", stock: 3 }, files: [], logs: [], durationMs: 0 }
      : { invocationId: "i", modelText: "{}", isError: false, outcome: { outcome: "applied", text: "{}", structuredContent: {} }, files: [], logs: [], durationMs: 0 },
  checkStatus: refuse,
  close: async () => undefined,
};
async function referenceRuns(runs: number): Promise<number> {
  const started = performance.now();
  for (let run = 0; run < runs; run++) {
    const store = new SqliteStore(":memory:");
    await store.migrate();
    const engine = new Engine({ store, runner: constants, model: model(), releases: new StaticReleases([release]), nodeId: "ref" });
    await engine.start({ scheduler: false });
    const conversation = await engine.openConversation({ agent: "bank", channel: "web", capabilities: { editableFields: true, forms: true, questions: true, files: true, pages: true, richText: true }, ownerId: "o" });
    await engine.handle(conversation.id, "o", { type: "message", text: "how many socks" });
    await engine.handle(conversation.id, "o", { type: "message", text: "send 25 to Ana" });
    const [write] = await store.listWrites(conversation.id);
    await engine.handle(conversation.id, "o", { type: "confirm", proposalId: write!.id });
    await engine.stop();
    await store.close();
  }
  return (performance.now() - started) / runs;
}

await evalRuns(Math.max(20, RUNS / 4));
await referenceRuns(Math.max(20, RUNS / 4));
const evalMs: number[] = [];
const refMs: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  evalMs.push(await evalRuns(RUNS));
  refMs.push(await referenceRuns(RUNS));
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(`case run (2 turns: a read, a confirmed write), ${RUNS} runs x ${ROUNDS} interleaved rounds`);
console.log(`  eval suite        ${median(evalMs).toFixed(2)} ms/run  (rounds: ${evalMs.map((ms) => ms.toFixed(2)).join(", ")})`);
console.log(`  reference engine  ${median(refMs).toFixed(2)} ms/run  (rounds: ${refMs.map((ms) => ms.toFixed(2)).join(", ")})`);
console.log(`  ratio             ${(median(evalMs) / median(refMs)).toFixed(2)}x`);
