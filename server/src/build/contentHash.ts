// What a package ships, and its content hash: sha256 over the shipped files' sorted relative paths and
// bytes. Local state is not shipped (Caplo's .caplo folder with invocation logs, local secrets and built
// copies; .env and secrets files; logs; test output; version control), so running `caplo tool test` or
// adding a local secrets file never makes a new version. A package's own node_modules ships (it is code
// the package runs); a node_modules that is a link to an installed tree elsewhere does not.
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** Folders left out wherever they are. */
const SKIPPED_DIRS = new Set([".git", ".hg", ".svn", ".caplo", "coverage", ".nyc_output", "test-results", ".vitest"]);
/** Folders left out inside node_modules: installed command links and tools' caches. */
const SKIPPED_IN_MODULES = new Set([".bin", ".cache"]);
/** Files left out wherever they are: local secrets (.env, .env.local, secrets.env, *.secrets.env), logs. */
const SKIPPED_FILE = /^(?:\.env(?:\..*)?|(?:.*\.)?secrets\.env|.*\.log|\.DS_Store)$/;

/** At most this many files, and this many bytes in all, ship in one version. */
export const PACKAGE_FILES_MAX = 20_000;
export const PACKAGE_BYTES_MAX = 256 * 1024 * 1024;

export type ShippedFile = { path: string; full: string; size: number };
export type Shipped =
  | { ok: true; files: ShippedFile[]; bytes: number; /** Links that were not followed (to a folder, or dangling). */ skipped: string[] }
  | { ok: false; code: "package_too_large" | "version_altered"; path: string; message: string };

/**
 * Every file a package ships, sorted by its relative path (forward slashes). A symbolic link to a file
 * ships as that file's bytes; a link to a folder, or one that leads nowhere, is not followed. With
 * `strict` (a frozen copy, which holds regular files only), any link or left-out file is refused.
 */
export function shippedFiles(dir: string, options: { strict?: boolean } = {}): Shipped {
  const files: ShippedFile[] = [];
  const skipped: string[] = [];
  let bytes = 0;
  let problem: Extract<Shipped, { ok: false }> | undefined;
  const walk = (current: string, rel: string, inModules: boolean): void => {
    for (const entry of readdirSync(current, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (problem) return;
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      const full = join(current, entry.name);
      const leftOut = entry.isDirectory() ? SKIPPED_DIRS.has(entry.name) || (inModules && SKIPPED_IN_MODULES.has(entry.name)) : SKIPPED_FILE.test(entry.name);
      if (options.strict && (entry.isSymbolicLink() || leftOut)) {
        problem = { ok: false, code: "version_altered", path, message: `${path} is not part of the built version (a frozen copy holds only the files the package ships)` };
        return;
      }
      if (leftOut) continue;
      if (entry.isDirectory()) {
        walk(full, path, inModules || entry.name === "node_modules");
        continue;
      }
      let size: number;
      if (entry.isSymbolicLink()) {
        const target = statSync(full, { throwIfNoEntry: false });
        if (!target?.isFile()) {
          skipped.push(path);
          continue;
        }
        size = target.size;
      } else if (entry.isFile()) size = lstatSync(full).size;
      else continue;
      bytes += size;
      files.push({ path, full, size });
      if (files.length > PACKAGE_FILES_MAX || bytes > PACKAGE_BYTES_MAX) {
        problem = { ok: false, code: "package_too_large", path, message: `the package ships over ${PACKAGE_FILES_MAX} files or ${PACKAGE_BYTES_MAX / 1024 / 1024} MiB` };
        return;
      }
    }
  };
  walk(dir, "", false);
  if (problem) return problem;
  // Sorted by the whole path (the walk sorts each folder; a/b and a-c need the whole path compared).
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { ok: true, files, bytes, skipped };
}

/** The shipped files' relative paths, sorted. */
export function packageFiles(dir: string): string[] {
  const shipped = shippedFiles(dir);
  if (!shipped.ok) throw new Error(shipped.message);
  return shipped.files.map((file) => file.path);
}

/** The running hash of files given in order: each file's path, length and bytes. */
export function fileHasher(): { add: (path: string, bytes: Buffer) => void; digest: () => string } {
  const hash = createHash("sha256");
  return {
    add(path, bytes) {
      hash.update(`${path}\u0000${bytes.length}\u0000`);
      hash.update(bytes);
    },
    digest: () => hash.digest("hex"),
  };
}

export function contentHash(dir: string): string {
  const shipped = shippedFiles(dir);
  if (!shipped.ok) throw new Error(shipped.message);
  const hasher = fileHasher();
  for (const file of shipped.files) hasher.add(file.path, readFileSync(file.full));
  return hasher.digest();
}
