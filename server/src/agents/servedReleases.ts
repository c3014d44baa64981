// The releases a server serves: the latest release of each `--agent` in the releases folder, read and checked
// once for `caplo serve` (app/server.ts's startServer) and `caplo serve --check-channels` (app/serveChannels.ts's
// checkChannels) alike, so the check refuses what a start refuses, with the same code. Here, not in app/, so
// neither imports the other.
import { resolve, sep } from "node:path";
import { AGENT_NAME_PATTERN, DEFAULT_WORKSPACE, WORKSPACE_ID_PATTERN, type PackageVersion, type Release } from "@caplo/shared";
import { parseAgentRef, type AgentRelease } from "../engine/release.ts";
import { isRemoteVersionId } from "../remote/remotePin.ts";
import { FileReleaseStore, workspaceReleasesDir } from "./releaseStore.ts";

/** Why the served releases cannot be read: serve's coded error (ServeError). */
export type ServedReleasesError = { code: string; path: string; message: string };

/**
 * A pinned package version whose frozen copy belongs to another workspace than the release's: kept in another
 * workspace's folder, or (outside the default workspace) not kept in the workspace's own `versions/`.
 */
export function foreignVersion(release: AgentRelease, releasesDir: string, workspaceId: string): PackageVersion | undefined {
  const root = resolve(releasesDir);
  const own = resolve(workspaceReleasesDir(releasesDir, workspaceId), "versions");
  for (const version of release.packages) {
    if (isRemoteVersionId(version.id)) continue;
    const dir = resolve(version.dir);
    const inside = (folder: string) => dir === folder || dir.startsWith(folder + sep);
    if (inside(own)) continue;
    if (workspaceId !== DEFAULT_WORKSPACE) return version;
    const relativeToRoot = inside(root) ? dir.slice(root.length + 1) : undefined;
    if (relativeToRoot?.startsWith("@")) return version;
  }
  return undefined;
}

/** The latest release of each of `agents` in `releasesDir`, with its pinned versions' frozen copies, or the first problem. */
export async function readServedReleases(options: { agents: readonly string[]; releasesDir: string }): Promise<{ ok: true; releases: AgentRelease[] } | { ok: false; error: ServedReleasesError }> {
  const releases: AgentRelease[] = [];
  for (const ref of options.agents) {
    // `--agent NAME` serves the default workspace's agent, `--agent WORKSPACE/NAME` another workspace's.
    const { workspaceId, agent } = parseAgentRef(ref);
    if (!WORKSPACE_ID_PATTERN.test(workspaceId) || !AGENT_NAME_PATTERN.test(agent)) {
      return { ok: false, error: { code: "agent_invalid", path: ref, message: `${ref}: an agent is NAME (the default workspace) or WORKSPACE/NAME, each lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters` } };
    }
    const dir = workspaceReleasesDir(options.releasesDir, workspaceId);
    const releaseStore = new FileReleaseStore(dir);
    const release: Release | undefined = await releaseStore.latest(agent).catch(() => undefined);
    if (!release) return { ok: false, error: { code: "release_not_found", path: ref, message: `no published release of agent ${agent} in ${dir} (caplo agent publish${workspaceId === DEFAULT_WORKSPACE ? "" : ` --workspace ${workspaceId}`})` } };
    // Each pinned package version runs from its frozen copy kept with the workspace's releases (checked at load).
    const kept = releaseStore.withKeptVersions(release);
    const foreign = foreignVersion(kept, options.releasesDir, workspaceId);
    if (foreign) return { ok: false, error: { code: "version_not_in_workspace", path: ref, message: `${release.id} pins ${foreign.id}, whose frozen copy is not kept in workspace ${workspaceId}'s releases (${dir}/versions): a release runs only its own workspace's tool versions; publish it with caplo agent publish${workspaceId === DEFAULT_WORKSPACE ? "" : ` --workspace ${workspaceId}`}` } };
    releases.push(workspaceId === DEFAULT_WORKSPACE ? kept : { ...kept, workspaceId });
  }
  return { ok: true, releases };
}
