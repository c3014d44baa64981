// buildPackage end to end: real packages in temporary folders, served by the SDK host on Node 24 and
// listed by the MCP SDK's Client. The packages are built concurrently once; each test reads its result.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPackage, type BuildResult } from "./index.ts";

const root = mkdtempSync(join(tmpdir(), "caplo-build-"));
const head = (name: string, type: "function" | "mcp", entry: string) => `apiVersion: v1\nkind: ToolPackage\nname: ${name}\ntype: ${type}\nentry: ${entry}\nruntime: node24\n`;

function pkg(name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

const packages = {
  wrongExport: pkg("wrong-export", {
    "caplo.yaml": `${head("wrong-export", "function", "src/tool.ts")}effect: read\ntimeoutSeconds: 5\n`,
    "src/tool.ts": `export default { name: "get_order", handler() { return "x"; } };\n`,
  }),
  noCreateServer: pkg("no-create-server", {
    "caplo.yaml": `${head("no-create-server", "mcp", "src/server.ts")}tools:\n  - { name: a, effect: read, timeoutSeconds: 5 }\n`,
    "src/server.ts": `export function makeServer() { return {}; }\n`,
  }),
  crash: pkg("crash", {
    "caplo.yaml": `${head("crash", "mcp", "src/server.ts")}tools:\n  - { name: a, effect: read, timeoutSeconds: 5 }\n`,
    "src/server.ts": `throw new Error("boom at import");\n`,
  }),
  hang: pkg("hang", {
    "caplo.yaml": `${head("hang", "mcp", "src/server.mjs")}tools:\n  - { name: a, effect: read, timeoutSeconds: 5 }\n`,
    "src/server.mjs": `await new Promise(() => setInterval(() => {}, 1000));\nexport function createServer() {}\n`,
  }),
  joined: pkg("joined", {
    "caplo.yaml": `${head("joined", "mcp", "src/server.ts")}tools:\n  - { name: get_order, effect: read, timeoutSeconds: 5 }\n  - { name: refund, effect: write, timeoutSeconds: 5 }\n`,
    "src/server.ts": [
      `import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";`,
      `import { z } from "zod";`,
      `console.log("noise on stdout must not break the protocol");`,
      `export function createServer() {`,
      `  const server = new McpServer({ name: "joined", version: "1.0.0" });`,
      `  for (const name of ["get_order", "cancel_order"]) server.registerTool(name, { description: name, inputSchema: { orderId: z.string() } }, async () => ({ content: [] }));`,
      `  return server;`,
      `}`,
    ].join("\n"),
  }),
  functionTool: pkg("fn-tool", {
    "caplo.yaml": `${head("fn-tool", "function", "src/tool.ts")}effect: write\ntimeoutSeconds: 15\npresentation:\n  schemaVersion: 1\n  title: Cancel order\n  fields: [{ path: /orderId, label: Order, display: plain }]\n  receipt:\n    fields: [{ path: /state, label: State, display: plain }]\n`,
    "src/tool.ts": [
      `import { defineTool } from "@caplo/tools";`,
      `export default defineTool({`,
      `  name: "cancel_order", description: "Cancel an order.",`,
      `  inputSchema: { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"] },`,
      `  outputSchema: { type: "object", properties: { orderId: { type: "string" } } },`,
      `  handler: ({ orderId }) => ({ orderId }),`,
      `});`,
    ].join("\n"),
    "node_modules/ignored.txt": "not hashed",
  }),
};

const seeds = resolve(import.meta.dirname, "..", "..", "..", "examples", "seed");
const results: Record<string, BuildResult> = {};
beforeAll(async () => {
  const all = { ...packages, seedOrders: join(seeds, "orders"), seedOrderLookup: join(seeds, "order-lookup"), seedCancelOrder: join(seeds, "cancel-order") };
  // Three at a time: the machine's cores are shared, and each build starts a Node 24 process.
  const queue = Object.entries(all);
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const [key, dir] = next;
      results[key] = await buildPackage(dir, { timeoutMs: key === "hang" ? 2500 : 90_000 });
    }
  };
  await Promise.all([worker(), worker(), worker()]);
}, 300_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("buildPackage", () => {
  it("builds the seeds' example packages: function get_order, MCP orders, the cancel_order write with status", () => {
    const orders = results.seedOrders!;
    expect(orders.ok ? [] : orders.errors).toEqual([]);
    if (!orders.ok) return;
    expect(orders.version.tools.map((tool) => [tool.modelName, tool.policy.effect, tool.policy.timeoutSeconds])).toEqual([
      ["orders__get_order", "read", 5],
      ["orders__cancel_order", "write", 15],
    ]);
    expect(orders.version.effectOutcomes).toBe(true);
    expect(orders.version.id).toBe(`orders@sha256:${orders.version.contentHash}`);

    const lookup = results.seedOrderLookup!;
    expect(lookup.ok && lookup.version.tools[0]).toMatchObject({ name: "get_order", modelName: "order_lookup__get_order", hasStatus: false, outputSchema: { required: ["orderId", "status", "total", "currency"] } });

    const cancel = results.seedCancelOrder!;
    expect(cancel.ok && cancel.version.tools[0]).toMatchObject({ name: "cancel_order", hasStatus: true, policy: { effect: "write", confirmation: "required" } });
  });

  it("fails with entry_invalid when a function package's default export is not a defineTool", () => {
    expect(results.wrongExport).toEqual({ ok: false, errors: [{ code: "entry_invalid", path: "entry", message: expect.stringContaining("must default-export defineTool") }] });
  });

  it("fails with entry_invalid when an MCP package does not export createServer", () => {
    expect(results.noCreateServer).toEqual({ ok: false, errors: [{ code: "entry_invalid", path: "entry", message: expect.stringContaining("createServer()") }] });
  });

  it("fails with entry_invalid, naming the error, when the entry crashes while loading", () => {
    expect(results.crash).toEqual({ ok: false, errors: [{ code: "entry_invalid", path: "entry", message: expect.stringContaining("boom at import") }] });
  });

  it("fails with entry_invalid when the entry does not answer in time", () => {
    expect(results.hang).toEqual({ ok: false, errors: [{ code: "entry_invalid", path: "entry", message: expect.stringContaining("did not answer") }] });
  });

  it("reports policy_missing and policy_unknown together, and keeps stdout for MCP frames", () => {
    expect(results.joined).toEqual({
      ok: false,
      errors: [
        { code: "policy_missing", path: "tools", message: expect.stringContaining('"cancel_order"') },
        { code: "policy_unknown", path: "tools[1].name", message: expect.stringContaining('"refund"') },
      ],
    });
  });

  it("checks a function tool's presentation against the schemas its code lists", () => {
    expect(results.functionTool).toEqual({ ok: false, errors: [{ code: "presentation_invalid", path: "presentation.receipt.fields[0].path", message: expect.stringContaining("/state") }] });
  });

  it("fails with entry_invalid when the entry file does not exist, without starting it", async () => {
    const dir = pkg("missing-entry", { "caplo.yaml": `${head("missing-entry", "function", "src/tool.ts")}effect: read\ntimeoutSeconds: 5\n` });
    expect(await buildPackage(dir)).toEqual({ ok: false, errors: [{ code: "entry_invalid", path: "entry", message: "entry src/tool.ts does not exist in the package" }] });
  });

  it("returns every caplo.yaml error before starting anything", async () => {
    const dir = pkg("bad-yaml", { "caplo.yaml": `${head("bad-yaml", "function", "src/tool.ts")}effect: read\ntimeoutSeconds: 31\nconfirmation: none\n` });
    const result = await buildPackage(dir);
    expect(result.ok ? [] : result.errors.map((error) => [error.code, error.path])).toEqual([
      ["manifest_invalid", "timeoutSeconds"],
      ["manifest_invalid", "confirmation"],
    ]);
    expect(await buildPackage(join(root, "nowhere"))).toMatchObject({ ok: false, errors: [{ code: "manifest_invalid" }] });
  });
});
