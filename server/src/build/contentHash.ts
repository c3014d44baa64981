// The content hash of a package: sha256 over its files' sorted relative paths and bytes, excluding
// node_modules and .git, so the same files always give the same version id.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join, relative, sep } from "node:path";

const SKIPPED = new Set(["node_modules", ".git"]);

/** Every file of the package (relative, with forward slashes), sorted. Symlinks count as their target text. */
export function packageFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (current: string) => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      if (SKIPPED.has(entry.name)) continue;
      const full = join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() || entry.isSymbolicLink()) out.push(relative(dir, full).split(sep).join("/"));
    }
  };
  walk(dir);
  return out.sort();
}

export function contentHash(dir: string): string {
  const hash = createHash("sha256");
  for (const file of packageFiles(dir)) {
    const full = join(dir, ...file.split("/"));
    let bytes: Buffer;
    try {
      bytes = readFileSync(full);
    } catch {
      bytes = Buffer.from(`symlink:${readlinkSync(full)}`);
    }
    hash.update(`${file}\u0000${bytes.length}\u0000`);
    hash.update(bytes);
  }
  return hash.digest("hex");
}
