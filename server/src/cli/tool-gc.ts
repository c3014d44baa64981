// `caplo tool gc`: removes old frozen version copies that no release pins (server/src/build/versionGc.ts).
import { join, resolve } from "node:path";
import { collectVersions, pinnedVersions } from "../build/versionGc.ts";
import { DEFAULT_RELEASES_DIR } from "./agent.ts";

export const help = `Usage: caplo tool gc [--store DIR] [--dir PACKAGE_DIR] [--dry-run]

Removes the frozen copies of package versions that no release pins and that are not the newest copy of
their package. Without --dir it cleans the releases' own copies, DIR/versions/ (what caplo serve runs);
with --dir it cleans that package's PACKAGE_DIR/.caplo/versions/ (what caplo tool build makes), keeping
what the releases in --store pin as well. Every release file of every agent counts as a pin, old ones
too; a release file that cannot be read stops the cleaning and removes nothing.

  --store DIR   where releases are kept (default $CAPLO_RELEASES_DIR or ${DEFAULT_RELEASES_DIR})
  --dir DIR     clean this package's .caplo/versions/ instead
  --dry-run     print what would be removed, remove nothing

Exit status: 0 done, 1 a release could not be read, 2 bad usage.`;

export async function run(args: string[]): Promise<number> {
  let store = process.env.CAPLO_RELEASES_DIR || DEFAULT_RELEASES_DIR;
  let packageDir: string | undefined;
  let dryRun = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--dry-run") dryRun = true;
    else if ((arg === "--store" || arg === "--dir") && args[i + 1] && !args[i + 1]!.startsWith("-")) {
      if (arg === "--store") store = args[++i]!;
      else packageDir = args[++i]!;
    } else {
      console.error(`caplo tool gc: ${arg.startsWith("-") ? `unknown option or missing value: ${arg}` : `unexpected argument ${arg}`}\n\n${help}`);
      return 2;
    }
  }
  let pinned: Set<string>;
  try {
    pinned = pinnedVersions(resolve(store));
  } catch (error) {
    console.error(`caplo tool gc: could not read the releases in ${store}, so nothing was removed: ${(error as Error).message}`);
    return 1;
  }
  const versionsDir = packageDir ? join(resolve(packageDir), ".caplo", "versions") : join(resolve(store), "versions");
  const { removed, kept } = collectVersions(versionsDir, pinned, { dryRun });
  for (const version of removed) console.log(`${dryRun ? "would remove" : "removed"}  ${version}`);
  for (const { version, why } of kept) console.log(`kept     ${version} (${why === "pinned" ? "a release pins it" : "the newest copy of its package"})`);
  console.log(`${versionsDir}: ${removed.length} ${dryRun ? "would be removed" : "removed"}, ${kept.length} kept`);
  return 0;
}
