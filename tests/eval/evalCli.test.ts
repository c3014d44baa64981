// `caplo eval` as a user runs it, against the OpenAI-compatible provider pointed at the local fake (which
// checks the wire format): token counts from the streamed usage, a read answered from the package's
// fixtures, the --min-pass boundary (7 of 10 passes at 0.7 and exits 0, fails at 0.71 and exits 1), the
// JSON report, JUnit XML that is well-formed with every text escaped, and exit 2 for each usage error.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Window } from "happy-dom";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAgentConfig } from "@caplo/shared";
import { createRelease, FileReleaseStore } from "../../server/src/agents/index.ts";
import { runEval } from "../../server/src/cli/eval.ts";
import { chunk, startFakeOpenAI, writeSse, type FakeOpenAI } from "../../server/src/model/openai.fake.ts";
import { testVersion } from "../runner/testPackages.ts";
import { xmlProblem } from "./xmlCheck.ts";

const MODEL = "eval-model";
const dir = mkdtempSync(join(tmpdir(), "caplo-eval-cli-"));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const NASTY = 'Bye <b>&"now"</b> ]]> \u0001 \u001b[31mred';
let fake: FakeOpenAI;
let greetings = 0;
let env: NodeJS.ProcessEnv;

const version = testVersion(
  "tracer",
  [
    { name: "lookup", policy: { effect: "read", timeoutSeconds: 10 }, inputSchema: { type: "object", properties: { item: { type: "string" } }, required: ["item"], additionalProperties: false } },
    { name: "send", policy: { effect: "write", timeoutSeconds: 10, confirmation: "required" }, inputSchema: { type: "object", properties: { to: { type: "string" } }, required: ["to"] } },
  ],
  { dir: join(import.meta.dirname, "packages", "tracer") },
);
const versionFile = file("tracer.json", JSON.stringify(version));
const agentFile = file(
  "agent.yaml",
  `apiVersion: v1
kind: Agent
name: shop
instructions: Help the customer.
tools: [tracer/lookup, tracer/send]
origins: [https://shop.example]
channels:
  web: {}
`,
);
const cases = (name: string) =>
  file(
    "cases.yaml",
    `apiVersion: v1
kind: EvalCases
agent: shop
reads: fixtures
cases:
  - name: looks up the stock
    repeat: 1
    turns:
      - customer: how many socks are in stock?
        expect:
          - called: { tool: tracer/lookup, args: { item: socks }, match: exact }
          - reply: { contains: "3 pairs" }
          - maxSteps: 2
          - maxTokens: 59
  - name: ${JSON.stringify(name)}
    turns:
      - customer: hi
        expect:
          - reply: { contains: Hello }
`,
  );

beforeAll(async () => {
  fake = await startFakeOpenAI({ model: MODEL, apiKey: "sk-eval" }, async (request, response) => {
    const messages = request.body.messages as { role: string; content: string | null }[];
    const last = messages.at(-1)!;
    if (last.role === "tool") return writeSse(response, [chunk.role(), chunk.text("There are 3 pairs."), chunk.finish("stop"), chunk.usage(30, 5)]);
    if (String(last.content).includes("socks")) {
      return writeSse(response, [chunk.role(), chunk.tool(0, { id: "call_1", name: "tracer__lookup", arguments: '{"item":"socks"}' }), chunk.finish("tool_calls"), chunk.usage(20, 4)]);
    }
    // Of every ten greetings, the first seven are answered right.
    const right = greetings++ % 10 < 7;
    return writeSse(response, [chunk.role(), chunk.text(right ? "Hello there" : NASTY), chunk.finish("stop"), chunk.usage(12, 3)]);
  });
  env = { OPENAI_API_KEY: "sk-eval", OPENAI_BASE_URL: fake.baseUrl, CAPLO_MODEL: MODEL };
});

