// `caplo tool dev DIR --no-inspector` starts the package's src/stdio.ts on Node 24 (packages/devprobe
// reports its version): an MCP client on its stdio gets the package's tools. Without --no-inspector and MCP Inspector not installed, it serves
// the same and tells (on stderr) the exact npx command that attaches the inspector.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createRequire } from "node:module";
import { REPO_ROOT, findNode24 } from "../../server/src/runner/node24.ts";
import { PACKAGES_DIR } from "./testPackages.ts";

function runDev(dir: string, input: string[], flags = ["--no-inspector"]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, "bin", "caplo.mjs"), "tool", "dev", dir, ...flags], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('"id":2')) child.stdin.end();
    });
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    for (const line of input) child.stdin.write(line + "\n");
    if (input.length === 0) child.stdin.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } };
const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };
const handshake = [JSON.stringify(initialize), JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }), JSON.stringify(list)];
const ORDERS = join(REPO_ROOT, "examples", "demo", "orders");

function toolNames(out: string): string[] | undefined {
  const messages = out.split("\n").filter(Boolean).map((line) => JSON.parse(line) as { id?: number; result?: { tools?: Array<{ name: string }> } });
  return messages.find((message) => message.id === 2)?.result?.tools?.map((tool) => tool.name);
}

function inspectorInstalled(): boolean {
  try {
    createRequire(join(REPO_ROOT, "package.json")).resolve("@modelcontextprotocol/inspector/cli/build/cli.js");
    return true;
  } catch {
    return false;
  }
}

describe("caplo tool dev", () => {
  it("serves src/stdio.ts over stdio on Node 24", async () => {
    const { out, err } = await runDev(ORDERS, handshake);
    expect(toolNames(out)).toContain("get_order");
    expect(err).not.toContain("Inspector");
  }, 90_000);

  it.skipIf(inspectorInstalled())("without the inspector installed, serves alone and prints the exact npx command to attach it", async () => {
    const node = findNode24();
    if (!node.ok) throw new Error(node.message);
    const { out, err } = await runDev(ORDERS, handshake, []);
    expect(toolNames(out)).toContain("get_order");
    expect(err).toContain(`  npx @modelcontextprotocol/inspector ${node.path} ${join(ORDERS, "src", "stdio.ts")}\n`);
  }, 90_000);

  it("runs it on Node 24, with the listed secrets from same-named environment variables", async () => {
    const call = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "runtime", arguments: {} } };
    process.env.DEV_KEY = "dev-key-value";
    try {
      const { out } = await runDev(join(PACKAGES_DIR, "devprobe"), [handshake[0]!, handshake[1]!, JSON.stringify(call)]);
      const answer = out.split("\n").filter(Boolean).map((line) => JSON.parse(line) as { id?: number; result?: { structuredContent?: { node: string; hasKey: boolean } } }).find((message) => message.id === 2);
      expect(answer?.result?.structuredContent?.node).toMatch(/^v24\./);
      expect(answer?.result?.structuredContent?.hasKey).toBe(true);
    } finally {
      delete process.env.DEV_KEY;
    }
  }, 90_000);

  it("refuses an unknown option by code", async () => {
    const { code, err } = await runDev(ORDERS, [], ["--inspect"]);
    expect(code).toBe(2);
    expect(err).toContain("unknown_option: --inspect");
  }, 90_000);

  it("refuses a package without src/stdio.ts by code", async () => {
    const { code, err } = await runDev(join(PACKAGES_DIR, "escape"), []);
    expect(code).toBe(2);
    expect(err).toContain("stdio_missing");
  }, 90_000);
});
