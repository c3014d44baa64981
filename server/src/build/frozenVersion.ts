// Built versions as immutable, content-addressed copies: `freezePackage` copies exactly what a package
// ships into `<versionsDir>/<name>/<hash>/` (written in a staging folder, then renamed into place; files
// read-only), and `checkFrozen` proves a copy still holds exactly the version's files before anything
// runs from it. The runner runs only such a copy, so editing a package's folder after publishing changes
// nothing for customers, and nothing in the package's .caplo folder (its local secrets) is ever readable.
import { randomBytes } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { PACKAGE_NAME_PATTERN } from "@caplo/shared";
import { fileHasher, shippedFiles } from "./contentHash.ts";

export type FrozenProblem = { code: "version_altered" | "version_missing" | "package_too_large"; path: string; message: string };
export type Frozen =
  | {
      ok: true;
      dir: string;
      contentHash: string;
      skipped: string[];
      /** The package ships its own copy of the MCP SDK (Caplo's host then cannot adjust it). */
      ownsMcpSdk: boolean;
    }
  | { ok: false; error: FrozenProblem };

const OWN_MCP_SDK = /(^|\/)node_modules\/@modelcontextprotocol\/sdk\//;

/** Where a version's frozen copy lives in a versions folder. */
export function frozenDir(versionsDir: string, name: string, contentHash: string): string {
  if (!PACKAGE_NAME_PATTERN.test(name) || !/^[0-9a-f]{64}$/.test(contentHash)) throw new Error(`not a package version: ${name} ${contentHash}`);
  return join(versionsDir, name, contentHash);
}

/**
 * Copies what the package in `packageDir` ships into the versions folder, named by its content hash.
 * A copy already there is checked, not rewritten: an altered one is refused (version_altered).
 */
export function freezePackage(packageDir: string, name: string, versionsDir: string): Frozen {
  const shipped = shippedFiles(packageDir);
  if (!shipped.ok) return { ok: false, error: { code: shipped.code, path: shipped.path, message: shipped.message } };
  const staging = join(versionsDir, name, `.staging-${process.pid}-${randomBytes(6).toString("hex")}`);
  const hasher = fileHasher();
  try {
    for (const file of shipped.files) {
      const target = join(staging, ...file.path.split("/"));
      mkdirSync(dirname(target), { recursive: true });
      // Hash the bytes copied, not the source again: what is hashed is what was frozen.
      copyFileSync(file.full, target);
      const bytes = readFileSync(target);
      hasher.add(file.path, bytes);
      chmodSync(target, 0o444);
    }
    mkdirSync(staging, { recursive: true });
    const hash = hasher.digest();
    const dir = frozenDir(versionsDir, name, hash);
    if (existsSync(dir)) {
      const problem = checkFrozen(dir, hash);
      if (problem) return { ok: false, error: problem };
    } else {
      try {
        renameSync(staging, dir);
      } catch (error) {
        // Another build froze the same content at the same moment: theirs is as good, once checked.
        if (!existsSync(dir)) throw error;
        const problem = checkFrozen(dir, hash);
        if (problem) return { ok: false, error: problem };
      }
    }
    return { ok: true, dir, contentHash: hash, skipped: shipped.skipped, ownsMcpSdk: shipped.files.some((file) => OWN_MCP_SDK.test(file.path)) };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Keeps an already frozen version (e.g. from a package's own .caplo/versions) in another versions folder. */
export function keepFrozen(version: { name: string; contentHash: string; dir: string }, versionsDir: string): Frozen {
  const problem = checkFrozen(version.dir, version.contentHash);
  if (problem) return { ok: false, error: problem };
  const frozen = freezePackage(version.dir, version.name, versionsDir);
  if (frozen.ok && frozen.contentHash !== version.contentHash) {
    return { ok: false, error: { code: "version_altered", path: "", message: `${version.dir} changed while it was copied` } };
  }
  return frozen;
}

/**
 * Whether `dir` holds exactly the files of the version with this content hash: regular files only, no
 * left-out file, the same paths and bytes. Undefined when it does; else why not (nothing may run from it).
 */
export function checkFrozen(dir: string, contentHash: string): FrozenProblem | undefined {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
    return { code: "version_missing", path: dir, message: `the frozen copy of this version is missing: ${dir} (publish the agent again to keep its package versions)` };
  }
  const shipped = shippedFiles(dir, { strict: true });
  if (!shipped.ok) return { code: "version_altered", path: shipped.path, message: `the frozen copy ${dir} was altered: ${shipped.message}` };
  const hasher = fileHasher();
  for (const file of shipped.files) hasher.add(file.path, readFileSync(file.full));
  const actual = hasher.digest();
  if (actual !== contentHash) {
    return { code: "version_altered", path: dir, message: `the frozen copy ${dir} was altered: its files hash to sha256:${actual}, not the version's sha256:${contentHash}` };
  }
  return undefined;
}
