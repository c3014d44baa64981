// Evaluations on the server through the team API of a real `caplo serve` (SQLite file, the sandboxed runner,
// the scripted model): a served tool version's fixtures run on the server's sandbox with the write tool's
// fixture skipped, and a release's eval cases run in the background; the trace server sees the reads and no
// write, and the live store keeps exactly the conversation it had. Bad requests get coded errors.
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAgentConfig } from "@caplo/shared";
import { createRelease, FileReleaseStore } from "../../server/src/agents/index.ts";
import { parseServeArgs, startServe, type RunningServer } from "../../server/src/cli/serve.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { TEST_HOST, testVersion } from "../runner/testPackages.ts";

const TOKEN = "ct_eval-token-0123456789abcdefghijklmnopqrstuv";
const dir = mkdtempSync(join(tmpdir(), "caplo-team-evals-"));
const traces: string[] = [];
let trace: Server;
let server: RunningServer;
const count = (prefix: string) => traces.filter((path) => path.startsWith(prefix)).length;

const version = testVersion(
  "tracer",
  [
    { name: "lookup", policy: { effect: "read", timeoutSeconds: 10 }, inputSchema: { type: "object", properties: { item: { type: "string" } }, required: ["item"], additionalProperties: false } },
    { name: "send", policy: { effect: "write", timeoutSeconds: 10, confirmation: "required" }, inputSchema: { type: "object", properties: { to: { type: "string" }, amount: { type: "string" } }, required: ["to", "amount"] } },
  ],
  { dir: join(import.meta.dirname, "packages", "tracer"), egress: ["trace.caplo.test"], effectOutcomes: true },
);

const CASES = `apiVersion: v1
kind: EvalCases
agent: shop
cases:
  - name: looks up the stock for real
    turns:
      - customer: how many socks
        expect:
          - called: { tool: tracer/lookup, args: { item: socks } }
          - reply: { contains: '"stock":3' }
  - name: sends after the customer confirms
    turns:
      - customer: send 25 to Ana
        confirm: { outcome: applied, result: { to: Ana, amount: "25" } }
        expect:
          - proposed: { tool: tracer/send, args: { to: Ana, amount: "25" } }
          - reply: { contains: Sent. }
`;

beforeAll(async () => {
  trace = createServer((request, response) => {
    traces.push((request.url ?? "/").slice(1));
    response.end(String(traces.length));
  });
  await new Promise<void>((resolve) => trace.listen(0, "127.0.0.1", resolve));
  const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name: "shop", instructions: "Help.", origins: ["https://shop.example"], channels: { web: {} }, tools: ["tracer/lookup", "tracer/send"] });
  if (!config.ok) throw new Error(JSON.stringify(config.issues));
  const release = createRelease(config.agent, [version], new Date());
  if (!release.ok) throw new Error(JSON.stringify(release.issues));
  await new FileReleaseStore(join(dir, "releases")).put(release.release);
  const script = join(dir, "script.json");
  writeFileSync(
    script,
    JSON.stringify([
      { whenNote: { regex: "outcome: applied", flags: "i" }, replies: [{ text: "Sent." }] },
      { when: { regex: "how many (\\w+)", flags: "i" }, replies: [{ toolCalls: [{ name: "tracer__lookup", args: { item: "$1" } }] }, { text: "{{tool}}" }] },
      { when: { regex: "send (\\d+) to (\\w+)", flags: "i" }, replies: [{ toolCalls: [{ name: "tracer__send", args: { to: "$2", amount: "$1" } }] }] },
      { when: "hello", replies: [{ text: "Hi, live customer!" }] },
    ]),
  );
  const hash = createHash("sha256").update(TOKEN).digest("hex");
  const parsed = parseServeArgs(["--port", "0", "--agent", "shop", "--db", join(dir, "caplo.db"), "--releases", join(dir, "releases"), "--script", script], { CAPLO_TEAM_MEMBERS: `ana=sha256:${hash}` });
  if (!parsed.ok) throw new Error(parsed.error.message);
  const runner = new CaploToolRunner({ hostModule: TEST_HOST, egressResolve: `trace.caplo.test=127.0.0.1:${(trace.address() as { port: number }).port}` });
  const started = await startServe({ ...parsed.options, runner }, () => undefined);
  if (!started.ok) throw new Error(started.error.message);
  server = started.server;
}, 60_000);

