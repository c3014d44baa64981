// buildPackage: validates a tool package folder and freezes it as an immutable PackageVersion: parses
// caplo.yaml, checks the entry exists, copies what the package ships into a content-addressed frozen
// copy (frozenVersion.ts), lists the tools that copy's code defines (in the sandbox, see toolListing.ts), joins
// them with caplo.yaml and checks every presentation. The version's dir is the frozen copy, never the
// package folder. Every error is returned; warnings say what builds but may not work as meant.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseManifest, type PackageVersion } from "@caplo/shared";
import type { BuildError } from "./buildError.ts";
import { freezePackage } from "./frozenVersion.ts";
import { checkPackage } from "./packageCheck.ts";
import { listTools } from "./toolListing.ts";
import { insidePackage, linksLeavingPackage } from "../runner/packagePath.ts";

export type BuildResult = { ok: true; version: PackageVersion; warnings: BuildError[] } | { ok: false; errors: BuildError[] };
export type BuildOptions = {
  /** The listing's time limit (default 30 s). */
  timeoutMs?: number;
  now?: () => Date;
  /** `caplo tool test` with CAPLO_SANDBOX=weak only: list the tools in the weak sandbox where namespaces are unavailable. */
  allowWeakSandbox?: boolean;
  /** Where the frozen copy is kept: default the package's own .caplo/versions (never shipped itself). */
  versionsDir?: string;
  /** The Node 24 binary (CAPLO_NODE24); default runtime/node24 of this repository. */
  node?: string;
  /** false: no control group for the listing process (CAPLO_CGROUPS=off); default: one where they work. */
  cgroups?: boolean;
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
  // The package is untrusted: nothing of it is read through a link that leaves it (caplo.yaml linked to
  // a file of the host would be parsed, and its text shown in errors).
  const leaving = [insidePackage(packageDir, "caplo.yaml"), ...linksLeavingPackage(packageDir).map((error) => ({ ok: false as const, error }))].flatMap((check) => (check.ok ? [] : [check.error]));
  if (leaving.length) return { ok: false, errors: leaving };
  const parsed = parseManifest(readFileSync(manifestPath, "utf8"));
  if (!parsed.ok) return { ok: false, errors: parsed.errors };
  const manifest = parsed.manifest;

  const entryInside = insidePackage(packageDir, manifest.entry);
  if (!entryInside.ok) return { ok: false, errors: [{ ...entryInside.error, path: "entry" }] };
  const entryPath = resolve(packageDir, manifest.entry);
  if (!existsSync(entryPath) || !statSync(entryPath).isFile()) {
    return { ok: false, errors: [{ code: "entry_invalid", path: "entry", message: `entry ${manifest.entry} does not exist in the package` }] };
  }
  // What runs, at build time as later, is the frozen copy: a file the package needs but does not ship
  // (its .caplo folder, a local secrets file) is missing here too.
  const frozen = freezePackage(packageDir, manifest.name, options.versionsDir ?? localVersionsDir(packageDir));
  if (!frozen.ok) return { ok: false, errors: [{ code: frozen.error.code, path: "", message: frozen.error.message }] };
  const warnings: BuildError[] = frozen.skipped.map((path) => ({ code: "file_not_shipped", path, message: `${path} is a link to a folder or to nothing; it is not part of the version` }));
  // The package's code runs here for the first time: in the sandbox, like every call after.
  const listing = await listTools(frozen.dir, {
    manifest,
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
    ...(options.allowWeakSandbox && { allowWeakSandbox: true }),
    ...(options.node !== undefined && { node: options.node }),
    ...(options.cgroups !== undefined && { cgroups: options.cgroups }),
  });
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
