// A published remote version pinned by an agent release. A release pins whole package versions
// (@caplo/shared PackageVersion), so a remote version enters it in that shape: its id
// (`remote:<name>@sha256:<hex>`), content hash, reviewed tools and policies, the authorization secret's
// name as the only declared secret (so the serving side passes that secret's value per call, like a
// package's secrets), and `dir` naming the frozen version file. The runner loads it from that file and
// refuses a file whose content does not hash to the pinned id, or whose tools differ from the pinned ones.
import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import type { PackageVersion } from "@caplo/shared";
import { canonicalJson } from "./remoteReview.ts";
import { remoteContentHash, remoteVersionSchema, type RemoteVersion } from "./remoteVersion.ts";

export const REMOTE_ID_PREFIX = "remote:";
/** A version file over this size is not one `caplo remote publish` wrote (64 tools at most). */
export const REMOTE_VERSION_FILE_MAX_BYTES = 4 * 1024 * 1024;
/**
 * The pinned manifest's entry: a remote version has no code of its own. The name only satisfies the
 * manifest's shape; the runner never starts anything for a remote version.
 */
export const REMOTE_ENTRY = "remote-mcp.mjs";

export type PinProblem = { code: string; path: string; message: string };

/** Whether a pinned package version is a remote MCP server version. */
export function isRemoteVersionId(id: string): boolean {
  return id.startsWith(REMOTE_ID_PREFIX);
}

/** Checks a version's own content hash and id (a version file that was edited fails). */
export function verifyRemoteVersion(version: RemoteVersion): PinProblem | undefined {
  const hash = remoteContentHash(version);
  if (hash !== version.contentHash || version.id !== `${REMOTE_ID_PREFIX}${version.name}@sha256:${hash}`) {
    return { code: "remote_version_altered", path: "/contentHash", message: `${version.id}: its content does not hash to its id (the file was changed after publishing)` };
  }
  return undefined;
}

/** The package version form of a published remote version, as a release pins it. `file`: where it is kept. */
export function remotePackageVersion(version: RemoteVersion, file: string): PackageVersion {
  return {
    id: version.id,
    name: version.name,
    type: "mcp",
    contentHash: version.contentHash,
    dir: resolve(file),
    manifest: {
      apiVersion: "v1",
      kind: "ToolPackage",
      name: version.name,
      description: `Remote MCP server ${version.url}`.slice(0, 500),
      entry: REMOTE_ENTRY,
      runtime: "node24",
      ...(version.authorizationSecret && { secrets: [version.authorizationSecret] }),
      tests: "tests/**/*.yaml",
      type: "mcp",
      tools: version.tools.map((tool) => tool.policy),
    },
    effectOutcomes: version.effectOutcomes ?? false,
    tools: version.tools.map(({ schemaHash: _schemaHash, ...tool }) => tool),
    builtAt: version.publishedAt,
  };
}

/** Reads a remote version file (what `caplo remote publish` wrote) and checks its hash. */
export async function readRemoteVersionFile(file: string): Promise<{ ok: true; version: RemoteVersion } | { ok: false; error: PinProblem }> {
  let text: string;
  try {
    const info = await stat(file);
    if (info.size > REMOTE_VERSION_FILE_MAX_BYTES) return { ok: false, error: { code: "remote_version_unreadable", path: "", message: `${file} is over ${REMOTE_VERSION_FILE_MAX_BYTES} bytes` } };
    text = await readFile(file, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
    return { ok: false, error: { code: "remote_version_unreadable", path: "", message: `cannot read ${file}: ${reason}` } };
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: { code: "remote_version_unreadable", path: "", message: `${file} is not JSON: ${(error as Error).message}` } };
  }
  const parsed = remoteVersionSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, error: { code: "remote_version_invalid", path: `/${issue?.path.join("/") ?? ""}`, message: `${file} is not a remote version: ${issue?.message ?? "invalid"}` } };
  }
  const altered = verifyRemoteVersion(parsed.data);
  return altered ? { ok: false, error: altered } : { ok: true, version: parsed.data };
}

/**
 * The remote version a release pinned: read from its `dir`, and exactly the pinned one (same id and
 * content hash, and the same tools, schemas and policies as the release froze).
 */
export async function loadPinnedRemote(pinned: PackageVersion): Promise<{ ok: true; version: RemoteVersion } | { ok: false; error: PinProblem }> {
  const read = await readRemoteVersionFile(pinned.dir);
  if (!read.ok) return read;
  const version = read.version;
  if (version.id !== pinned.id || version.contentHash !== pinned.contentHash) {
    return { ok: false, error: { code: "remote_version_mismatch", path: "/dir", message: `${pinned.dir} holds ${version.id}, not the pinned ${pinned.id}` } };
  }
  const expected = remotePackageVersion(version, pinned.dir);
  if (canonicalJson(expected.tools) !== canonicalJson(pinned.tools) || canonicalJson(expected.manifest.secrets ?? []) !== canonicalJson(pinned.manifest.secrets ?? [])) {
    return { ok: false, error: { code: "remote_version_mismatch", path: "/tools", message: `the pinned tools of ${pinned.id} differ from its version file ${pinned.dir}` } };
  }
  return { ok: true, version };
}