afterAll(async () => {
  await server?.close();
  trace?.closeAllConnections();
  await new Promise((resolve) => trace?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const call = (method: string, path: string, body?: unknown, token: string | undefined = TOKEN) =>
  fetch(`${server.url}/v1/team${path}`, {
    method,
    headers: { ...(token && { authorization: `Bearer ${token}` }), ...(body !== undefined && { "content-type": "application/json" }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });

describe("evaluations through the team API", () => {
  it("runs a served tool version's fixtures on the server's sandbox, skipping the write tool's", async () => {
    const response = await call("POST", "/evals/fixtures", { packageVersionId: version.id });
    expect(response.status).toBe(200);
    const report = (await response.json()) as { fixtures: { label: string; state: string; problems: string[] }[]; passed: number; skipped: number; failed: number };
    expect(report).toMatchObject({ passed: 2, failed: 0, skipped: 1 });
    expect(report.fixtures.find((fixture) => fixture.state === "skipped")).toMatchObject({ label: "tests/lookup.json › writes are never answered", problems: ["write tool: fixture runs on Caplo skip writes"] });
    expect(count("read")).toBe(2);
    expect(count("write")).toBe(0);
  }, 60_000);

  it("runs a release's eval cases in the background without touching a live conversation or running a write", async () => {
    const live = await server.engine.openConversation({ agent: "shop", channel: "web", capabilities: { editableFields: true, forms: true, questions: true, files: false, pages: false, richText: true }, ownerId: "live-owner" });
    await server.engine.handle(live.id, "live-owner", { type: "message", text: "hello" });
    const before = { conversations: await server.store.listConversations({}), events: await server.store.listEvents(live.id, 0), writes: await server.store.listWrites(live.id) };
    const reads = count("read");

    const started = await call("POST", "/evals/runs", { release: "shop", cases: CASES, repeat: 2 });
    expect(started.status).toBe(202);
    const { run } = (await started.json()) as { run: { id: string; state: string } };
    expect(run.state).toBe("running");
    let view: { state: string; progress: { done: number; total: number }; result?: { ok: boolean; runs: number; passed: number; refused: string[]; cases: { scriptedWrites: number }[] } } | undefined;
    for (let attempt = 0; attempt < 200; attempt++) {
      view = ((await (await call("GET", `/evals/runs/${run.id}`)).json()) as { run: typeof view }).run;
      if (view!.state !== "running") break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(view).toMatchObject({ state: "done", progress: { done: 4, total: 4 }, result: { ok: true, runs: 4, passed: 4, refused: [] } });
    expect(view!.result!.cases[1]!.scriptedWrites).toBe(2);
    expect(count("read")).toBe(reads + 2);
    expect(count("write")).toBe(0);
    expect(await server.store.listConversations({})).toEqual(before.conversations);
    expect(await server.store.listEvents(live.id, 0)).toEqual(before.events);
    expect(await server.store.listWrites(live.id)).toEqual(before.writes);
    const listed = (await (await call("GET", "/evals/runs")).json()) as { runs: { id: string; ok?: boolean }[] };
    expect(listed.runs[0]).toMatchObject({ id: run.id, ok: true });
  }, 60_000);

  it("answers bad requests with coded errors and changes nothing", async () => {
    expect((await call("POST", "/evals/runs", { release: "shop", cases: CASES }, "")).status).toBe(401);
    expect((await call("POST", "/evals/fixtures", { packageVersionId: "other@sha256:00" })).status).toBe(404);
    const missing = await call("POST", "/evals/runs", { release: "billing", cases: CASES });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("release_not_found");
    const invalid = await call("POST", "/evals/runs", { release: "shop", cases: CASES.replace("customer: how many socks", "custom: how many socks") });
    expect(invalid.status).toBe(400);
    const body = (await invalid.json()) as { errors: { code: string; path: string; line: number }[] };
    expect(body.errors).toContainEqual(expect.objectContaining({ code: "eval_cases_invalid", path: "cases[0].turns[0].custom", line: 7 }));
    expect(body.errors).toContainEqual(expect.objectContaining({ path: "cases[0].turns[0].customer" }));
    expect((await call("POST", "/evals/runs", { release: "shop", cases: CASES, member: "ben" })).status).toBe(400);
    expect((await call("POST", "/evals/runs", { release: "shop", cases: CASES, minPass: "2" })).status).toBe(400);
    expect((await call("GET", "/evals/runs/ev_nope")).status).toBe(404);
    // 11 cases × 100 runs: over the server's 1000 case runs per eval run.
    const many = `apiVersion: v1\nkind: EvalCases\ncases:\n${Array.from({ length: 11 }, (_, index) => `  - name: case ${index}\n    turns: [{ customer: hi }]\n`).join("")}`;
    const huge = await call("POST", "/evals/runs", { release: "shop", cases: many, repeat: 100 });
    expect(huge.status).toBe(400);
    expect(((await huge.json()) as { error: { code: string } }).error.code).toBe("eval_too_large");
  });
});
