// buildPackage: validates a tool package folder and freezes it as an immutable PackageVersion: parses
// caplo.yaml, checks the entry exists, lists the tools its code defines (Node 24 host over MCP stdio),
// joins them with caplo.yaml, checks every presentation, and hashes the files. Every error is returned.
import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { parseManifest, type PackageVersion } from "@caplo/shared";
import type { BuildError } from "./buildError.ts";
import { contentHash } from "./contentHash.ts";
import { checkPackage } from "./packageCheck.ts";
import { listTools } from "./toolListing.ts";

export type BuildResult = { ok: true; version: PackageVersion } | { ok: false; errors: BuildError[] };
export type BuildOptions = { timeoutMs?: number; now?: () => Date };

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
  const listing = await listTools(packageDir, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
  if (!listing.ok) return { ok: false, errors: [{ code: listing.code, path: listing.code === "entry_invalid" ? "entry" : "", message: listing.message }] };

  const checked = checkPackage(manifest, {
    tools: listing.tools.map((tool) => ({
      name: tool.name,
      ...(tool.description !== undefined && { description: tool.description }),
      inputSchema: tool.inputSchema as Record<string, unknown>,
      ...(tool.outputSchema && { outputSchema: tool.outputSchema as Record<string, unknown> }),
    })),
    experimental: listing.experimental,
  });
  if (checked.errors.length > 0) return { ok: false, errors: checked.errors };
  const hash = contentHash(packageDir);
  return {
    ok: true,
    version: {
      id: `${manifest.name}@sha256:${hash}`,
      name: manifest.name,
      type: manifest.type,
      contentHash: hash,
      dir: packageDir,
      manifest,
      effectOutcomes: checked.effectOutcomes,
      tools: checked.tools,
      builtAt: (options.now ?? (() => new Date()))().toISOString(),
    },
  };
}
