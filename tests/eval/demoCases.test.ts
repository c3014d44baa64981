// The demo agent's evaluation cases (examples/evals/demo-shop.cases.yaml), run as the docs tell a reader to
// run them offline: the demo agent (examples/demo/agent.yaml) with its eleven packages, the offline demo's
// scripted model, reads answered from the packages' fixtures. Every case passes and no write is run; the
// same cases with a wrong expectation fail with the reason. (The packages come from the demo's build
// cache, which `npm start` and the demo tests share.)
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseEvalCases, type EvalCases } from "@caplo/shared";
import { createRelease, loadAgentFile } from "../../server/src/agents/index.ts";
import { buildPackages, DEMO_AGENT_FILE, ROOT } from "../../server/src/demo/demo.ts";
import { createDemoModel } from "../../server/src/demo/demoScript.ts";
import type { AgentRelease } from "../../server/src/engine/release.ts";
import { loadEvalCases, runEvaluation, tableReport } from "../../server/src/eval/index.ts";
import { MemoryLogStore } from "../../server/src/runner/logStore.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { PACKAGES } from "../examples/harness.ts";

export const DEMO_CASES = join(ROOT, "examples", "evals", "demo-shop.cases.yaml");
let release: AgentRelease;
let cases: EvalCases;

beforeAll(async () => {
  const built = await buildPackages(PACKAGES.map((name) => join(ROOT, "examples", "demo", name)), () => undefined);
  if (!built.ok) throw new Error(built.error.message);
  const agent = await loadAgentFile(DEMO_AGENT_FILE);
  if (!agent.ok) throw new Error(JSON.stringify(agent.issues));
  const created = createRelease(agent.agent, built.versions, new Date());
  if (!created.ok) throw new Error(JSON.stringify(created.issues));
  release = created.release;
  const loaded = await loadEvalCases(DEMO_CASES);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  cases = loaded.value;
}, 240_000);

/** A runner that fails the test if anything asks it to run anything: fixture reads never reach it. */
function untouchableRunner() {
  const runner = new CaploToolRunner({ logStore: new MemoryLogStore() });
  const refuse = async () => {
    throw new Error("the demo cases answer reads from fixtures: nothing may reach the runner");
  };
  return Object.assign(runner, { load: refuse, call: refuse, checkStatus: refuse });
}

describe("the demo agent's evaluation cases", () => {
  it("every case passes with the offline demo model; reads come from fixtures and no write runs", async () => {
    const runner = untouchableRunner();
    const result = await runEvaluation({ cases, release, model: createDemoModel(), runner, settings: { repeat: 1, minPassBasisPoints: 10_000, concurrency: 2 } });
    expect(result.ok, tableReport(result)).toBe(true);
    expect(result.cases.map((entry) => entry.name)).toEqual(cases.cases.map((entry) => entry.name));
    // The cancellation, the refused one, the pending one, the note and the address change: scripted, none run.
    expect(result.cases.reduce((sum, entry) => sum + entry.scriptedWrites, 0)).toBe(5);
    expect(result.refused).toEqual([]);
    await runner.close();
  }, 60_000);

  it("the same cases with wrong expectations fail, each saying why", async () => {
    const text = (await import("node:fs")).readFileSync(DEMO_CASES, "utf8");
    const wrong = parseEvalCases(
      text
        .replace("args: { orderId: SO-1004 }, match: exact", "args: { orderId: SO-1005 }, match: exact")
        .replace('reply: { contains: "Anything else?", notContains: "not" }', 'reply: { contains: "Cancelled for you." }')
        .replace("fields: { Order: SO-1001 }", "fields: { Order: SO-1002 }"),
    );
    if (!wrong.ok) throw new Error(JSON.stringify(wrong.errors));
    const runner = untouchableRunner();
    const result = await runEvaluation({ cases: wrong.cases, release, model: createDemoModel(), runner, settings: { repeat: 1, minPassBasisPoints: 10_000, concurrency: 2, filter: "order" } });
    await runner.close();
    const failed = Object.fromEntries(result.cases.filter((entry) => !entry.ok).map((entry) => [entry.name, entry.failures[0]!.problems]));
    expect(failed["looks up a delivered order"]).toEqual(['turn 1: called orders/get_order {"orderId":"SO-1005"}: its calls were {"orderId":"SO-1004"} (expected exactly {"orderId":"SO-1005"}, got {"orderId":"SO-1004"})']);
    expect(failed["cancels a processing order once the customer confirms"]).toEqual([
      'turn 1: proposed orders/cancel_order {"orderId":"SO-1001"} fields {"Order":"SO-1002"}: field "Order": expected "SO-1002", got "SO-1001"',
      'turn 1: reply contains "Cancelled for you.": the reply was "Anything else? (offline demo: type *help* to see what I understand)"',
    ]);
    expect(result.ok).toBe(false);
  }, 60_000);
});
