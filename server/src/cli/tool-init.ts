// `caplo tool init NAME [--type function|mcp] [--dir D]`: writes a working tool package (caplo.yaml with
// the editor schema line, the entry, src/stdio.ts for local MCP clients, a fixture, package.json) that
// passes `caplo tool build` as written.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { DEFAULT_FUNCTION_ENTRY, DEFAULT_MCP_ENTRY, MANIFEST_SCHEMA_URL, PACKAGE_NAME_PATTERN } from "@caplo/shared";

export const help = `caplo tool init NAME [--type function|mcp] [--dir D]

Creates a tool package in D (default ./NAME):
  caplo.yaml        the manifest, with the editor schema line
  src/tool.ts       (function) one tool: default-exported defineTool
  src/server.ts     (mcp) createServer() with a read and a write tool
  src/stdio.ts      serves the package over stdio for MCP Inspector, Claude Desktop or any MCP client
  tests/*.json      a fixture for caplo tool test
  package.json

NAME: lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters.
--type  function (default) or mcp.
--dir   where to write; it must be empty or not exist yet.`;

export type InitOptions = { name: string; type: "function" | "mcp"; dir: string };
export type InitResult = { ok: true; dir: string; files: string[] } | { ok: false; error: { code: string; path: string; message: string } };

export function initPackage(options: InitOptions): InitResult {
  if (!PACKAGE_NAME_PATTERN.test(options.name)) {
    return { ok: false, error: { code: "manifest_invalid", path: "name", message: `${JSON.stringify(options.name)} is not a package name: lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters` } };
  }
  const dir = resolve(options.dir);
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    return { ok: false, error: { code: "init_dir_not_empty", path: dir, message: `${dir} is not empty: choose another --dir` } };
  }
  const files = options.type === "function" ? functionFiles(options.name) : mcpFiles(options.name);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return { ok: true, dir, files: Object.keys(files) };
}

export async function run(args: string[]): Promise<number> {
  const parsed = parseArgs(args);
  if ("error" in parsed) {
    console.error(`caplo tool init: ${parsed.error}\n\n${help}`);
    return 2;
  }
  const result = initPackage(parsed);
  if (!result.ok) {
    console.error(`caplo tool init: ${result.error.message}`);
    return 1;
  }
  const near = relative(process.cwd(), result.dir);
  const shown = near === "" ? "." : near.startsWith("..") ? result.dir : near;
  console.log(`Created ${parsed.type} package ${parsed.name} in ${shown}:`);
  for (const file of result.files) console.log(`  ${file}`);
  console.log(`\nNext:\n  npx caplo tool build ${shown}\n  npx caplo tool test ${shown}`);
  return 0;
}

function parseArgs(args: string[]): InitOptions | { error: string } {
  let type: InitOptions["type"] = "function";
  let dir: string | undefined;
  const names: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    if (flag === "--type" || flag === "--dir") {
      const value = inline ?? args[++i];
      if (value === undefined) return { error: `${flag} needs a value` };
      if (flag === "--type") {
        if (value !== "function" && value !== "mcp") return { error: `--type must be function or mcp, not ${value}` };
        type = value;
      } else dir = value;
    } else if (arg.startsWith("-")) return { error: `unknown option ${arg}` };
    else names.push(arg);
  }
  if (names.length !== 1) return { error: names.length === 0 ? "give the package a NAME" : `one NAME only, got ${names.join(" ")}` };
  const name = names[0]!;
  return { name, type, dir: dir ?? name };
}

const SCHEMA_LINE = `# yaml-language-server: $schema=${MANIFEST_SCHEMA_URL}`;

function packageJson(name: string, type: "function" | "mcp"): string {
  const dependencies: Record<string, string> = { "@caplo/tools": "^0.2.0" };
  if (type === "mcp") Object.assign(dependencies, { "@modelcontextprotocol/sdk": "^1.32.2", zod: "^4.0.0" });
  return `${JSON.stringify(
    {
      name,
      version: "0.1.0",
      private: true,
      type: "module",
      description: `Caplo tool package ${name}`,
      engines: { node: ">=24" },
      scripts: { build: "caplo tool build .", test: "caplo tool test .", dev: "node src/stdio.ts" },
      dependencies,
    },
    null,
    2,
  )}\n`;
}

const ORDER_INPUT = `{
    type: "object",
    properties: { orderId: { type: "string", pattern: "^SO-[0-9]{4}$", description: "Order number, for example SO-1002" } },
    required: ["orderId"],
    additionalProperties: false,
  }`;

