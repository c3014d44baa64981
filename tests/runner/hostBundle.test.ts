// The prebuilt host (server/src/runner/hostBundle.ts): the runner serves packages with it by default; a
// package importing this repository's zod, MCP SDK or @caplo/tools gets the bundled modules (one copy in
// the process), a package with its own copy keeps its own, and the sandbox is the same as with
// sdk/src/host.ts (egress refused, files outside the allowed folders unreadable).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureHostBundle } from "../../server/src/runner/hostBundle.ts";
import { findNode24 } from "../../server/src/runner/node24.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { testVersion } from "./testPackages.ts";

const root = mkdtempSync(join(tmpdir(), "caplo-bundle-"));
const dir = join(root, "where");
const files: Record<string, string> = {
  "caplo.yaml": "apiVersion: v1\nkind: ToolPackage\nname: where\ntype: mcp\nentry: server.mjs\nruntime: node24\negress:\n  - allowed.test\ntools:\n  - name: where\n    effect: read\n    timeoutSeconds: 10\n",
  // The package's own copy of zod (a stand-in): it must keep it.
  "node_modules/zod/package.json": JSON.stringify({ name: "zod", version: "0.0.0-own", type: "module", exports: { ".": "./index.js" } }),
  "node_modules/zod/index.js": "export const own = true;\n",
  "server.mjs": `import { readFileSync } from "node:fs";
import https from "node:https";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { defineTool } from "@caplo/tools";
import { own } from "zod";
function attempt(run) {
  return run().then((value) => ({ ok: true, value }), (error) => ({ ok: false, message: String(error?.message), cause: String(error?.cause?.message ?? "") }));
}
export function createServer() {
  const server = new McpServer({ name: "where", version: "1.0.0" });
  server.registerTool("where", { description: "where modules come from" }, async () => {
    const report = {
      own,
      defineTool: typeof defineTool,
      mcp: import.meta.resolve("@modelcontextprotocol/sdk/server/mcp.js"),
      types: import.meta.resolve("@modelcontextprotocol/sdk/types.js"),
      tools: import.meta.resolve("@caplo/tools"),
      zod: import.meta.resolve("zod"),
      unlisted: await attempt(() => fetch("https://unlisted.test/")),
      passwd: await attempt(async () => readFileSync("/etc/passwd", "utf8").slice(0, 20)),
      httpsUnlisted: await attempt(() => new Promise((resolve, reject) => https.get("https://unlisted.test/", resolve).on("error", reject))),
    };
    return { content: [{ type: "text", text: JSON.stringify(report) }], structuredContent: report };
  });
  // A WebSocket before any fetch still goes through the egress proxy (the preload installs lazily).
  server.registerTool("ws", { description: "opens a WebSocket" }, async () => {
    const result = await new Promise((resolve) => {
      const socket = new WebSocket("wss://unlisted.test/");
      socket.onopen = () => resolve("open");
      socket.onerror = () => resolve("error");
      setTimeout(() => resolve("timeout"), 8000);
    });
    return { content: [{ type: "text", text: result }], structuredContent: { result } };
  });
  return server;
}
`,
};
for (const [file, text] of Object.entries(files)) {
  mkdirSync(dirname(join(dir, file)), { recursive: true });
  writeFileSync(join(dir, file), text);
}
const version = testVersion("where", [{ name: "where", policy: { effect: "read", timeoutSeconds: 10 } }], { dir });
const wsVersion = testVersion("where", [{ name: "ws", policy: { effect: "read", timeoutSeconds: 10 } }], { dir });
let runner: CaploToolRunner;

beforeAll(async () => {
  runner = new CaploToolRunner({});
  await runner.load(version);
  await runner.load(wsVersion);
}, 120_000);
afterAll(async () => {
  await runner?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("prebuilt host bundle", () => {
  it("is built once per input hash and reused", async () => {
    const node = findNode24();
    if (!node.ok) throw new Error(node.message);
    const first = await ensureHostBundle(node.path);
    const second = await ensureHostBundle(node.path);
    expect(first.ok, first.ok ? "" : first.reason).toBe(true);
    expect(second).toEqual(first);
    expect(runner.hostNote).toContain(first.ok ? first.bundle.dir : "?");
  });

  it("gives a package the bundled shared modules, and keeps a package's own copy", async () => {
    const result = await runner.call({ packageVersionId: version.id, tool: "where", args: {}, context: { invocationId: "w1", secrets: {} } });
    expect(result.isError, result.modelText).toBe(false);
    const report = result.structuredContent as Record<string, unknown>;
    expect(report.own).toBe(true);
    expect(report.zod).toBe(`file://${dir}/node_modules/zod/index.js`);
    expect(report.defineTool).toBe("function");
    expect(report.mcp).toMatch(/node_modules\/\.cache\/caplo-host\/[0-9a-f]+\/mcp-server-mcp\.mjs$/);
    expect(report.types).toMatch(/\/mcp-types\.mjs$/);
    expect(report.tools).toMatch(/\/caplo-tools\.mjs$/);
  });

  it("keeps the sandbox: an unlisted host is refused (fetch and node:https) and /etc/passwd is unreadable", async () => {
    const result = await runner.call({ packageVersionId: version.id, tool: "where", args: {}, context: { invocationId: "w2", secrets: {} } });
    const report = result.structuredContent as { unlisted: { ok: boolean; cause: string }; passwd: { ok: boolean }; httpsUnlisted: { ok: boolean; message: string } };
    expect(report.unlisted.ok).toBe(false);
    expect(report.unlisted.cause).toContain("egress refused");
    expect(report.passwd.ok).toBe(false);
    // node:https goes through the same proxy (the bundled preload's agents).
    expect(report.httpsUnlisted.ok).toBe(false);
    expect(report.httpsUnlisted.message).toContain("egress refused: unlisted.test refused");
  });

  it("routes a WebSocket opened before any fetch through the egress proxy, which refuses it", async () => {
    const result = await runner.call({ packageVersionId: wsVersion.id, tool: "ws", args: {}, context: { invocationId: "w3", secrets: {} } });
    expect(result.structuredContent).toEqual({ result: "error" });
    expect(result.logs.some((line) => line.level === "warn" && line.message.startsWith("egress refused"))).toBe(true);
  });
});
