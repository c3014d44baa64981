// Evaluations never run a write, proven with a real sandboxed package whose every tool call leaves a trace
// on a loopback server it can reach only through the runner's egress proxy (CAPLO_EGRESS_RESOLVE). The
// same runner does reach the server for a write called directly (the trace works); through an evaluation,
// reads run for real (traced, a tool's question answered) while confirmed, declined and unconfirmed writes,
// with every scripted outcome, leave no trace at all, and neither does any status check. The evaluation's
// read-only handle refuses a write, a status check and a read carrying an idempotency key.
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEvalCases, type EvalCases, type PackageVersion } from "@caplo/shared";
import { releaseFromVersions } from "../../server/src/engine/release.ts";
import { ReadOnlyRunner, runEvaluation, tableReport } from "../../server/src/eval/index.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { TEST_HOST, testVersion } from "../runner/testPackages.ts";

const traces: string[] = [];
let trace: Server;
let runner: CaploToolRunner;
let version: PackageVersion;

const count = (prefix: string) => traces.filter((path) => path.startsWith(prefix)).length;
const presentation = { schemaVersion: 1, title: "Send money", fields: [{ path: "/to", label: "To", display: "plain" }, { path: "/amount", label: "Amount", display: "plain" }] };
const money = { type: "object", properties: { to: { type: "string" }, amount: { type: "string" } }, required: ["to", "amount"], additionalProperties: false };

beforeAll(async () => {
  trace = createServer((request, response) => {
    traces.push((request.url ?? "/").slice(1));
    response.end(String(traces.length));
  });
  await new Promise<void>((resolve) => trace.listen(0, "127.0.0.1", resolve));
  version = testVersion(
    "tracer",
    [
      { name: "lookup", policy: { effect: "read", timeoutSeconds: 10 }, inputSchema: { type: "object", properties: { item: { type: "string" } }, required: ["item"], additionalProperties: false } },
      { name: "ask", policy: { effect: "read", timeoutSeconds: 10, elicitation: { style: "form", fields: [{ name: "size" }] } }, inputSchema: { type: "object", properties: {}, additionalProperties: false } },
      { name: "send", hasStatus: true, policy: { effect: "write", timeoutSeconds: 10, confirmation: "required", presentation }, inputSchema: money },
      { name: "note", policy: { effect: "write", timeoutSeconds: 10, confirmation: "none" }, inputSchema: money },
    ],
    { dir: join(import.meta.dirname, "packages", "tracer"), egress: ["trace.caplo.test"], effectOutcomes: true },
  );
  runner = new CaploToolRunner({ hostModule: TEST_HOST, egressResolve: `trace.caplo.test=127.0.0.1:${(trace.address() as { port: number }).port}` });
}, 60_000);

afterAll(async () => {
  await runner?.close();
  trace?.closeAllConnections();
  await new Promise((resolve) => trace?.close(resolve));
});

const model = new ScriptedModel([
  { whenNote: /outcome: applied/i, replies: [{ text: "Sent." }] },
  { whenNote: /outcome: not applied/i, replies: [{ text: "It was not sent." }] },
  { whenNote: /outcome: (pending|unknown)/i, replies: [{ text: "Not confirmed yet: please don't send it again." }] },
  { whenNote: /declined/i, replies: [{ text: "I left it." }] },
  { when: /how many (\w+)/i, replies: [{ toolCalls: [{ name: "tracer__lookup", args: { item: "$1" } }] }, { text: "{{tool}}" }] },
  { when: /which size/i, replies: [{ toolCalls: [{ name: "tracer__ask", args: {} }] }, { text: "{{tool}}" }] },
  { when: /send (\d+) to (\w+)/i, replies: [{ text: "Please confirm.", toolCalls: [{ name: "tracer__send", args: { to: "$2", amount: "$1" } }] }, { text: "{{tool}}" }] },
  { when: /note (\d+) for (\w+)/i, replies: [{ toolCalls: [{ name: "tracer__note", args: { to: "$2", amount: "$1" } }] }, { text: "Noted." }] },
  { when: /person/i, replies: [{ toolCalls: [{ name: "handoff_to_team", args: { reason: "asked for a person" } }] }] },
]);