function functionFiles(name: string): Record<string, string> {
  return {
    "caplo.yaml": `${SCHEMA_LINE}
apiVersion: v1
kind: ToolPackage
name: ${name}
type: function
description: Look up an order by its number.
entry: ${DEFAULT_FUNCTION_ENTRY}
runtime: node24
effect: read
timeoutSeconds: 5
progress:
  label: Looking up your order
# To call your API, list its host and the secrets the tool reads:
# egress:
#   - api.shop.example
# secrets:
#   - SHOP_API_KEY
tests: tests/*.json
`,
    "src/tool.ts": `// ${name}: a function package with one tool. Build it with \`npx caplo tool build .\`.
import { defineTool } from "@caplo/tools";

type Input = { orderId: string };
type Output = { orderId: string; status: "processing" | "shipped" | "delivered" | "cancelled" };

// Sample data, so the package runs offline. To call your API instead, add its host to egress and its key to
// secrets in caplo.yaml, then: fetch(url, { headers: { authorization: \`Bearer \${secrets.get("SHOP_API_KEY")}\` }, signal }).
const ORDERS: Record<string, Output["status"]> = { "SO-1001": "processing", "SO-1002": "shipped" };

export default defineTool<Input, Output>({
  name: "get_order",
  description: "Look up an order by its number, for example SO-1002. Returns its status.",
  inputSchema: ${ORDER_INPUT},
  outputSchema: {
    type: "object",
    properties: {
      orderId: { type: "string" },
      status: { type: "string", enum: ["processing", "shipped", "delivered", "cancelled"] },
    },
    required: ["orderId", "status"],
  },
  async handler({ orderId }, { log }) {
    const status = ORDERS[orderId];
    if (!status) throw new Error(\`order \${orderId} was not found\`);
    log.info("order found", { orderId, status });
    return { orderId, status };
  },
});
`,
    "src/stdio.ts": `// Serves the package over stdio for MCP Inspector, Claude Desktop or any local MCP client: \`node src/stdio.ts\`
// (Node 24). Secrets listed here are read from same-named environment variables: local development only.
import { serveStdio } from "@caplo/tools";
import tool from "./tool.ts";

await serveStdio(() => tool.createServer(), { secrets: [] });
`,
    "tests/get_order.json": fixtures([
      { name: "finds a shipped order", tool: "get_order", input: { orderId: "SO-1002" }, expect: { result: { orderId: "SO-1002", status: "shipped" } } },
      { name: "an unknown order is an error the model sees", tool: "get_order", input: { orderId: "SO-9999" }, expect: { isError: true, text: "not found" } },
    ]),
    "package.json": packageJson(name, "function"),
  };
}

function mcpFiles(name: string): Record<string, string> {
  return {
    "caplo.yaml": `${SCHEMA_LINE}
apiVersion: v1
kind: ToolPackage
name: ${name}
type: mcp
description: Order lookup and cancellation.
entry: ${DEFAULT_MCP_ENTRY}
runtime: node24
tools:
  - name: get_order
    effect: read
    timeoutSeconds: 5
    progress:
      label: Looking up your order
  - name: cancel_order
    effect: write
    timeoutSeconds: 15
    confirmation: required
    presentation:
      schemaVersion: 1
      title: Cancel order
      fields:
        - path: /orderId
          label: Order
          display: plain
# To call your API, list its host and the secrets the tools read:
# egress:
#   - api.shop.example
# secrets:
#   - SHOP_API_KEY
tests: tests/*.json
`,
    "src/server.ts": `// ${name}: an MCP package. createServer() returns a server from the official MCP TypeScript SDK;
// caplo.yaml sets each tool's effect and timeout. Build it with \`npx caplo tool build .\`.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { EFFECT_META_KEY, EFFECT_OUTCOME_CAPABILITY, context } from "@caplo/tools";
import { z } from "zod";

// Sample data, so the package runs offline. To call your API instead, add its host to egress and its key
// to secrets in caplo.yaml, and pass context(extra).signal to fetch.
const ORDERS = new Map<string, string>([["SO-1001", "processing"], ["SO-1002", "shipped"]]);

export function createServer() {
  // logging lets context(extra).log send log lines; EFFECT_OUTCOME_CAPABILITY makes write outcomes trusted.
  const server = new McpServer(
    { name: "${name}", version: "0.1.0" },
    { capabilities: { logging: {}, experimental: { ...EFFECT_OUTCOME_CAPABILITY } } },
  );

  server.registerTool(
    "get_order",
    {
      description: "Look up an order by its number, for example SO-1002.",
      inputSchema: { orderId: z.string().regex(/^SO-[0-9]{4}$/) },
      outputSchema: { orderId: z.string(), status: z.string() },
    },
    async ({ orderId }, extra) => {
      const { log } = context(extra);
      const status = ORDERS.get(orderId);
      if (!status) throw new Error(\`order \${orderId} was not found\`);
      log.info("order found", { orderId });
      const result = { orderId, status };
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
    },
  );

  server.registerTool(
    "cancel_order",
    {
      description: "Cancel an order that has not shipped yet, for example SO-1001.",
      inputSchema: { orderId: z.string().regex(/^SO-[0-9]{4}$/) },
    },
    async ({ orderId }, extra) => {
      const { log, idempotencyKey } = context(extra);
      const status = ORDERS.get(orderId);
      if (status !== "processing") {
        // Certain that nothing changed: not applied. When unsure, throw instead (the outcome is then unknown).
        return {
          isError: true,
          content: [{ type: "text", text: \`Order \${orderId} can no longer be cancelled.\` }],
          _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "not_applied" } },
        };
      }
      ORDERS.set(orderId, "cancelled");
      log.info("order cancelled", { orderId, idempotencyKey });
      return {
        content: [{ type: "text", text: JSON.stringify({ orderId, status: "cancelled" }) }],
        _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "applied" } },
      };
    },
  );

  return server;
}
`,
    "src/stdio.ts": `// Serves the package over stdio for MCP Inspector, Claude Desktop or any local MCP client: \`node src/stdio.ts\`
// (Node 24). Secrets listed here are read from same-named environment variables: local development only.
import { serveStdio } from "@caplo/tools";
import { createServer } from "./server.ts";

await serveStdio(createServer, { secrets: [] });
`,
    "tests/get_order.json": fixtures([
      { name: "finds a shipped order", tool: "get_order", input: { orderId: "SO-1002" }, expect: { result: { orderId: "SO-1002", status: "shipped" } } },
      { name: "an unknown order is an error the model sees", tool: "get_order", input: { orderId: "SO-9999" }, expect: { isError: true, text: "not found" } },
    ]),
    "package.json": packageJson(name, "mcp"),
  };
}

/** Fixture files as `caplo tool test` reads them (server/src/runner/fixtures.ts): an array of fixtures. */
function fixtures(items: Record<string, unknown>[]): string {
  return `${JSON.stringify(items, null, 2)}\n`;
}
