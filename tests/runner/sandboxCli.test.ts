// What the CLI reads or writes inside a package never leads out of it: .caplo/secrets.env or
// .caplo/invocations.jsonl shipped as links to outside files, a tests glob that climbs out, caplo.yaml or
// the entry linked out, a hard link to a root-only file. Each next to its control: the same files used
// through plain Node's fs (what the CLI did) reach the outside file. And NODE_OPTIONS in the package's
// env files never reaches the package's Node.
import { spawnSync } from "node:child_process";
import { appendFileSync, chmodSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { glob } from "tinyglobby";
import { afterAll, describe, expect, it, vi } from "vitest";
import { run as toolTest } from "../../server/src/cli/tool-test.ts";
import { run as toolLogs } from "../../server/src/cli/tool-logs.ts";
import { buildPackage } from "../../server/src/build/index.ts";
import { loadFixtures } from "../../server/src/runner/fixtures.ts";
import { JsonlLogStore } from "../../server/src/runner/logStore.ts";
import { findNode24 } from "../../server/src/runner/node24.ts";

const scratch = mkdtempSync(join(tmpdir(), "caplo-sandbox-cli-"));
chmodSync(scratch, 0o755);
const outside = join(scratch, "outside");
mkdirSync(outside);
const evil = join(outside, "evil.cjs");
const evilMarker = join(outside, "node-options-ran.txt");
writeFileSync(evil, `require("node:fs").writeFileSync(${JSON.stringify(evilMarker)}, "ran");\n`);

const MANIFEST = `apiVersion: v1
kind: ToolPackage
name: linked
type: mcp
entry: server.mjs
runtime: node24
secrets: [DEMO_KEY, NODE_OPTIONS]
tools:
  - { name: peek, effect: read, timeoutSeconds: 5 }
`;
const SERVER = `import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { context } from "@caplo/tools";
export function createServer() {
  const server = new McpServer({ name: "linked", version: "1.0.0" });
  server.registerTool("peek", { description: "what the package was given" }, async (extra) => {
    const ctx = context(extra);
    const got = { demoKey: ctx.secrets.get("DEMO_KEY"), env: Object.keys(process.env).sort() };
    return { content: [{ type: "text", text: JSON.stringify(got) }], structuredContent: got };
  });
  return server;
}
`;
// The package received DEMO_KEY (redacted in what comes back) and an environment without NODE_OPTIONS.
const FIXTURE = { name: "peek", secrets: ["DEMO_KEY", "NODE_OPTIONS"], expect: { result: { demoKey: "[secret:DEMO_KEY]", env: ["LANG", "NODE_ENV", "TZ"] } } };

let count = 0;
/** A fresh copy of the package in the scratch folder. */
function pkg(files: Record<string, string> = {}): string {
  const dir = join(scratch, `linked-${++count}`);
  mkdirSync(join(dir, "tests"), { recursive: true });
  mkdirSync(join(dir, ".caplo"));
  writeFileSync(join(dir, "caplo.yaml"), MANIFEST);
  writeFileSync(join(dir, "server.mjs"), SERVER);
  writeFileSync(join(dir, "tests", "peek.json"), JSON.stringify(FIXTURE));
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

async function capture(run: () => Promise<number>): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
  const error = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
  try {
    return { code: await run(), out: lines.join("\n") };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("caplo tool test reads and writes only the package's own files", () => {
  it("a package's own .caplo/secrets.env: its values reach the package; NODE_OPTIONS in it or in .env never reaches the package's Node (the control: plain Node runs it)", async () => {
    const secrets = `DEMO_KEY=outside-value-91\nNODE_OPTIONS=--require=${evil}\n`;
    const dir = pkg({ ".env": `NODE_OPTIONS=--require=${evil}\n` });
    writeFileSync(join(dir, ".caplo", "secrets.env"), secrets);
    const { code, out } = await capture(() => toolTest([dir]));
    expect(out).toContain("✓ tests/peek.json › peek");
    expect(out).toContain(`secrets: DEMO_KEY from ${join(dir, ".caplo", "secrets.env")}`);
    expect(code).toBe(0);
    expect(existsSync(evilMarker)).toBe(false);
    const node = findNode24();
    if (!node.ok) throw new Error(node.message);
    spawnSync(node.path, ["-e", "0"], { env: { NODE_OPTIONS: `--require=${evil}` } });
    expect(readFileSync(evilMarker, "utf8")).toBe("ran");
    rmSync(evilMarker);
  }, 120_000);

  it("refuses .caplo/secrets.env linked to an outside file, which plain fs would read, before building or running anything", async () => {
    const file = join(outside, "operator.env");
    writeFileSync(file, "DEMO_KEY=operator-secret-3d7e\nNODE_OPTIONS=x\n");
    const dir = pkg();
    symlinkSync(file, join(dir, ".caplo", "secrets.env"));
    expect(readFileSync(join(dir, ".caplo", "secrets.env"), "utf8")).toContain("operator-secret-3d7e"); // the control
    const { code, out } = await capture(() => toolTest([dir]));
    expect(code).toBe(2);
    expect(out).toContain(`✗ path_outside_package .caplo/secrets.env: .caplo/secrets.env leads outside the package (to ${file})`);
    expect(out).not.toContain("tests/peek.json");
    expect(out).not.toContain("operator-secret-3d7e");
    // A hard link to a file elsewhere is refused the same way.
    const hard = pkg();
    linkSync(file, join(hard, ".caplo", "secrets.env"));
    const linked = await capture(() => toolTest([hard]));
    expect(linked.code).toBe(2);
    expect(linked.out).toContain("path_outside_package .caplo/secrets.env: it is a hard link to a file elsewhere");
  }, 60_000);

  it("never appends to an outside file through .caplo/invocations.jsonl, which plain appends follow", async () => {
    const target = join(outside, "host.log");
    writeFileSync(target, "");
    const dir = pkg();
    const link = join(dir, ".caplo", "invocations.jsonl");
    symlinkSync(target, link);
    appendFileSync(link, "control\n"); // the control: an append through the link lands outside
    expect(readFileSync(target, "utf8")).toBe("control\n");
    // The CLI: the build refuses the link, nothing runs, nothing is written.
    const { code, out } = await capture(() => toolTest([dir]));
    expect(code).toBe(2);
    expect(out).toContain("path_outside_package .caplo/invocations.jsonl");
    // The store itself, given the package as its root: no record through the link, nothing read from it.
    const errors: string[] = [];
    const store = new JsonlLogStore(link, { root: dir, onError: (error) => errors.push(error.message) });
    store.record({ invocationId: "inv-1", packageVersionId: "p", tool: "peek", kind: "call", at: new Date(0).toISOString(), durationMs: 1, isError: false, logs: [] });
    expect(errors[0]).toContain("path_outside_package");
    expect(store.read()).toEqual([]);
    expect(readFileSync(target, "utf8")).toBe("control\n");
    // A link put in place of the file after the check is not followed either (O_NOFOLLOW).
    const plain = new JsonlLogStore(link, { onError: (error) => errors.push(error.message) });
    plain.record({ invocationId: "inv-2", packageVersionId: "p", tool: "peek", kind: "call", at: new Date(0).toISOString(), durationMs: 1, isError: false, logs: [] });
    expect(errors[1]).toContain("ELOOP");
    expect(readFileSync(target, "utf8")).toBe("control\n");
    const logs = await capture(() => toolLogs(["--dir", dir]));
    expect(logs.code).toBe(2);
    expect(logs.out).toContain("path_outside_package");
  }, 60_000);

  it("a tests glob that climbs out, or a fixture linked out, is refused and never run (the control: the glob itself finds the outside file)", async () => {
    const elsewhere = join(scratch, "elsewhere");
    mkdirSync(elsewhere, { recursive: true });
    writeFileSync(join(elsewhere, "outside.json"), JSON.stringify({ name: "outside", input: {} }));
    const dir = pkg();
    expect(await glob("../elsewhere/*.json", { cwd: dir, absolute: true })).toEqual([join(elsewhere, "outside.json")]);
    expect(await loadFixtures(dir, "../elsewhere/*.json")).toEqual([
      { file: "../elsewhere/*.json", index: 0, label: "../elsewhere/*.json", error: { code: "path_outside_package", path: "tests", message: 'tests: "../elsewhere/*.json" leaves the package: fixtures are files inside it' } },
    ]);
    expect((await loadFixtures(dir, `${elsewhere}/*.json`))[0]!.error?.code).toBe("path_outside_package");
    symlinkSync(join(elsewhere, "outside.json"), join(dir, "tests", "linked.json"));
    // A fixture file that is a link is not followed: it is not loaded, so never run.
    const loaded = await loadFixtures(dir, "tests/*.json");
    expect(loaded.map((entry) => entry.file)).toEqual(["tests/peek.json"]);
    // Through the CLI: the manifest's glob climbs out; the fixture fails, nothing outside runs.
    const climbing = pkg();
    writeFileSync(join(climbing, "caplo.yaml"), `${MANIFEST}tests: "../elsewhere/*.json"\n`);
    writeFileSync(join(climbing, ".caplo", "secrets.env"), "DEMO_KEY=x\nNODE_OPTIONS=y\n");
    const { code, out } = await capture(() => toolTest([climbing]));
    expect(code).toBe(1);
    expect(out).toContain("path_outside_package tests");
    expect(out).toContain("0 passed, 1 failed");
  }, 60_000);

  it("the build refuses caplo.yaml, the entry or a folder linked out of the package, and a hard link to a root-only file", async () => {
    const realYaml = join(outside, "caplo.yaml");
    writeFileSync(realYaml, MANIFEST);
    const yaml = pkg();
    rmSync(join(yaml, "caplo.yaml"));
    symlinkSync(realYaml, join(yaml, "caplo.yaml"));
    expect(await buildPackage(yaml)).toEqual({ ok: false, errors: [expect.objectContaining({ code: "path_outside_package", path: "caplo.yaml" }), expect.objectContaining({ code: "path_outside_package", path: "caplo.yaml" })] });

    writeFileSync(join(outside, "server.mjs"), SERVER);
    const entry = pkg();
    rmSync(join(entry, "server.mjs"));
    symlinkSync(join(outside, "server.mjs"), join(entry, "server.mjs"));
    expect(await buildPackage(entry)).toEqual({ ok: false, errors: [expect.objectContaining({ code: "path_outside_package", path: "server.mjs" })] });

    const folder = pkg();
    symlinkSync(outside, join(folder, "dist"));
    expect(await buildPackage(folder)).toEqual({ ok: false, errors: [expect.objectContaining({ code: "path_outside_package", path: "dist", message: expect.stringContaining("is a link to") })] });

    const rootOnly = join(outside, "root-only.txt");
    writeFileSync(rootOnly, "root only\n");
    chmodSync(rootOnly, 0o600);
    const hard = pkg();
    mkdirSync(join(hard, "node_modules"));
    linkSync(rootOnly, join(hard, "node_modules", "data.txt"));
    expect(await buildPackage(hard)).toEqual({ ok: false, errors: [expect.objectContaining({ code: "path_outside_package", path: "node_modules/data.txt", message: expect.stringContaining("hard link") })] });
  }, 60_000);
});