const CASES = `apiVersion: v1
kind: EvalCases
agent: bank
cases:
  - name: a live read runs and is traced
    turns:
      - customer: how many socks
        expect:
          - called: { tool: tracer/lookup, args: { item: socks }, match: exact }
          - reply: { contains: '"stock":3' }
          - noWrite: true
  - name: a tool's question is answered from the turn
    turns:
      - customer: which size
        answers: [{ size: M }]
        expect:
          - elicited: { fields: [size], tool: tracer/ask }
          - reply: { contains: '"size":"M"' }
  - name: confirmed and applied
    turns:
      - customer: send 25 to Ana
        confirm: { outcome: applied, result: { to: Ana, amount: "25" } }
        expect:
          - proposed: { tool: tracer/send, args: { to: Ana, amount: "25" }, match: exact, fields: { To: Ana, Amount: "25" } }
          - reply: { contains: Sent. }
  - name: confirmed and not applied
    turns:
      - customer: send 30 to Bo
        confirm: { outcome: not_applied, message: The bank refused it. }
        expect:
          - reply: { contains: was not sent }
  - name: confirmed and pending blocks the next write
    turns:
      - customer: send 40 to Cy
        confirm: { outcome: pending, operationRef: op_7 }
        expect:
          - reply: { contains: Not confirmed yet }
      - customer: send 41 to Cy
        expect:
          - called: { tool: tracer/send }
          - noWrite: true
  - name: confirmed and unknown
    turns:
      - customer: send 50 to Di
        confirm: { outcome: unknown, message: timed out }
        expect:
          - reply: { contains: Not confirmed yet }
  - name: declined
    turns:
      - customer: send 60 to Ed
        decline: true
        expect:
          - reply: { contains: I left it. }
  - name: proposed and left open
    turns:
      - customer: send 70 to Fa
        expect:
          - proposed: { tool: tracer/send }
  - name: a write that needs no confirmation
    turns:
      - customer: note 5 for Gu
        confirm: { outcome: applied, result: { to: Gu, amount: "5" } }
        expect:
          - proposed: { tool: tracer/note, args: { to: Gu } }
          - reply: { contains: Noted. }
  - name: handed to the team
    turns:
      - customer: I want a person
        expect:
          - handoff: { queue: support }
  - name: on WhatsApp
    channel: whatsapp
    turns:
      - customer: send 80 to Ha
        confirm: { outcome: applied, result: { to: Ha, amount: "80" } }
        expect:
          - proposed: { tool: tracer/send, fields: { To: Ha } }
`;

function cases(): EvalCases {
  const parsed = parseEvalCases(CASES);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.cases;
}

describe("evaluations do not run writes", () => {
  it("the trace works: the same runner's direct call of the write reaches the trace server", async () => {
    await runner.load(version);
    const direct = await runner.call({ packageVersionId: version.id, tool: "send", args: { to: "X", amount: "1" }, context: { invocationId: "direct-1", idempotencyKey: "ik-direct", secrets: {} } });
    expect(direct.outcome?.outcome).toBe("applied");
    expect(count("write/send")).toBe(1);
    traces.length = 0;
  }, 60_000);

  it("every case passes, reads are traced, and no write or status check ever reached the package", async () => {
    const release = releaseFromVersions({ agent: "bank", instructions: "Help.", versions: [version], channels: { web: { handoff: { queue: "support" } }, whatsapp: {} } });
    const result = await runEvaluation({ cases: cases(), release, model, runner, settings: { repeat: 2, minPassBasisPoints: 10_000, concurrency: 2 } });
    expect(result.ok, tableReport(result)).toBe(true);
    expect(result.runs).toBe(22);
    expect(result.refused).toEqual([]);
    // Two live reads per repeat of the first two cases; the scripted outcomes stood in for 6 writes a repeat.
    expect(count("read")).toBe(4);
    expect(result.cases.reduce((sum, entry) => sum + entry.scriptedWrites, 0)).toBe(12);
    expect(count("write")).toBe(0);
    expect(count("status")).toBe(0);
  }, 60_000);

  it("a case whose model goes wrong fails with the reason, and still runs no write", async () => {
    const release = releaseFromVersions({ agent: "bank", instructions: "Help.", versions: [version] });
    const wrong = parseEvalCases(CASES.replace("args: { to: Ana, amount: \"25\" }, match: exact", "args: { to: Ana, amount: \"26\" }, match: exact"));
    if (!wrong.ok) throw new Error("bad cases");
    const result = await runEvaluation({ cases: wrong.cases, release, model, runner, settings: { repeat: 1, minPassBasisPoints: 10_000, concurrency: 1, filter: "confirmed and applied" } });
    expect(result.ok).toBe(false);
    expect(result.cases[0]!.failures[0]!.problems[0]).toMatch(/^turn 1: proposed tracer\/send .*expected exactly/);
    expect(count("write")).toBe(0);
  }, 60_000);

  it("the read-only handle refuses a write, a status check and a keyed read before anything reaches the package", async () => {
    const guard = new ReadOnlyRunner(runner);
    await guard.load(version);
    const context = { invocationId: "attack", secrets: {} };
    await expect(guard.call({ packageVersionId: version.id, tool: "send", args: { to: "X", amount: "1" }, context: { ...context, idempotencyKey: "ik" } })).rejects.toMatchObject({ code: "eval_write_refused" });
    await expect(guard.call({ packageVersionId: version.id, tool: "note", args: { to: "X", amount: "1" }, context })).rejects.toMatchObject({ code: "eval_write_refused" });
    await expect(guard.checkStatus({ packageVersionId: version.id, tool: "send", context: { ...context, idempotencyKey: "ik" } })).rejects.toMatchObject({ code: "eval_write_refused" });
    await expect(guard.call({ packageVersionId: version.id, tool: "lookup", args: { item: "x" }, context: { ...context, idempotencyKey: "ik" } })).rejects.toMatchObject({ code: "eval_write_refused" });
    await expect(guard.call({ packageVersionId: "other@sha256:00", tool: "send", args: {}, context })).rejects.toMatchObject({ code: "eval_write_refused" });
    expect(guard.refused).toHaveLength(5);
    expect(count("write")).toBe(0);
    expect(count("status")).toBe(0);
  });
});
