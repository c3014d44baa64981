// A release freezes code (seed 001: "changing a tool's code has no effect on customers until you publish
// a new tool version and then a new agent release"). A real function package is built, tested and
// published; its frozen copy is what the real sandboxed runner runs: editing the package folder changes
// nothing, its local secrets file is unreadable from inside, and a copy with one byte changed is refused
// (version_altered) before anything starts, by the runner and by `caplo serve` on SQLite and PostgreSQL.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FileReleaseStore } from "../../server/src/agents/index.ts";
import { buildPackage } from "../../server/src/build/index.ts";
import { runPublish } from "../../server/src/cli/agent.ts";
import { parseServeArgs, startServe } from "../../server/src/cli/serve.ts";
import { run as toolTest } from "../../server/src/cli/tool-test.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { createTestDatabase } from "../support/testDatabase.ts";

const root = mkdtempSync(join(tmpdir(), "caplo-frozen-release-"));
const pkgDir = join(root, "which");
const releasesDir = join(root, "releases");
const secretsFile = join(pkgDir, ".caplo", "secrets.env");
const NOW = new Date("2026-03-01T12:00:00Z");

const toolSource = (code: string) => `import { readFileSync } from "node:fs";
import { defineTool } from "@caplo/tools";
export default defineTool({
  name: "which",
  description: "Which code runs, and whether the package's local secrets file can be read.",
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  handler() {
    let secrets;
    try {
      secrets = "read: " + readFileSync(${JSON.stringify(secretsFile)}, "utf8");
    } catch (error) {
      secrets = "refused: " + (error.code ?? error.message);
    }
    return { code: ${JSON.stringify(code)}, secrets };
  },
});
`;

function writePackage(code: string): void {
  mkdirSync(join(pkgDir, "src"), { recursive: true });
  mkdirSync(join(pkgDir, "tests"), { recursive: true });
  writeFileSync(join(pkgDir, "caplo.yaml"), "apiVersion: v1\nkind: ToolPackage\nname: which\ntype: function\nentry: src/tool.ts\nruntime: node24\neffect: read\ntimeoutSeconds: 10\n");
  writeFileSync(join(pkgDir, "src", "tool.ts"), toolSource(code));
  writeFileSync(join(pkgDir, "tests", "which.json"), JSON.stringify([{ name: "runs", tool: "which", input: {} }]));
}

const AGENT = "apiVersion: v1\nkind: Agent\nname: which-agent\ninstructions: Say which code runs.\ntools:\n  - which/which\norigins:\n  - https://shop.example\nchannels:\n  web: {}\n";

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (line: string) => out.push(line), err: (line: string) => err.push(line) }, out, err };
}

