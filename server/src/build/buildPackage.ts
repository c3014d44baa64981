// buildPackage: validates a tool package folder and freezes it as an immutable PackageVersion: parses
// caplo.yaml, checks the entry exists, copies what the package ships into a content-addressed frozen
// copy (frozenVersion.ts), lists the tools that copy's code defines (Node 24 host over MCP stdio), joins
// them with caplo.yaml and checks every presentation. The version's dir is the frozen copy, never the
// package folder. Every error is returned; warnings say what builds but may not work as meant.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseManifest, type PackageVersion } from "@caplo/shared";
import type { BuildError } from "./buildError.ts";
import { freezePackage } from "./frozenVersion.ts";
import { checkPackage } from "./packageCheck.ts";
import { listTools } from "./toolListing.ts";

export type BuildResult = { ok: true; version: PackageVersion; warnings: BuildError[] } | { ok: false; errors: BuildError[] };
export type BuildOptions = {
  timeoutMs?: number;
  now?: () => Date;
  /** Where the frozen copy is kept: default the package's own .caplo/versions (never shipped itself). */
  versionsDir?: string;
};

/** The versions folder a package's own builds use unless told otherwise. */
export function localVersionsDir(packageDir: string): string {
  return join(resolve(packageDir), ".caplo", "versions");
}

export async function buildPackage(dir: string, options: BuildOptions = {}): Promise<BuildResult> {
  const packageDir = resolve(dir);
  const manifestPath = resolve(packageDir, "caplo.yaml");
  if (!existsSync(packageDir) || !statSync(packageDir).isDirectory()) {
    return { ok: false, errors: [{ code: "manifest_invalid", path: "", message: `${packageDir} is not a folder` }] };
  }
  if (!existsSync(manifestPath)) {
    return { ok: false, errors: [{ code: "manifest_invalid", path: "", message: `no caplo.yaml in ${packageDir}: run caplo tool init to create a package` }] };
  }
  const parsed = parseManifest(readFileSync(manifestPath, "utf8"));
  if (!parsed.ok) return { ok: false, errors: parsed.errors };
  const manifest = parsed.manifest;

  const entryPath = resolve(packageDir, manifest.entry);
  if (!existsSync(entryPath) || !statSync(entryPath).isFile()) {
    return { ok: false, errors: [{ code: "entry_invalid", path: "entry", message: `entry ${manifest.entry} does not exist in the package` }] };
  }
  // What runs, at build time as later, is the frozen copy: a file the package needs but does not ship
  // (its .caplo folder, a local secrets file) is missing here too.
  const frozen = freezePackage(packageDir, manifest.name, options.versionsDir ?? localVersionsDir(packageDir));
  if (!frozen.ok) return { ok: false, errors: [{ code: frozen.error.code, path: "", message: frozen.error.message }] };
  const warnings: BuildError[] = frozen.skipped.map((path) => ({ code: "file_not_shipped", path, message: `${path} is a link to a folder or to nothing; it is not part of the version` }));
  const listing = await listTools(frozen.dir, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
  if (!listing.ok) return { ok: false, errors: [{ code: listing.code, path: listing.code === "entry_invalid" ? "entry" : "", message: listing.message }] };

  const checked = checkPackage(manifest, {
    tools: listing.tools.map((tool) => ({
      name: tool.name,
      ...(tool.description !== undefined && { description: tool.description }),
      inputSchema: tool.inputSchema as Record<string, unknown>,
      ...(tool.outputSchema && { outputSchema: tool.outputSchema as Record<string, unknown> }),
    })),
    experimental: listing.experimental,
    ownsMcpSdk: frozen.ownsMcpSdk,
  });
  if (checked.errors.length > 0) return { ok: false, errors: checked.errors };
  const hash = frozen.contentHash;
  return {
    ok: true,
    warnings: [...warnings, ...checked.warnings],
    version: {
      id: `${manifest.name}@sha256:${hash}`,
      name: manifest.name,
      type: manifest.type,
      contentHash: hash,
      dir: frozen.dir,
      manifest,
      effectOutcomes: checked.effectOutcomes,
      tools: checked.tools,
      builtAt: (options.now ?? (() => new Date()))().toISOString(),
    },
  };
}
