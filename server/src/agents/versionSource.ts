// A package as `caplo agent publish` and `caplo eval` are given it: a package folder, built now, or the JSON of
// a version already built (`caplo tool build`) or of a published remote MCP server version (`caplo remote publish`).
import { readFile } from "node:fs/promises";
import type { AgentIssue } from "@caplo/shared";
import type { BuildOptions } from "../build/buildPackage.ts";
import { readRemoteVersionFile, remotePackageVersion } from "../remote/remotePin.ts";

/** A package folder is built now; a .json file is a version `caplo tool build` already recorded. */
export async function loadVersion(source: string, settings: Pick<BuildOptions, "node" | "cgroups"> = {}): Promise<{ ok: true; version: unknown } | { ok: false; issues: AgentIssue[] }> {
  if (source.endsWith(".json")) {
    try {
      const data: unknown = JSON.parse(await readFile(source, "utf8"));
      // A published remote MCP server version (caplo remote publish): pinned like a package version.
      if (data !== null && typeof data === "object" && (data as { kind?: unknown }).kind === "remote-mcp") {
        const read = await readRemoteVersionFile(source);
        return read.ok ? { ok: true, version: remotePackageVersion(read.version, source) } : { ok: false, issues: [read.error] };
      }
      return { ok: true, version: data };
    } catch (error) {
      return { ok: false, issues: [{ code: "package_version_unreadable", path: "", message: `cannot read a built version from it: ${(error as Error).message}` }] };
    }
  }
  // Loaded only when a folder is given: the build pulls in the MCP SDK and the Node 24 host.
  const { buildPackage } = await import("../build/index.ts");
  const built = await buildPackage(source, settings);
  return built.ok ? { ok: true, version: built.version } : { ok: false, issues: built.errors };
}