afterAll(async () => {
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function cli(args: string[], environment: NodeJS.ProcessEnv = env) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runEval(args, { out: (line) => out.push(line), err: (line) => err.push(line) }, environment);
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("caplo eval with an OpenAI-compatible model", () => {
  it("a pass rate exactly at --min-pass passes (exit 0), with tokens counted from the provider's usage", async () => {
    greetings = 0;
    const json = join(dir, "report.json");
    const run = await cli([cases("greets <politely> & \"warmly\""), "--agent", agentFile, "--packages", versionFile, "--repeat", "10", "--min-pass", "0.7", "--concurrency", "1", "--json", json]);
    expect(run.code, `${run.out}\n${run.err}`).toBe(0);
    expect(fake.problems).toEqual([]);
    // The read was answered from the package's fixture (tests/eval/packages/tracer/tests/lookup.json).
    const toolMessages = fake.requests.flatMap((request) => (request.body.messages as { role: string; content: string }[]).filter((message) => message.role === "tool").map((message) => message.content));
    expect(toolMessages).toEqual(['{"item":"socks","stock":3}']);
    expect(run.out).toMatch(/\[ 1\/11\] ✓ looks up the stock \(run 1\/1, 2 steps, 59 tokens, \d+ ms\)/);
    expect(run.out).toMatch(/✓ greets <politely> & "warmly"\s+70\.0%\s+7\/10\s+10\s+150\s/);
    expect(run.out).toContain("PASS: every case passed at least 70.0% of its runs (overall 72.7%)");
    const report = JSON.parse(readFileSync(json, "utf8"));
    expect(report).toMatchObject({ ok: true, model: `openai:${MODEL}`, minPass: 0.7, runs: 11, passed: 8, tokens: 209 });
    expect(report.cases[0]).toMatchObject({ name: "looks up the stock", runs: 1, passed: 1, steps: 2, tokens: 59, scriptedWrites: 0 });
    expect(report.cases[1]).toMatchObject({ runs: 10, passed: 7, passRate: 0.7, ok: true, tokens: 150 });
    expect(report.cases[1].failures[0].problems[0]).toContain("turn 1: reply contains");
  });

  it("just under --min-pass fails (exit 1); the JUnit XML is well-formed, one testcase per case, every text escaped", async () => {
    greetings = 0;
    const junit = join(dir, "junit.xml");
    const name = 'greets <politely> & "warmly"';
    const run = await cli([cases(name), "--agent", agentFile, "--packages", versionFile, "--repeat", "10", "--min-pass", "71%", "--concurrency", "1", "--junit", junit, "--quiet"]);
    expect(run.code).toBe(1);
    expect(run.out).not.toContain("[ 1/11]");
    expect(run.out).toContain(`FAIL: 1 case under 71.0%: ${name}`);
    // The model's escape sequence reaches the terminal as text, never as an escape.
    expect(run.out).not.toContain("\u001b");
    expect(run.out).toContain("\\u001b[31mred");
    const xml = readFileSync(junit, "utf8");
    expect(xmlProblem(xml)).toBeUndefined();
    const doc = new new Window().DOMParser().parseFromString(xml, "application/xml");
    const testcases = [...doc.getElementsByTagName("testcase")];
    expect(testcases.map((testcase) => testcase.getAttribute("name"))).toEqual(["looks up the stock", name]);
    const failure = testcases[1]!.getElementsByTagName("failure")[0]!;
    expect(failure.getAttribute("message")).toBe("passed 7 of 10 runs (70.0%), under 71.0%");
    // The model's text comes back intact, less the one character XML cannot hold.
    expect(failure.textContent).toContain('Bye <b>&\\"now\\"</b> ]]>');
    expect(testcases[0]!.getElementsByTagName("failure")).toHaveLength(0);
    const properties = Object.fromEntries([...testcases[1]!.getElementsByTagName("property")].map((property) => [property.getAttribute("name"), property.getAttribute("value")]));
    expect(properties).toMatchObject({ runs: "10", passed: "7", tokens: "150" });
    expect(doc.getElementsByTagName("testsuite")[0]!.getAttribute("failures")).toBe("1");
  });

  it("writes a report to standard output with --json - and keeps the other lines on standard error", async () => {
    const run = await cli([cases("greets"), "--agent", agentFile, "--packages", versionFile, "--filter", "stock", "--json", "-"]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.out).cases).toHaveLength(1);
    expect(run.err).toContain("looks up the stock");
  });
});

describe("caplo eval of a published release", () => {
  it("names the release by its id or by its agent for the latest, from --releases", async () => {
    const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name: "shop", instructions: "Help the customer.", origins: ["https://shop.example"], channels: { web: {} }, tools: ["tracer/lookup", "tracer/send"] });
    if (!config.ok) throw new Error(JSON.stringify(config.issues));
    const created = createRelease(config.agent, [version], new Date());
    if (!created.ok) throw new Error(JSON.stringify(created.issues));
    const releases = join(dir, "releases");
    await new FileReleaseStore(releases).put(created.release);
    for (const name of [created.release.id, "shop"]) {
      const run = await cli([cases("greets"), "--release", name, "--releases", releases, "--filter", "stock"]);
      expect(run.code, run.err).toBe(0);
      expect(run.out).toContain(`caplo eval: ${created.release.id} with openai:${MODEL}`);
    }
  });
});

describe("caplo eval refuses what it cannot run with exit 2 and a clear message", () => {
  it("each usage error", async () => {
    const good = cases("greets");
    const bad = await cli([good, "--agent", agentFile, "--packages", versionFile, "--min-pass", "1.5"]);
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.err).toContain("--min-pass is a rate from 0 to 1");
    expect((await cli([good, "--release", "shop", "--agent", agentFile])).err).toContain("name what to evaluate");
    expect((await cli([good])).err).toContain("name what to evaluate");
    expect((await cli([good, "--agent", agentFile])).err).toContain("--agent needs --packages");
    expect((await cli([good, "--agent", agentFile, "--packages", versionFile, "--repeat", "0"])).err).toContain("--repeat is a whole number from 1 to 100");
    expect((await cli([good, "--agent", agentFile, "--packages", versionFile, "--verbose"])).err).toContain("unknown option --verbose");
    expect((await cli([good, "--agent", agentFile, "--packages", versionFile, "--filter", "nothing-like-it"])).code).toBe(2);
    const missing = await cli([good, "--release", "shop@sha256:" + "0".repeat(64), "--releases", dir]);
    expect(missing).toMatchObject({ code: 2 });
    expect(missing.err).toContain("[release_not_found]");
  });

  it("an invalid cases file is reported with its line and column; a file for another agent is refused", async () => {
    const broken = file("broken.yaml", "apiVersion: v1\nkind: EvalCases\ncases:\n  - name: x\n    turns:\n      - customer: hi\n        expect:\n          - replied: { contains: x }\n");
    const run = await cli([broken, "--agent", agentFile, "--packages", versionFile]);
    expect(run.code).toBe(2);
    expect(run.err).toBe(`${broken}:8:13: cases[0].turns[0].expect[0].replied: unknown field "replied": other fields are refused [eval_cases_invalid]`);
    const other = file("other.yaml", "apiVersion: v1\nkind: EvalCases\nagent: billing\ncases:\n  - name: x\n    turns: [{ customer: hi }]\n");
    expect((await cli([other, "--agent", agentFile, "--packages", versionFile])).err).toContain("[eval_agent_mismatch]");
  });
});
