// The durable invocation log `caplo serve` keeps (JsonlLogStore with its size bound) and `caplo tool logs
// --db/--file` reading it: the bound at its boundary, torn lines, a record too big for it, a write that
// fails, where serve puts the file, and end to end through the real sandboxed runner with a secret that the
// tool logs and that never reaches the file.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { DEFAULT_LOG_FILE, DEFAULT_LOG_MAX_BYTES, JsonlLogStore, invocationLogSettings, type InvocationRecord } from "../../server/src/runner/logStore.ts";
import { run as toolLogs } from "../../server/src/cli/tool-logs.ts";
import { TEST_HOST, testVersion } from "./testPackages.ts";

const scratch = mkdtempSync(join(tmpdir(), "caplo-invlog-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function capture(run: () => Promise<number>): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
  const error = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
  try {
    const code = await run();
    return { code, out: lines.join("\n") };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

function record(id: string, logs: InvocationRecord["logs"] = []): InvocationRecord {
  return { invocationId: id, packageVersionId: "p@sha256:1", tool: "t", kind: "call", at: "2026-12-03T08:00:00.000Z", durationMs: 1, isError: false, logs };
}
const lineBytes = (entry: InvocationRecord) => Buffer.byteLength(JSON.stringify(entry) + "\n");

describe("JsonlLogStore's bound", () => {
  it("starts a new file exactly when the next line would take it over half the bound, and keeps the newest", () => {
    const file = join(scratch, "bound", "invocations.jsonl");
    const one = lineBytes(record("inv-000"));
    // Half the bound holds exactly four records: the fourth fills it to the byte and does not rotate.
    const store = new JsonlLogStore(file, { maxBytes: one * 8 });
    for (let index = 0; index < 4; index++) store.record(record(`inv-00${index}`));
    expect(statSync(file).size).toBe(one * 4);
    expect(() => statSync(store.previousFile)).toThrow();
    // The fifth would be one record over: the four become FILE.1 and the fifth starts FILE.
    store.record(record("inv-004"));
    expect(statSync(file).size).toBe(one);
    expect(statSync(store.previousFile).size).toBe(one * 4);
    for (let index = 5; index < 13; index++) store.record(record(`inv-${String(index).padStart(3, "0")}`));
    // Thirteen written, the bound holds eight: the oldest went, the newest eight or more are read in order.
    const ids = store.read().map((entry) => entry.invocationId);
    expect(ids.at(-1)).toBe("inv-012");
    expect(ids.length).toBeGreaterThanOrEqual(4);
    expect(ids.length).toBeLessThanOrEqual(8);
    expect(ids).toEqual([...ids].sort());
    expect(ids).not.toContain("inv-000");
    expect(statSync(file).size + statSync(store.previousFile).size).toBeLessThanOrEqual(one * 8);
    expect(store.read("inv-012")).toHaveLength(1);
    expect(store.read("inv-000")).toEqual([]);
  });

  it("grouped (serve): one turn's records are one write on the next turn, rotated at the same byte, read back before then, and written by flush", async () => {
    const file = join(scratch, "grouped", "invocations.jsonl");
    const one = lineBytes(record("inv-000"));
    const store = new JsonlLogStore(file, { maxBytes: one * 8, grouped: true });
    // Five in one turn of the loop: nothing is on disk until the next turn, then the first four fill half the
    // bound to the byte and became FILE.1 before the fifth, exactly as five records one by one do.
    for (let index = 0; index < 5; index++) store.record(record(`inv-00${index}`));
    expect(() => statSync(file)).toThrow();
    await new Promise((resolve) => setImmediate(resolve));
    expect(statSync(file).size).toBe(one);
    expect(statSync(store.previousFile).size).toBe(one * 4);
    expect(store.read().map((entry) => entry.invocationId)).toEqual(["inv-000", "inv-001", "inv-002", "inv-003", "inv-004"]);
    // A record still waiting is read back (read writes first); flush writes what waits at once.
    store.record(record("inv-005"));
    expect(store.read("inv-005")).toHaveLength(1);
    store.record(record("inv-006"));
    store.flush();
    expect(statSync(file).size).toBe(one * 3);
    expect(new JsonlLogStore(file).read().map((entry) => entry.invocationId)).toEqual(["inv-000", "inv-001", "inv-002", "inv-003", "inv-004", "inv-005", "inv-006"]);
    await new Promise((resolve) => setImmediate(resolve)); // the turn's own flush finds nothing left to write
    expect(statSync(file).size).toBe(one * 3);
  });

  it("grouped: a turn's records that cannot be written are reported, and the next turn's are written", async () => {
    const dir = join(scratch, "grouped-blocked");
    mkdirSync(join(dir, "invocations.jsonl"), { recursive: true }); // a folder where the file should be
    const errors: Error[] = [];
    const store = new JsonlLogStore(join(dir, "invocations.jsonl"), { grouped: true, onError: (error) => errors.push(error) });
    store.record(record("inv-x"));
    store.record(record("inv-y"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors).toHaveLength(1);
    rmSync(join(dir, "invocations.jsonl"), { recursive: true });
    store.record(record("inv-z"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.read().map((entry) => entry.invocationId)).toEqual(["inv-z"]);
  });

  it("skips a torn or foreign line and reads the rest", () => {
    const file = join(scratch, "torn", "invocations.jsonl");
    const store = new JsonlLogStore(file);
    store.record(record("inv-a"));
    appendFileSync(file, '{"invocationId":"inv-torn","logs":[{"lev\n42\n{"no":"id"}\n');
    store.record(record("inv-b"));
    expect(store.read().map((entry) => entry.invocationId)).toEqual(["inv-a", "inv-b"]);
  });

  it("keeps a record over half the bound by dropping log lines, and says how many", () => {
    const file = join(scratch, "huge", "invocations.jsonl");
    const store = new JsonlLogStore(file, { maxBytes: 4096 });
    const logs = Array.from({ length: 100 }, (_, index) => ({ level: "info" as const, message: `line ${index} ${"x".repeat(40)}`, at: "2026-12-03T08:00:00.000Z" }));
    store.record(record("inv-huge", logs));
    const [kept] = store.read("inv-huge");
    expect(statSync(file).size).toBeLessThanOrEqual(2048);
    expect(kept!.logs.at(-1)!.message).toMatch(/^\d+ log lines dropped: the record was over the invocation log's limit$/);
    const dropped = Number(/^(\d+)/.exec(kept!.logs.at(-1)!.message)![1]);
    expect(kept!.logs.length - 1 + dropped).toBe(100);
    expect(kept!.logs[0]!.message).toBe(logs[0]!.message);
  });

  it("never throws for a record it cannot write, and reports it", () => {
    const dir = join(scratch, "blocked");
    mkdirSync(join(dir, "invocations.jsonl"), { recursive: true }); // a folder where the file should be
    const errors: Error[] = [];
    const store = new JsonlLogStore(join(dir, "invocations.jsonl"), { onError: (error) => errors.push(error) });
    expect(() => store.record(record("inv-x"))).not.toThrow();
    expect(errors).toHaveLength(1);
  });
});

describe("caplo tool logs shows a package's words, never its control characters", () => {
  it("escape sequences (clear the screen, set the clipboard, recolour) and a CR or newline forging a line are printed as \\u escapes", async () => {
    const file = join(scratch, "terminal", "invocations.jsonl");
    // What a package's ctx.log line is kept as: the runner stores its message and data as sent.
    const hostile = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[H\r2026-12-03T08:00:00.000Z info  all clean\n  2026-12-03T08:00:00.001Z info  forged";
    new JsonlLogStore(file).record(record("inv-term", [{ level: "info", message: hostile, data: { colour: "\u009b31m red \x7f" }, at: "2026-12-03T08:00:00.000Z" }]));
    const shown = await capture(() => toolLogs(["inv-term", "--file", file]));
    expect(shown.code).toBe(0);
    // eslint-disable-next-line no-control-regex
    expect(shown.out).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
    const lines = shown.out.split("\n");
    expect(lines).toHaveLength(3); // the summary, the package, the one log line: nothing forged
    expect(lines[2]).toContain("\\u001b]52;c;cHduZWQ=\\u0007\\u001b[2J\\u001b[H\\u000d2026-12-03T08:00:00.000Z info  all clean\\u000a  2026");
    expect(lines[2]).toContain("\\u009b31m red \\u007f");
  });
});

describe("where caplo serve keeps it", () => {
  it("beside the SQLite file, per node with PostgreSQL, or CAPLO_INVOCATION_LOG; bounded by CAPLO_INVOCATION_LOG_MAX_MB", () => {
    expect(invocationLogSettings("/var/caplo/caplo.db", {})).toEqual({ ok: true, file: "/var/caplo/invocations.jsonl", maxBytes: DEFAULT_LOG_MAX_BYTES });
    expect(invocationLogSettings("postgres://u@127.0.0.1/caplo", {})).toMatchObject({ ok: true, file: DEFAULT_LOG_FILE });
    expect(invocationLogSettings("/var/caplo/caplo.db", { CAPLO_INVOCATION_LOG: "/logs/inv.jsonl" })).toMatchObject({ ok: true, file: "/logs/inv.jsonl" });
    expect(invocationLogSettings("x.db", { CAPLO_INVOCATION_LOG_MAX_MB: "1" })).toMatchObject({ ok: true, maxBytes: 1024 * 1024 });
    expect(invocationLogSettings("x.db", { CAPLO_INVOCATION_LOG_MAX_MB: "102400" })).toMatchObject({ ok: true, maxBytes: 102400 * 1024 * 1024 });
    for (const bad of ["0", "102401", "1.5", "-1", "ten"]) {
      expect(invocationLogSettings("x.db", { CAPLO_INVOCATION_LOG_MAX_MB: bad })).toMatchObject({ ok: false, error: { code: "setting_invalid", path: "CAPLO_INVOCATION_LOG_MAX_MB" } });
    }
  });
});

describe("a served call's logs, end to end", () => {
  const SECRET = "sk-live-9f8e7d6c5b4a";
  const version = testVersion(
    "outcomes",
    [
      { name: "echo", policy: { effect: "read", timeoutSeconds: 5 }, inputSchema: { type: "object", properties: { word: { type: "string" } } } },
      { name: "cancel", policy: { effect: "write", timeoutSeconds: 5, confirmation: "required" }, hasStatus: true },
    ],
    { secrets: ["API_KEY"], effectOutcomes: true },
  );
  const db = join(scratch, "serve", "caplo.db");
  let runner: CaploToolRunner;
  let file: string;

  beforeAll(async () => {
    const settings = invocationLogSettings(db, {});
    if (!settings.ok) throw new Error(settings.error.message);
    file = settings.file;
    runner = new CaploToolRunner({ hostModule: TEST_HOST, logStore: new JsonlLogStore(settings.file, { maxBytes: settings.maxBytes }) });
    await runner.load(version);
  }, 60_000);
  afterAll(async () => {
    await runner?.close();
  });

  it("keeps the record with its conversation, turn and key, never the secret the tool logged, and caplo tool logs --db shows it", async () => {
    const read = await runner.call({ packageVersionId: version.id, tool: "echo", args: { word: "hi" }, context: { invocationId: "inv_read1", conversationId: "conv_1", turnId: "turn_1", secrets: { API_KEY: SECRET } } });
    expect(read.logs.map((line) => line.message)).toEqual(["echo with key [secret:API_KEY]"]);
    const write = await runner.call({ packageVersionId: version.id, tool: "cancel", args: { mode: "applied" }, context: { invocationId: "inv_write1", conversationId: "conv_2", turnId: "turn_2", idempotencyKey: "idem-77", secrets: { API_KEY: SECRET } } });
    expect(write.outcome?.outcome).toBe("applied");
    const check = await runner.checkStatus({ packageVersionId: version.id, tool: "cancel", operationRef: "op-applied", context: { invocationId: "inv_check1", conversationId: "conv_2", idempotencyKey: "idem-77", secrets: { API_KEY: SECRET } } });
    expect(check.outcome).toBe("applied");

    const text = readFileSync(file, "utf8");
    expect(text).toContain("[secret:API_KEY]");
    expect(text).not.toContain(SECRET);
    expect(new JsonlLogStore(file).read("inv_read1")[0]).toMatchObject({ tool: "echo", kind: "call", conversationId: "conv_1", turnId: "turn_1", isError: false });

    const list = await capture(() => toolLogs(["--db", db]));
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/inv_read1 {2}echo \(call\) ok \d+ ms {2}1 log line {2}conversation conv_1/);
    expect(list.out).toMatch(/inv_write1 {2}cancel \(call\) applied/);
    expect(list.out).toMatch(/inv_check1 {2}cancel \(status\) applied/);

    const one = await capture(() => toolLogs(["inv_read1", "--db", db]));
    expect(one.code).toBe(0);
    expect(one.out).toContain("info  echo with key [secret:API_KEY]");
    expect(one.out).toContain("turn turn_1");
    expect(one.out).not.toContain(SECRET);

    const ofConversation = await capture(() => toolLogs(["--file", file, "--conversation", "conv_2"]));
    expect(ofConversation.out).toContain("inv_write1");
    expect(ofConversation.out).toContain("inv_check1");
    expect(ofConversation.out).not.toContain("inv_read1");
    const ofKey = await capture(() => toolLogs(["--db", db, "--key", "idem-77", "--limit", "1"]));
    expect(ofKey.out.split("\n")).toHaveLength(1);
    expect(ofKey.out).toContain("inv_check1");

    const unknown = await capture(() => toolLogs(["inv_nope", "--db", db]));
    expect(unknown.code).toBe(1);
    expect(unknown.out).toContain(`invocation_not_found: no invocation inv_nope in ${file}`);
  }, 60_000);

  it("refuses bad usage with a code and exit 2", async () => {
    expect(await capture(() => toolLogs(["--db", db, "--dir", scratch]))).toMatchObject({ code: 2, out: expect.stringContaining("usage_invalid: --dir and --db name different logs") });
    expect(await capture(() => toolLogs(["--db", db, "--limit", "0"]))).toMatchObject({ code: 2, out: expect.stringContaining("limit_invalid") });
    expect(await capture(() => toolLogs(["--verbose"]))).toMatchObject({ code: 2, out: expect.stringContaining("option_unknown: unknown option --verbose") });
    expect(await capture(() => toolLogs(["--db"]))).toMatchObject({ code: 2, out: expect.stringContaining("option_value_missing") });
    expect(await capture(() => toolLogs(["a", "b", "--db", db]))).toMatchObject({ code: 2, out: expect.stringContaining("usage_invalid: one invocation id at most") });
    const missing = await capture(() => toolLogs(["inv_x", "--file", join(scratch, "none.jsonl")]));
    expect(missing).toMatchObject({ code: 1, out: expect.stringContaining("the file does not exist") });
  });
});
