// Cleaning old frozen version copies: a versions folder (`<releases>/versions/` or a package's
// `.caplo/versions/`) keeps every copy ever built or published. `collectVersions` removes only copies that
// no release pins and that are not the newest copy of their package (the one a build or a publish under
// way has just made, which no release may name yet), so nothing that runs or is about to run is touched.
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_NAME_PATTERN } from "@caplo/shared";

const HASH = /^[0-9a-f]{64}$/;

export interface Collected {
  /** `name/hash` of every copy removed (or, with dryRun, that would be). */
  removed: string[];
  /** `name/hash` of every copy kept, each with why. */
  kept: Array<{ version: string; why: "pinned" | "newest" }>;
}

/**
 * The package versions the releases in `releasesDir` pin, as `name/hash`: every release file
 * (`<agent>/<hash>.json`) is read, whatever agent or age. A release file that cannot be read stops the
 * cleaning (an error is thrown): a pin it may hold must not be lost.
 */
export function pinnedVersions(releasesDir: string): Set<string> {
  const pinned = new Set<string>();
  for (const agent of safeList(releasesDir)) {
    if (agent === "versions") continue;
    const folder = join(releasesDir, agent);
    if (!statSync(folder).isDirectory()) continue;
    for (const file of safeList(folder)) {
      if (!/^[0-9a-f]{64}\.json$/.test(file)) continue;
      const release = JSON.parse(readFileSync(join(folder, file), "utf8")) as { packages?: Array<{ name?: unknown; contentHash?: unknown }> };
      for (const version of release.packages ?? []) {
        if (typeof version.name === "string" && typeof version.contentHash === "string") pinned.add(`${version.name}/${version.contentHash}`);
      }
    }
  }
  return pinned;
}

/** Removes the copies in `versionsDir` that `pinned` does not name and that are not their package's newest. */
export function collectVersions(versionsDir: string, pinned: ReadonlySet<string>, options: { dryRun?: boolean } = {}): Collected {
  const collected: Collected = { removed: [], kept: [] };
  for (const name of safeList(versionsDir)) {
    if (!PACKAGE_NAME_PATTERN.test(name)) continue;
    const copies = safeList(join(versionsDir, name))
      .filter((hash) => HASH.test(hash))
      .map((hash) => ({ hash, at: statSync(join(versionsDir, name, hash)).mtimeMs }))
      .sort((a, b) => b.at - a.at);
    const newest = copies[0]?.hash;
    for (const { hash } of copies) {
      const version = `${name}/${hash}`;
      if (pinned.has(version)) collected.kept.push({ version, why: "pinned" });
      else if (hash === newest) collected.kept.push({ version, why: "newest" });
      else {
        if (!options.dryRun) rmSync(join(versionsDir, name, hash), { recursive: true, force: true });
        collected.removed.push(version);
      }
    }
  }
  return collected;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}
