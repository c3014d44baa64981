// runHost: what host.ts does, as a function, so that the runner's prebuilt host bundle (see
// server/src/runner/hostBundle.ts) can run it too. The interface is described in host.ts.
import { existsSync, readFileSync } from "node:fs";
import * as nodeModule from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { isTool } from "./defineTool.ts";
import { allowPendingResults } from "./pendingResult.ts";
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

export type HostOptions = {
  /**
   * Prebuilt modules (the runner's host bundle): the file URL a shared module resolves to in this
   * repository → the URL of the bundled module with the same exports. A package importing one of these
   * from this repository's copy gets the bundled one (one copy in the process, nothing to resolve);
   * a package with its own copy keeps its own.
   */
  redirects?: Readonly<Record<string, string>>;
  /**
   * What the runner already read from caplo.yaml (it built the package): then the host does not load
   * the YAML parser and manifest schemas at all, a noticeable part of a cold start.
   */
  manifest?: HostManifest;
};

/** The parts of caplo.yaml the host uses. */
export type HostManifest = { type: "function" | "mcp"; entry: string; secrets?: readonly string[] };

async function readManifest(packageDir: string): Promise<HostManifest> {
  const manifestPath = join(packageDir, "caplo.yaml");
  if (!existsSync(manifestPath)) fail({ code: "manifest_invalid", message: `no caplo.yaml in ${packageDir}` });
  const { parseManifest } = await import("@caplo/shared/manifestParse");
  const parsed = parseManifest(readFileSync(manifestPath, "utf8"));
  if (!parsed.ok) fail({ code: "manifest_invalid", message: parsed.errors.map((error) => `${error.path || "caplo.yaml"}: ${error.message}`).join("; ") });
  return parsed.manifest;
}

/** Resolve the SDK's own dependencies from this repository when the package does not have them. */
function registerResolution(options: HostOptions): void {
  type Resolved = { url: string; format?: string | null; shortCircuit?: boolean };
  type Resolve = (specifier: string, context: { parentURL?: string }) => Resolved;
  type Hooks = { resolve(specifier: string, context: { parentURL?: string }, next: Resolve): Resolved };
  const register = (nodeModule as unknown as { registerHooks?: (hooks: Hooks) => void }).registerHooks;
  if (!register) return;
  // From the bundle (node_modules/.cache/…) as from sdk/src, this resolves to this repository's copies.
  const here = import.meta.url;
  const redirects = options.redirects ?? {};
  const redirected = (resolved: Resolved): Resolved => {
    const url = redirects[resolved.url];
    return url ? { url, format: "module", shortCircuit: true } : resolved;
  };
  register({
    resolve(specifier, context, next) {
      try {
        return redirected(next(specifier, context));
      } catch (error) {
        if (!FALLBACK.test(specifier) || (error as { code?: string }).code !== "ERR_MODULE_NOT_FOUND") throw error;
        return redirected(next(specifier, { ...context, parentURL: here }));
      }
    },
  });
}

async function loadServer(packageDir: string, given?: HostManifest): Promise<Connectable> {
  const manifest = given ?? (await readManifest(packageDir));
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

/** Serves the package in packageDir over stdin/stdout (see host.ts for the interface). */
export async function runHost(packageDir: string | undefined, options: HostOptions = {}): Promise<void> {
  if (!packageDir) fail({ code: "manifest_invalid", message: "usage: host.ts <packageDir>" });
  const frames = keepStdoutForFrames();
  registerResolution(options);
  // Before the package's code: its McpServer is this one when it uses Caplo's copy of the SDK.
  allowPendingResults();
  const server = await loadServer(resolve(packageDir), options.manifest);
  await server.connect(new StdioServerTransport(process.stdin, frames));
}
