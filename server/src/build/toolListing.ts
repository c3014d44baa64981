// Lists the tools a package's code defines, in the same sandbox its calls run in: the runner's package
// process (namespaces, chroot, the permission model, user nobody, an empty environment, its control
// group) with no network at all and no secrets, its own timeout and memory limit, and a cap on what it
// may send back. Reads tools/list (every page, bounded) and the server's capabilities, then stops it.
// What comes back is the package's word: untrusted data, validated by the MCP SDK's schemas here and by
// checkPackage after.
import { statSync } from "node:fs";
import { LISTED_TOOLS_MAX, LISTING_BYTES_MAX } from "@caplo/shared";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { ensureHostBundle } from "../runner/hostBundle.ts";
import { memoryLimitKind } from "../runner/cgroup.ts";
import { HOST_MODULE, RUNTIME_READ_PATHS, findNode24 } from "../runner/node24.ts";
import { PackageProcess, ProcessStartError } from "../runner/packageProcess.ts";
import { chooseSandbox } from "../runner/sandbox.ts";

export type ListedTools = {
  ok: true;
  tools: McpTool[];
  /** capabilities.experimental the server advertised. */
  experimental: Record<string, unknown>;
};
export type ListingFailure = { ok: false; code: "manifest_invalid" | "entry_invalid" | "sandbox_unavailable"; message: string };

export type ListingOptions = {
  /** The whole listing: start, initialize and every page (default 30 s). */
  timeoutMs?: number;
  /** What the build read from caplo.yaml, so the host need not parse it again. */
  manifest?: { type: "function" | "mcp"; entry: string; secrets?: readonly string[] };
  /** V8 heap of the listing process, MiB (default 256; the whole process gets 128 more where cgroups work). */
  memoryMb?: number;
  /** `caplo tool test` with CAPLO_SANDBOX=weak only (see chooseSandbox). */
  allowWeakSandbox?: boolean;
  /** The Node 24 binary (CAPLO_NODE24); default runtime/node24 of this repository. */
  node?: string;
  /** false: no control group (CAPLO_CGROUPS=off). */
  cgroups?: boolean;
};

/** Largest tools/list answer the build accepts (one message, and every page together), and its tools: shared with remote listings. */
export { LISTED_TOOLS_MAX, LISTING_BYTES_MAX };
const LISTING_PAGES_MAX = 100;

export async function listTools(packageDir: string, options: ListingOptions = {}): Promise<ListedTools | ListingFailure> {
  const node = findNode24(options.node);
  if (!node.ok) return { ok: false, code: "entry_invalid", message: node.message };
  const sandbox = chooseSandbox(options.allowWeakSandbox ?? false);
  if (sandbox.mode === "unavailable") return { ok: false, code: "sandbox_unavailable", message: `the package's code is never run outside the sandbox, and ${sandbox.note}` };
  // The sandbox's user (nobody) reads the package through a bind of the folder itself.
  if ((statSync(packageDir).mode & 0o005) !== 0o005 && process.getuid?.() === 0) {
    return { ok: false, code: "entry_invalid", message: `${packageDir} is not readable by the sandbox's unprivileged user: chmod o+rX it (and its files)` };
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  const memoryMb = options.memoryMb ?? 256;
  // The runner's prebuilt host starts faster; sdk/src/host.ts serves the same when it cannot be built.
  const bundle = await ensureHostBundle(node.path);
  const host = bundle.ok ? bundle.bundle.launcher : HOST_MODULE;
  const manifestArg = bundle.ok && options.manifest ? [JSON.stringify({ type: options.manifest.type, entry: options.manifest.entry, secrets: options.manifest.secrets ?? [] })] : [];
  const cgroups = sandbox.mode === "isolated" && options.cgroups !== false && memoryLimitKind().kind === "cgroup";
  let child: PackageProcess | undefined;
  try {
    child = await PackageProcess.start({
      label: `listing ${packageDir}`,
      node: node.path,
      mode: sandbox.mode,
      script: [host, packageDir, ...manifestArg],
      ...(bundle.ok && { preload: bundle.bundle.preload }),
      readPaths: [packageDir, host, ...RUNTIME_READ_PATHS],
      egress: [],
      overrides: [],
      memoryMb,
      ...(cgroups && { processMemoryMb: memoryMb + 128, pidsMax: 128 }),
      startTimeoutMs: timeoutMs,
      messageBytesMax: LISTING_BYTES_MAX,
    });
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    let bytes = 0;
    for (let page = 0; ; page++) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s`);
      const answer = await child.client.listTools(cursor === undefined ? {} : { cursor }, { timeout: remaining });
      tools.push(...answer.tools);
      cursor = answer.nextCursor;
      bytes += Buffer.byteLength(JSON.stringify(answer.tools));
      if (bytes > LISTING_BYTES_MAX) return { ok: false, code: "entry_invalid", message: `the entry's tools/list is over ${LISTING_BYTES_MAX} bytes` };
      if (tools.length > LISTED_TOOLS_MAX) return { ok: false, code: "entry_invalid", message: `the entry lists over ${LISTED_TOOLS_MAX} tools` };
      if (cursor === undefined) break;
      if (page + 1 >= LISTING_PAGES_MAX) return { ok: false, code: "entry_invalid", message: `the entry's tools/list goes on past ${LISTING_PAGES_MAX} pages` };
    }
    const experimental = (child.client.getServerCapabilities()?.experimental ?? {}) as Record<string, unknown>;
    return { ok: true, tools, experimental };
  } catch (error) {
    const hostError = error instanceof ProcessStartError ? error.hostError : undefined;
    if (hostError) return { ok: false, code: hostError.code === "manifest_invalid" ? "manifest_invalid" : "entry_invalid", message: hostError.message };
    const ended = child?.exited ? ` (its process ${child.exitReason})` : "";
    const stderr = child ? tail(child.stderr) : "";
    return { ok: false, code: "entry_invalid", message: `the entry did not answer tools/list: ${describe(error)}${ended}${stderr}` };
  } finally {
    await child?.kill();
  }
}

function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/^MCP error -?\d+: /, "");
}

function tail(stderr: string): string {
  const text = stderr.trim();
  return text ? `\n${text.split("\n").slice(-8).join("\n")}` : "";
}