async function quietly<T>(run: () => Promise<T>): Promise<T> {
  const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
  const error = vi.spyOn(console, "error").mockImplementation(() => undefined);
  try {
    return await run();
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

async function callWhich(runner: CaploToolRunner, versionId: string) {
  const result = await runner.call({ packageVersionId: versionId, tool: "which", args: {}, context: { invocationId: `inv-${Math.random()}`, secrets: {} } });
  return result.structuredContent as { code: string; secrets: string } | undefined;
}

let publishedId = "";
beforeAll(async () => {
  writePackage("v1");
  mkdirSync(join(pkgDir, ".caplo"), { recursive: true });
  writeFileSync(secretsFile, "SHOP_API_KEY=local-secret-value\n");
  writeFileSync(join(root, "agent.yaml"), AGENT);
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("a release runs exactly the code it was published with", () => {
  it("tool test then tool build gives the same version id; publishing again says unchanged", async () => {
    const before = await buildPackage(pkgDir);
    if (!before.ok) throw new Error(JSON.stringify(before.errors));
    expect(before.version.dir).toBe(join(pkgDir, ".caplo", "versions", "which", before.version.contentHash));
    // tool test writes .caplo/invocations.jsonl; a local .env appears too. Neither ships.
    expect(await quietly(() => toolTest([pkgDir]))).toBe(0);
    expect(readFileSync(join(pkgDir, ".caplo", "invocations.jsonl"), "utf8")).toContain('"tool":"which"');
    writeFileSync(join(pkgDir, ".env"), "OTHER=1\n");
    const after = await buildPackage(pkgDir);
    expect(after.ok && after.version.id).toBe(before.version.id);

    const first = io();
    expect(await runPublish([join(root, "agent.yaml"), "--packages", pkgDir, "--store", releasesDir], first.io, { CAPLO_DB: join(root, "publish.db") }, NOW)).toBe(0);
    expect(first.out[0]).toMatch(/^Published which-agent@sha256:/);
    const again = io();
    expect(await runPublish([join(root, "agent.yaml"), "--packages", pkgDir, "--store", releasesDir], again.io, { CAPLO_DB: join(root, "publish.db") }, NOW)).toBe(0);
    expect(again.out[0]).toMatch(/^Unchanged \(already published; now the latest\) which-agent@sha256:/);
    publishedId = before.version.id;
  }, 120_000);

  it("keeps the frozen copy with the releases; edited package code changes nothing for the release, and the local secrets file is unreadable", async () => {
    expect(publishedId).not.toBe("");
    writePackage("v2");
    const store = new FileReleaseStore(releasesDir);
    const release = store.withKeptVersions((await store.latest("which-agent"))!);
    const version = release.packages[0]!;
    expect(version.dir).toBe(join(releasesDir, "versions", "which", version.contentHash));
    const runner = new CaploToolRunner({ maxProcesses: 2 });
    try {
      await runner.load(version);
      const result = await callWhich(runner, version.id);
      expect(result?.code).toBe("v1");
      expect(result?.secrets).toMatch(/^refused: /);
      // The local build's copy (what tool test runs) cannot read it either.
      const local = await buildPackage(pkgDir);
      if (!local.ok) throw new Error(JSON.stringify(local.errors));
      expect(local.version.id).not.toBe(version.id);
      await runner.load(local.version);
      expect(await callWhich(runner, local.version.id)).toEqual({ code: "v2", secrets: expect.stringMatching(/^refused: /) });
    } finally {
      await runner.close();
    }
  }, 120_000);

  it("refuses a frozen copy with one byte changed (version_altered) and starts nothing", async () => {
    const store = new FileReleaseStore(releasesDir);
    const version = store.withKeptVersions((await store.latest("which-agent"))!).packages[0]!;
    const file = join(version.dir, "src", "tool.ts");
    const original = readFileSync(file);
    const altered = Buffer.from(original);
    altered[altered.indexOf("v1")] = "w".charCodeAt(0);
    chmodSync(file, 0o644);
    writeFileSync(file, altered);
    const runner = new CaploToolRunner({ maxProcesses: 2 });
    try {
      await expect(runner.load(version)).rejects.toMatchObject({ code: "version_altered", message: expect.stringContaining("was altered") });
      expect(runner.starts(version.id)).toBe(0);
      expect(runner.processCount).toBe(0);
      const call = await runner.call({ packageVersionId: version.id, tool: "which", args: {}, context: { invocationId: "inv-altered", secrets: {} } });
      expect(call).toMatchObject({ isError: true, modelText: expect.stringContaining("is not loaded") });
      expect(runner.starts(version.id)).toBe(0);
    } finally {
      await runner.close();
      writeFileSync(file, original);
      chmodSync(file, 0o444);
    }
  }, 60_000);

  describe.each(["sqlite", "postgres"] as const)("caplo serve on %s", (kind) => {
    let db = "";
    let drop: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      if (kind === "sqlite") {
        db = join(root, `serve-${kind}`, "caplo.db");
        return;
      }
      const database = await createTestDatabase("caplo_frozen");
      db = database.url;
      drop = database.drop;
    });
    afterAll(async () => drop?.());

    const serve = async () => {
      const parsed = parseServeArgs(["--port", "0", "--host", "127.0.0.1", "--agent", "which-agent", "--db", db, "--releases", releasesDir], {});
      if (!parsed.ok) throw new Error(parsed.error.message);
      return startServe(parsed.options, () => undefined);
    };

    it("serves the kept copy, and refuses to start (version_altered) once one byte of it changed", async () => {
      const started = await serve();
      expect(started.ok, JSON.stringify(!started.ok && started.error)).toBe(true);
      if (started.ok) await started.server.close();

      const store = new FileReleaseStore(releasesDir);
      const version = store.withKeptVersions((await store.latest("which-agent"))!).packages[0]!;
      const file = join(version.dir, "caplo.yaml");
      const original = readFileSync(file);
      chmodSync(file, 0o644);
      writeFileSync(file, Buffer.concat([original.subarray(0, original.length - 2), Buffer.from("1\n")]));
      try {
        const refused = await serve();
        expect(refused).toMatchObject({ ok: false, error: { code: "version_altered", message: expect.stringContaining(version.id) } });
      } finally {
        writeFileSync(file, original);
        chmodSync(file, 0o444);
      }
    }, 60_000);
  });
});
