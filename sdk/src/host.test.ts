// host.ts on Node 24, spoken to over raw stdio: stdout carries only MCP frames (the package's console
// output goes to stderr), caplo.yaml's secrets are the only names a call may read, and failures before
// serving exit with a code and one `caplo-host-error` line.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CALL_META_KEY } from "@caplo/shared/outcome";
import { node24Path } from "../../server/src/build/node24.ts";

const HOST = resolve(import.meta.dirname, "host.ts");
const root = mkdtempSync(join(tmpdir(), "caplo-host-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function pkg(name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

/** Starts the host, writes the frames, waits for `expected` responses on stdout, and stops it. */
function runHost(dir: string, frames: object[], expected: number): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(node24Path()!, ["--disable-warning=ExperimentalWarning", HOST, dir], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.split("\n").filter((line) => line.includes('"id"')).length >= expected) child.stdin.end();
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ stdout, stderr, code });
    });
    for (const frame of frames) child.stdin.write(`${JSON.stringify(frame)}\n`);
    if (expected === 0) child.stdin.end();
  });
}

const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };
const initialized = { jsonrpc: "2.0", method: "notifications/initialized" };
const callMeta = (secrets: Record<string, string>) => ({ [CALL_META_KEY]: { invocationId: "inv_h", deadline: new Date(Date.now() + 20_000).toISOString(), secrets } });

describe.concurrent("host.ts (Node 24)", () => {
  it("serves a function package over stdio with nothing but MCP frames on stdout", async () => {
    const dir = pkg("noisy", {
      "caplo.yaml": "apiVersion: v1\nkind: ToolPackage\nname: noisy\ntype: function\nentry: src/tool.ts\nruntime: node24\neffect: read\ntimeoutSeconds: 5\nsecrets: [SHOP_API_KEY]\n",
      "src/tool.ts": [
        `import { defineTool } from "@caplo/tools";`,
        `console.log("import-time noise");`,
        `process.stdout.write("raw stdout noise\\n");`,
        `export default defineTool({`,
        `  name: "read_secret", description: "Reads a secret.",`,
        `  inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },`,
        `  handler({ name }, { secrets }) { console.log("handler noise"); console.info("more"); return { length: secrets.get(name).length }; },`,
        `});`,
      ].join("\n"),
    });
    const call = (id: number, name: string) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "read_secret", arguments: { name }, _meta: callMeta({ SHOP_API_KEY: "sk_12345", OTHER: "x" }) } });
    const { stdout, stderr } = await runHost(dir, [initialize, initialized, { jsonrpc: "2.0", id: 2, method: "tools/list" }, call(3, "SHOP_API_KEY"), call(4, "OTHER")], 4);
    const frames = stdout.trim().split("\n").map((line) => JSON.parse(line) as { id?: number; result?: Record<string, unknown> });
    expect(frames.every((frame) => (frame as { jsonrpc?: string }).jsonrpc === "2.0")).toBe(true);
    const byId = new Map(frames.map((frame) => [frame.id, frame.result]));
    expect(byId.get(2)).toMatchObject({ tools: [{ name: "read_secret" }] });
    expect(byId.get(3)).toMatchObject({ structuredContent: { length: 8 } });
    // OTHER has a value in the call but caplo.yaml does not declare it.
    expect(byId.get(4)).toMatchObject({ isError: true, content: [{ text: 'secret "OTHER" is not declared in caplo.yaml secrets' }] });
    expect(stderr).toContain("import-time noise");
    expect(stderr).toContain("handler noise");
    expect(stderr).toContain("raw stdout noise");
    expect(stdout).not.toContain("noise");
  });

  it("exits 2 with a caplo-host-error line when caplo.yaml is invalid", async () => {
    const dir = pkg("bad-manifest", { "caplo.yaml": "apiVersion: v1\nkind: ToolPackage\nname: bad-manifest\ntype: function\nentry: src/tool.ts\nruntime: node24\neffect: read\n" });
    const { stdout, stderr, code } = await runHost(dir, [], 0);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^caplo-host-error \{"code":"manifest_invalid","message":"timeoutSeconds: /m);
  });

  it("exits 3 with a caplo-host-error line when the entry is missing", async () => {
    const dir = pkg("no-entry", { "caplo.yaml": "apiVersion: v1\nkind: ToolPackage\nname: no-entry\ntype: mcp\nentry: src/server.ts\nruntime: node24\ntools: [{ name: a, effect: read, timeoutSeconds: 5 }]\n" });
    const { code, stderr } = await runHost(dir, [], 0);
    expect(code).toBe(3);
    expect(stderr).toContain('caplo-host-error {"code":"entry_invalid","message":"entry src/server.ts does not exist"}');
  });
});
