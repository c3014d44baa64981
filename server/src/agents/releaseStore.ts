// Where releases are kept: a small ReleaseStore interface (put, get, latest) and a store of JSON files
// in a folder, one file per release written once, plus a pointer to each agent's latest release.
// Another store (SQLite, PostgreSQL) may implement the same interface; releaseStore.contract.ts tests any.
// The frozen copies of the package versions a release pins are kept with it, in `<dir>/versions/` (see
// keepVersions): every node that serves the releases folder runs exactly those files.
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { AGENT_NAME_PATTERN, DEFAULT_WORKSPACE, releaseSchema, type Release } from "@caplo/shared";
// Not ../build/index.ts: that pulls in the MCP SDK and the Node 24 host, which keeping files needs not.
import { frozenDir, keepFrozen, type FrozenProblem } from "../build/frozenVersion.ts";
import { isRemoteVersionId } from "../remote/remotePin.ts";
import { deepFreeze, verifyRelease } from "./release.ts";

export interface ReleaseStore {
  /**
   * Keep a release and make it its agent's latest. A release is immutable: putting the same id again
   * only moves the latest pointer (created: false); a different content under a taken id is refused.
   */
  put(release: Release): Promise<{ created: boolean }>;
  get(id: string): Promise<Release | undefined>;
  latest(agent: string): Promise<Release | undefined>;
}

/** A store fault that is not the caller's input: a file altered on disk, or one that does not parse. */
export class ReleaseStoreError extends Error {
  readonly code: "release_corrupt" | "release_conflict";
  constructor(code: ReleaseStoreError["code"], message: string) {
    super(message);
    this.name = "ReleaseStoreError";
    this.code = code;
  }
}

/**
 * The releases folder of a workspace: the folder itself for `default`, else `<dir>/@<workspace>` (an agent
 * name never starts with @, so no agent's folder is taken). Each workspace keeps its own frozen versions
 * beside its releases (`versions/`), so a release of one workspace runs only copies kept in its own folder.
 */
export function workspaceReleasesDir(dir: string, workspaceId: string): string {
  return workspaceId === DEFAULT_WORKSPACE ? dir : join(dir, `@${workspaceId}`);
}

const RELEASE_ID_PATTERN = /^([a-z][a-z0-9-]{1,39})@sha256:([0-9a-f]{64})$/;

/** Releases as JSON files: `<dir>/<agent>/<hash>.json` and `<dir>/<agent>/latest.json`. */
export class FileReleaseStore implements ReleaseStore {
  readonly dir: string;
  constructor(dir: string) {
    // Absolute: the kept versions' folders are handed to sandboxed processes, whose working folder is not ours.
    this.dir = resolve(dir);
  }

  async put(release: Release): Promise<{ created: boolean }> {
    const parsed = releaseSchema.parse(release);
    if (!verifyRelease(parsed)) throw new ReleaseStoreError("release_conflict", `${release.id} does not match its content`);
    const folder = join(this.dir, parsed.agent);
    await mkdir(folder, { recursive: true });
    const file = join(folder, `${parsed.contentHash}.json`);
    let created = true;
    try {
      // "wx": written once, never overwritten; that is what makes a stored release immutable.
      await writeFile(file, `${JSON.stringify(parsed, null, 2)}\n`, { flag: "wx" });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const existing = await this.read(file);
      if (!existing || existing.contentHash !== parsed.contentHash) {
        throw new ReleaseStoreError("release_conflict", `${release.id} is already stored with other content`);
      }
      created = false;
    }
    await writeAtomically(join(folder, "latest.json"), `${JSON.stringify({ id: parsed.id })}\n`);
    return { created };
  }

  async get(id: string): Promise<Release | undefined> {
    const match = RELEASE_ID_PATTERN.exec(id);
    if (!match) return undefined;
    const release = await this.read(join(this.dir, match[1]!, `${match[2]}.json`));
    return release?.id === id ? release : undefined;
  }

  async latest(agent: string): Promise<Release | undefined> {
    if (!AGENT_NAME_PATTERN.test(agent)) return undefined;
    const pointer = await readText(join(this.dir, agent, "latest.json"));
    if (pointer === undefined) return undefined;
    let id: unknown;
    try {
      id = (JSON.parse(pointer) as { id?: unknown }).id;
    } catch {
      id = undefined;
    }
    if (typeof id !== "string" || !id.startsWith(`${agent}@`)) {
      throw new ReleaseStoreError("release_corrupt", `${join(this.dir, agent, "latest.json")} does not name a release of ${agent}`);
    }
    const release = await this.get(id);
    if (!release) throw new ReleaseStoreError("release_corrupt", `the latest release of ${agent}, ${id}, is missing`);
    return release;
  }

  /** The folder holding the frozen copies of the package versions its releases pin. */
  get versionsDir(): string {
    return join(this.dir, "versions");
  }

  /**
   * Copies the frozen copy of every package version the release pins (each checked against its hash
   * first) into versionsDir. Publish calls it before put: a release is kept only with its code.
   */
  keepVersions(release: Release): FrozenProblem | undefined {
    for (const version of release.packages) {
      if (isRemoteVersionId(version.id)) continue;
      const kept = keepFrozen(version, this.versionsDir);
      if (!kept.ok) return { ...kept.error, message: `${version.id}: ${kept.error.message}` };
    }
    return undefined;
  }

  /**
   * The release with each package version's dir naming its frozen copy in this store's versionsDir,
   * wherever it was built (the folder may have moved, or be another node's mount of it). A version the
   * store holds no copy of (a release put without keepVersions) keeps the frozen copy its build made.
   * Either way the runner checks the copy against the version's hash when it loads it, and runs nothing
   * from one that does not match. A remote version keeps its version file.
   */
  withKeptVersions(release: Release): Release {
    const packages = release.packages.map((version) => {
      if (isRemoteVersionId(version.id)) return version;
      const kept = frozenDir(this.versionsDir, version.name, version.contentHash);
      return existsSync(kept) ? { ...version, dir: kept } : version;
    });
    return deepFreeze({ ...release, packages });
  }

  private async read(file: string): Promise<Release | undefined> {
    const text = await readText(file);
    if (text === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new ReleaseStoreError("release_corrupt", `${file} is not JSON`);
    }
    const parsed = releaseSchema.safeParse(value);
    if (!parsed.success) throw new ReleaseStoreError("release_corrupt", `${file} is not a release: ${parsed.error.issues[0]?.message}`);
    if (!verifyRelease(parsed.data)) throw new ReleaseStoreError("release_corrupt", `${file} was altered: its content no longer matches its hash`);
    return deepFreeze(parsed.data);
  }
}

async function readText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

async function writeAtomically(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, file);
}
