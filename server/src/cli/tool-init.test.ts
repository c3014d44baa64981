// `caplo tool init` writes packages that `caplo tool build` accepts as written, and whose src/stdio.ts
// works with the MCP SDK's own Client over stdio on Node 24.
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parseManifest } from "@caplo/shared";
import { node24Path } from "../build/node24.ts";
import { describeVersion, run as build } from "./tool-build.ts";
import { initPackage, run as init } from "./tool-init.ts";

const root = mkdtempSync(join(tmpdir(), "caplo-init-"));
const repoModules = resolve(import.meta.dirname, "..", "..", "..", "node_modules");
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Runs a CLI command in-process and returns its exit code and what it printed. */
async function cli(command: (args: string[]) => Promise<number>, args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, "log").mockImplementation((...parts: unknown[]) => void out.push(parts.join(" ")));
  const error = vi.spyOn(console, "error").mockImplementation((...parts: unknown[]) => void err.push(parts.join(" ")));
  try {
    return { code: await command(args), out: out.join("\n"), err: err.join("\n") };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

/** Connects the MCP SDK's Client to the package's src/stdio.ts on Node 24. */
async function stdioClient(dir: string) {
  const transport = new StdioClientTransport({ command: node24Path()!, args: ["--disable-warning=ExperimentalWarning", "src/stdio.ts"], cwd: dir, stderr: "pipe" });
  const client = new Client({ name: "any-mcp-client", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const dirs = { function: join(root, "lookup"), mcp: join(root, "orders") };
const builds: Record<string, { code: number; out: string; err: string }> = {};

beforeAll(async () => {
  for (const type of ["function", "mcp"] as const) {
    const created = await cli(init, ["my-" + type, "--type", type, "--dir", dirs[type]]);
    expect(created.code).toBe(0);
  }
  // Both builds run at once under one console capture; each prints exactly one JSON line.
  let codes: number[] = [];
  const both = await cli(async () => {
    codes = await Promise.all([build([dirs.function, "--json"]), build([dirs.mcp, "--json"])]);
    return 0;
  }, []);
  const lines = both.out.split("\n");
  for (const [index, type] of (["function", "mcp"] as const).entries()) {
    builds[type] = { code: codes[index]!, out: lines.find((line) => line.includes(`"my-${type}@sha256:`)) ?? both.out, err: both.err };
  }
  // What `npm install` gives a package for src/stdio.ts: its dependencies in node_modules (here, this
  // repository's, as a link). Linked only after building: a build refuses a link out of the package, and
  // needs none (the runner gives the sandbox the SDK).
  for (const type of ["function", "mcp"] as const) symlinkSync(repoModules, join(dirs[type], "node_modules"), "dir");
}, 240_000);

describe("caplo tool init", () => {
  it("writes caplo.yaml with the editor schema line, the entry, src/stdio.ts, a fixture and package.json", () => {
    for (const [type, dir] of Object.entries(dirs)) {
      const yaml = readFileSync(join(dir, "caplo.yaml"), "utf8");
      expect(yaml.split("\n")[0]).toBe("# yaml-language-server: $schema=https://docs.caplo.si/schemas/caplo.schema.json");
      const parsed = parseManifest(yaml);
      expect(parsed).toMatchObject({ ok: true, manifest: { name: `my-${type}`, type, entry: type === "function" ? "src/tool.ts" : "src/server.ts" } });
      expect(readFileSync(join(dir, "src/stdio.ts"), "utf8")).toContain("serveStdio(");
      const fixtures = JSON.parse(readFileSync(join(dir, "tests/get_order.json"), "utf8")) as unknown[];
      expect(fixtures[0]).toEqual({ name: "finds a shipped order", tool: "get_order", input: { orderId: "SO-1002" }, expect: { result: { orderId: "SO-1002", status: "shipped" } } });
      expect(JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))).toMatchObject({ name: `my-${type}`, type: "module", dependencies: { "@caplo/tools": "^0.2.0" } });
    }
  });

  it("writes packages that caplo tool build accepts (exit 0, --json prints the version)", () => {
    for (const type of ["function", "mcp"] as const) {
      expect(builds[type]!.code, `${builds[type]!.out}\n${builds[type]!.err}`).toBe(0);
      const printed = JSON.parse(builds[type]!.out) as { ok: boolean; version: { id: string; tools: { modelName: string }[] } };
      expect(printed.ok).toBe(true);
      expect(printed.version.id).toMatch(new RegExp(`^my-${type}@sha256:[0-9a-f]{64}$`));
    }
    const mcpVersion = JSON.parse(builds.mcp!.out) as { version: Parameters<typeof describeVersion>[0] };
    expect(mcpVersion.version.tools.map((tool) => tool.modelName)).toEqual(["my_mcp__get_order", "my_mcp__cancel_order"]);
    const human = describeVersion(mcpVersion.version);
    expect(human).toContain(`hash     sha256:${mcpVersion.version.contentHash}`);
    expect(human).toContain("effect        write, confirmation required");
    expect(human).toContain("timeout       15 s");
    expect(human).toContain('presentation  "Cancel order": 1 field');
    expect(human).toContain('progress      "Looking up your order"');
  });

  it("writes a function package whose src/stdio.ts works with the MCP SDK's Client: list tools, call one", async () => {
    const client = await stdioClient(dirs.function);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["get_order"]);
      const result = await client.callTool({ name: "get_order", arguments: { orderId: "SO-1002" } });
      expect(result.structuredContent).toEqual({ orderId: "SO-1002", status: "shipped" });
      const missing = await client.callTool({ name: "get_order", arguments: { orderId: "SO-9999" } });
      expect(missing).toMatchObject({ isError: true, content: [{ text: "order SO-9999 was not found" }] });
    } finally {
      await client.close();
    }
  });

  it("writes an MCP package whose src/stdio.ts works with the MCP SDK's Client: list tools, call both", async () => {
    const client = await stdioClient(dirs.mcp);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["get_order", "cancel_order"]);
      expect(await client.callTool({ name: "get_order", arguments: { orderId: "SO-1002" } })).toMatchObject({ structuredContent: { orderId: "SO-1002", status: "shipped" } });
      const cancelled = await client.callTool({ name: "cancel_order", arguments: { orderId: "SO-1001" } });
      expect(cancelled._meta).toEqual({ "si.caplo/effect": { version: 1, outcome: "applied" } });
      const refused = await client.callTool({ name: "cancel_order", arguments: { orderId: "SO-1002" } });
      expect(refused).toMatchObject({ isError: true, _meta: { "si.caplo/effect": { version: 1, outcome: "not_applied" } } });
    } finally {
      await client.close();
    }
  });

  it("refuses a bad name, an unknown type and a folder that is not empty", async () => {
    expect(initPackage({ name: "Orders", type: "function", dir: join(root, "x") })).toMatchObject({ ok: false, error: { code: "manifest_invalid", path: "name" } });
    expect(initPackage({ name: "a".repeat(41), type: "function", dir: join(root, "x") })).toMatchObject({ ok: false });
    expect(initPackage({ name: "a".repeat(40), type: "function", dir: join(root, "forty") })).toMatchObject({ ok: true });
    expect(initPackage({ name: "orders", type: "mcp", dir: dirs.mcp })).toMatchObject({ ok: false, error: { code: "init_dir_not_empty" } });
    expect((await cli(init, ["orders", "--type", "python"])).code).toBe(2);
    expect((await cli(init, [])).code).toBe(2);
  });
});

describe("caplo tool build", () => {
  it("exits 1 and prints every error with its code and path", async () => {
    const dir = join(root, "broken");
    mkdirSync(dir);
    writeFileSync(join(dir, "caplo.yaml"), "apiVersion: v1\nkind: ToolPackage\nname: broken\ntype: function\nentry: src/tool.ts\nruntime: node24\neffect: read\ntimeoutSeconds: 31\nconfirmation: none\n");
    const human = await cli(build, [dir]);
    expect(human.code).toBe(1);
    expect(human.err).toContain("Build failed with 2 errors:");
    expect(human.err).toContain("manifest_invalid  timeoutSeconds: ");
    const json = await cli(build, [dir, "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.out)).toEqual({
      ok: false,
      errors: [
        { code: "manifest_invalid", path: "timeoutSeconds", message: expect.any(String) },
        { code: "manifest_invalid", path: "confirmation", message: expect.any(String) },
      ],
    });
  });

  it("is a usage error (exit 2) for unknown options", async () => {
    expect((await cli(build, [".", "--yaml"])).code).toBe(2);
  });
});
