// Where published remote versions are kept: one JSON file each, `<name>-<hash prefix>.json` in a folder
// (`caplo remote publish --out DIR`, or the workspace's `remote/` folder beside its releases when the team
// console publishes). A file is written once and never changed; each is checked against its hash when read.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { readRemoteVersionFile, type PinProblem } from "./remotePin.ts";
import type { RemoteVersion } from "./remoteVersion.ts";

/** The file a version is kept in, inside `dir`. */
export function remoteVersionFile(dir: string, version: Pick<RemoteVersion, "name" | "contentHash">): string {
  return join(dir, `${version.name}-${version.contentHash.slice(0, 12)}.json`);
}

/** Keeps a published version in `dir` (the same content is kept once: its file is never rewritten); its file. */
export function keepRemoteVersion(dir: string, version: RemoteVersion): string {
  mkdirSync(dir, { recursive: true });
  const file = remoteVersionFile(dir, version);
  if (existsSync(file)) return file;
  try {
    writeFileSync(file, JSON.stringify(version, null, 2) + "\n", { flag: "wx" });
  } catch (error) {
    // Another node (or member) kept the same content at the same moment: the file is that version.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return file;
}

/** Every version kept in `dir` (newest first), and the files that are not an intact version, each with why. */
export async function readRemoteVersions(dir: string): Promise<{ versions: { version: RemoteVersion; file: string }[]; problems: PinProblem[] }> {
  const names = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return [] as string[];
    throw error;
  });
  const versions: { version: RemoteVersion; file: string }[] = [];
  const problems: PinProblem[] = [];
  for (const name of names.filter((entry) => entry.endsWith(".json")).sort()) {
    const file = join(dir, name);
    const read = await readRemoteVersionFile(file);
    if (read.ok) versions.push({ version: read.version, file });
    else problems.push({ ...read.error, path: name });
  }
  versions.sort((a, b) => b.version.publishedAt.localeCompare(a.version.publishedAt));
  return { versions, problems };
}
