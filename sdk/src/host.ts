// The module Node 24 runs to serve one tool package over stdio: what the runner spawns in its sandbox and
// what `caplo tool build` starts to list a package's tools.
//
// Interface (keep stable):
//   node24 sdk/src/host.ts <packageDir>
//   - Reads <packageDir>/caplo.yaml, imports its `entry`: a function package's default export must be a
//     defineTool(); an MCP package must export createServer() returning the MCP SDK's Server or McpServer.
//   - Declared `secrets` are the only names ctx.secrets.get accepts; values come per call in
//     `_meta[CALL_META_KEY]` (never from the environment).
//   - Serves MCP over stdin/stdout (StdioServerTransport). stdout carries MCP frames only: console.log
//     and friends, and process.stdout.write, of the package are sent to stderr.
//   - `@caplo/tools`, `@caplo/shared`, `@modelcontextprotocol/sdk` and `zod` resolve from the package
//     first and, when it has none, from this repository (so `caplo tool init` packages work anywhere).
//   - On failure before serving, it writes one line `caplo-host-error {"code","message"}` to stderr and
//     exits: 2 manifest_invalid (caplo.yaml), 3 entry_invalid (missing entry, import failed, wrong export).
import { existsSync, readFileSync } from "node:fs";
import * as nodeModule from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { parseManifest } from "@caplo/shared/manifestParse";
import { isTool } from "./defineTool.ts";
import { setDeclaredSecrets } from "./runtime.ts";
import { keepStdoutForFrames, type Connectable } from "./stdio.ts";

export const HOST_ERROR_PREFIX = "caplo-host-error ";
export const EXIT_MANIFEST_INVALID = 2;
export const EXIT_ENTRY_INVALID = 3;

type HostFailure = { code: "manifest_invalid" | "entry_invalid"; message: string };

function fail(failure: HostFailure): never {
  process.stderr.write(`${HOST_ERROR_PREFIX}${JSON.stringify(failure)}\n`);
  process.exit(failure.code === "manifest_invalid" ? EXIT_MANIFEST_INVALID : EXIT_ENTRY_INVALID);
}

const FALLBACK = /^(@caplo\/tools|@caplo\/shared|@modelcontextprotocol\/sdk|zod)(\/|$)/;

/** Resolve the SDK's own dependencies from this repository when the package does not have them. */
function registerFallbackResolution(): void {
  type Resolve = (specifier: string, context: { parentURL?: string }) => unknown;
  type Hooks = { resolve(specifier: string, context: { parentURL?: string }, next: Resolve): unknown };
  const register = (nodeModule as unknown as { registerHooks?: (hooks: Hooks) => void }).registerHooks;
  if (!register) return;
  const here = import.meta.url;
  register({
    resolve(specifier, context, next) {
      try {
        return next(specifier, context);
      } catch (error) {
        if (!FALLBACK.test(specifier) || (error as { code?: string }).code !== "ERR_MODULE_NOT_FOUND") throw error;
        return next(specifier, { ...context, parentURL: here });
      }
    },
  });
}

async function loadServer(packageDir: string): Promise<Connectable> {
  const manifestPath = join(packageDir, "caplo.yaml");
  if (!existsSync(manifestPath)) fail({ code: "manifest_invalid", message: `no caplo.yaml in ${packageDir}` });
  const parsed = parseManifest(readFileSync(manifestPath, "utf8"));
  if (!parsed.ok) fail({ code: "manifest_invalid", message: parsed.errors.map((error) => `${error.path || "caplo.yaml"}: ${error.message}`).join("; ") });
  const manifest = parsed.manifest;
  setDeclaredSecrets(manifest.secrets ?? []);
  const entryPath = resolve(packageDir, manifest.entry);
  if (!existsSync(entryPath)) fail({ code: "entry_invalid", message: `entry ${manifest.entry} does not exist` });

  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(entryPath).href)) as Record<string, unknown>;
  } catch (error) {
    fail({ code: "entry_invalid", message: `entry ${manifest.entry} failed to load: ${error instanceof Error ? error.message : String(error)}` });
  }
  if (manifest.type === "function") {
    if (!isTool(exports.default)) fail({ code: "entry_invalid", message: `entry ${manifest.entry} must default-export defineTool({...}) (type: function)` });
    return exports.default.createServer();
  }
  const create = exports.createServer;
  if (typeof create !== "function") fail({ code: "entry_invalid", message: `entry ${manifest.entry} must export a function createServer() (type: mcp)` });
  let server: unknown;
  try {
    server = await (create as () => unknown)();
  } catch (error) {
    fail({ code: "entry_invalid", message: `createServer() threw: ${error instanceof Error ? error.message : String(error)}` });
  }
  if (server === null || typeof server !== "object" || typeof (server as Connectable).connect !== "function") {
    fail({ code: "entry_invalid", message: "createServer() must return an MCP server (Server or McpServer from @modelcontextprotocol/sdk)" });
  }
  return server as Connectable;
}

async function main(): Promise<void> {
  const packageDir = process.argv[2];
  if (!packageDir) fail({ code: "manifest_invalid", message: "usage: host.ts <packageDir>" });
  const frames = keepStdoutForFrames();
  registerFallbackResolution();
  const server = await loadServer(resolve(packageDir));
  await server.connect(new StdioServerTransport(process.stdin, frames));
}

await main();
