// `caplo tool test` and `caplo tool logs` end to end: a real package (packages/fixtured, built by the
// build, served by the SDK's host in the sandbox), its fixtures, secrets by name, exit codes, and the
// invocation logs it leaves behind.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { run as toolTest } from "../../server/src/cli/tool-test.ts";
import { run as toolLogs } from "../../server/src/cli/tool-logs.ts";
import { buildPackage } from "../../server/src/build/index.ts";
import { CaploToolRunner, MemoryLogStore } from "../../server/src/runner/index.ts";
import { HOSTED_WRITE_SKIP, loadFixtures, runFixture, type LoadedFixture } from "../../server/src/runner/fixtures.ts";
import { PACKAGES_DIR } from "./testPackages.ts";

const dir = join(PACKAGES_DIR, "fixtured");
const scratch = mkdtempSync(join(tmpdir(), "caplo-cli-"));

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

afterEach(() => {
  delete process.env.DEMO_KEY;
});
afterAll(() => {
  rmSync(join(dir, ".caplo"), { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

describe("caplo tool test", () => {
  it("runs every fixture, write fixtures for real, prints pass per fixture and exits 0", async () => {
    process.env.DEMO_KEY = "key-from-env-1234";
    const { code, out } = await capture(() => toolTest([dir]));
    expect(out).toContain("✓ tests/book.json › books a free item (book, write → applied");
    expect(out).toContain("✓ tests/book.json › a full item is not booked (book, write → not_applied");
    expect(out).toContain("✓ tests/lookup.json › finds an item by id (lookup, read");
    expect(out).toContain('log: info  looked up {"id":"IT-001"}');
    expect(out).toContain("3 passed, 0 failed");
    expect(out).not.toContain("key-from-env-1234");
    expect(code).toBe(0);
  }, 120_000);

  it("takes secrets from the secrets file, fails missing secrets, bad fixtures and mismatches with their paths, and exits 1", async () => {
    const copy = join(PACKAGES_DIR, "fixtured-copy");
    cpSync(dir, copy, { recursive: true, filter: (source) => !source.includes(".caplo") });
    try {
      const file = join(scratch, "secrets.env");
      writeFileSync(file, "DEMO_KEY=from-file-5678\n");
      writeFileSync(join(copy, "caplo.yaml"), readFileSync(join(dir, "caplo.yaml"), "utf8").replace("name: fixtured", "name: fixtured-copy"));
      writeFileSync(join(copy, "tests", "wrong.json"), JSON.stringify({ name: "wrong name", tool: "lookup", input: { id: "IT-001" }, secrets: ["DEMO_KEY"], expect: { result: { name: "Wrong" } } }));
      writeFileSync(join(copy, "tests", "nosecret.json"), JSON.stringify({ name: "no secret", tool: "lookup", input: { id: "IT-001" }, secrets: ["OTHER_KEY"] }));
      writeFileSync(join(copy, "tests", "bad.json"), JSON.stringify({ tool: "lookup", inputs: {} }));
      writeFileSync(join(copy, "tests", "readstatus.json"), JSON.stringify({ name: "status of a read", tool: "lookup", status: { operationRef: "op_1" }, expect: { outcome: "applied" } }));
      const { code, out } = await capture(() => toolTest([copy, "--secrets", file]));
      expect(out).toContain("✓ tests/lookup.json › finds an item by id");
      expect(out).not.toContain("from-file-5678");
      expect(out).toContain("✗ tests/wrong.json › wrong name");
      expect(out).toContain('/result/name: expected "Wrong", got "Item IT-001"');
      expect(out).toContain("✗ tests/nosecret.json › no secret");
      // A fixture names only the package's declared secrets: the tester's other variables stay unread.
      expect(out).toContain("fixture_secret_undeclared: OTHER_KEY is not among the package's secrets");
      expect(out).toContain(`secrets: DEMO_KEY from ${file}`);
      expect(out).toContain("✗ tests/bad.json");
      expect(out).toContain("fixture_invalid /inputs");
      expect(out).toContain("✗ tests/readstatus.json › status of a read");
      expect(out).toContain("fixture_status_unavailable: lookup is a read tool");
      expect(out).toContain("3 passed, 4 failed");
      expect(code).toBe(1);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  }, 120_000);

  it("--hosted skips write fixtures without running them, runs the reads with secrets from the file only, and exits 0", async () => {
    process.env.DEMO_KEY = "key-from-env-1234";
    const log = join(dir, ".caplo", "invocations.jsonl");
    const tools = () => readFileSync(log, "utf8").trim().split("\n").map((line) => (JSON.parse(line) as { tool: string }).tool);
    const local = await capture(() => toolTest([dir, "--filter", "finds"])); // the log file exists before the hosted run
    expect(local.out).toContain("secrets: DEMO_KEY from the environment variable DEMO_KEY");
    const before = tools();
    // Hosted runs never read the environment: without a secrets file the read's secret is missing.
    const unread = await capture(() => toolTest([dir, "--hosted", "--secrets", join(scratch, "none.env")]));
    expect(unread.out).toContain("secret_missing: DEMO_KEY has no value: set it in");
    expect(unread.code).toBe(1);
    const file = join(scratch, "hosted.env");
    writeFileSync(file, "DEMO_KEY=from-file-hosted\n");
    const { code, out } = await capture(() => toolTest([dir, "--hosted", "--secrets", file]));
    expect(out).toContain(`secrets: DEMO_KEY from ${file}`);
    expect(out).toContain("- tests/book.json › books a free item (book, write) skipped: write tool: fixture runs on Caplo skip writes");
    expect(out).toContain("- tests/book.json › a full item is not booked (book, write) skipped: write tool: fixture runs on Caplo skip writes");
    expect(out).toContain("✓ tests/lookup.json › finds an item by id (lookup, read");
    expect(out).toContain("1 passed, 0 failed, 2 skipped");
    expect(code).toBe(0);
    // The runner records every call it is asked for: the hosted run asked for the read only.
    expect(tools().slice(before.length)).toEqual(["lookup"]);
    expect(out).not.toContain("environment variable");
  }, 120_000);

  it("refuses an unknown option with exit 2", async () => {
    const { code, out } = await capture(() => toolTest([dir, "--host"]));
    expect(code).toBe(2);
    expect(out).toContain("option_unknown: unknown option --host");
  });

  it("exits 2 when the package does not build", async () => {
    const broken = join(scratch, "broken");
    cpSync(dir, broken, { recursive: true });
    writeFileSync(join(broken, "caplo.yaml"), "apiVersion: v2\n");
    const { code, out } = await capture(() => toolTest([broken]));
    expect(code).toBe(2);
    expect(out).toContain("did not build");
  });
});

describe("caplo tool logs", () => {
  it("lists invocations and prints one invocation's log lines", async () => {
    const list = await capture(() => toolLogs(["--dir", dir]));
    expect(list.code).toBe(0);
    const id = /(fixture-[0-9a-f-]{36})\s+lookup \(call\) ok/.exec(list.out)?.[1];
    expect(id).toBeDefined();
    const one = await capture(() => toolLogs([id!, "--dir", dir]));
    expect(one.code).toBe(0);
    expect(one.out).toContain('info  looked up {"id":"IT-001"}');
    const missing = await capture(() => toolLogs(["fixture-nope", "--dir", dir]));
    expect(missing.code).toBe(1);
    expect(missing.out).toContain("invocation_not_found");
  });
});

describe("runFixture's modes", () => {
  it("runs a write fixture for real locally and skips it (a call or a status check) hosted, before anything runs", async () => {
    const built = await buildPackage(dir);
    if (!built.ok) throw new Error(JSON.stringify(built.errors));
    const logStore = new MemoryLogStore();
    const runner = new CaploToolRunner({ logStore });
    try {
      await runner.load(built.version);
      const fixtures = await loadFixtures(dir, built.version.manifest.tests);
      const write = fixtures.find((entry) => entry.label.endsWith("books a free item"))!;
      const status: LoadedFixture = { file: "inline", index: 0, label: "status of a booking", fixture: { tool: "book", status: {}, secrets: [], context: { idempotencyKey: "k-1" }, expect: { outcome: "applied" } } };
      const hosted = { mode: "hosted" as const, env: {}, logStore };
      expect(await runFixture(runner, built.version, write, hosted)).toMatchObject({ state: "skipped", problems: [HOSTED_WRITE_SKIP], logs: [] });
      expect(await runFixture(runner, built.version, status, hosted)).toMatchObject({ state: "skipped", problems: [HOSTED_WRITE_SKIP] });
      expect(logStore.read()).toEqual([]);
      const local = { mode: "local" as const, env: {}, logStore };
      expect(await runFixture(runner, built.version, write, local)).toMatchObject({ state: "passed", detail: expect.stringContaining("(book, write → applied") });
      expect(logStore.read().map((record) => record.tool)).toEqual(["book"]);
      // Locally the status fixture is reached (and fails: this package's book has no status check).
      expect(await runFixture(runner, built.version, status, local)).toMatchObject({ state: "failed", problems: [expect.stringContaining("fixture_status_unavailable: book has no status check")] });
    } finally {
      await runner.close();
    }
  }, 120_000);
});
