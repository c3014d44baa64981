// Lists the tools a package's code defines: starts the SDK host on Node 24 with the package, connects
// the MCP SDK's Client over stdio, reads tools/list and the server's capabilities, and stops it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { ensureHostBundle } from "../runner/hostBundle.ts";
import { HOST_MODULE, node24Path } from "./node24.ts";

export type ListedTools = {
  ok: true;
  tools: McpTool[];
  /** capabilities.experimental the server advertised. */
  experimental: Record<string, unknown>;
};
export type ListingFailure = { ok: false; code: "manifest_invalid" | "entry_invalid"; message: string };

const HOST_ERROR_PREFIX = "caplo-host-error ";

export async function listTools(packageDir: string, options: { timeoutMs?: number } = {}): Promise<ListedTools | ListingFailure> {
  const node = node24Path();
  if (!node) return { ok: false, code: "entry_invalid", message: "Node 24 is not installed (runtime/node24): run npm install, or set CAPLO_NODE24" };
  const timeoutMs = options.timeoutMs ?? 30_000;
  // The runner's prebuilt host starts faster; sdk/src/host.ts serves the same when it cannot be built.
  const bundle = await ensureHostBundle(node);
  const host = bundle.ok ? bundle.bundle.launcher : HOST_MODULE;
  const transport = new StdioClientTransport({
    command: node,
    args: ["--disable-warning=ExperimentalWarning", host, packageDir],
    cwd: packageDir,
    // The package gets no secrets or settings from our environment while it is listed.
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", NODE_ENV: "production" },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    if (stderr.length < 64 * 1024) stderr += chunk.toString("utf8");
  });
  const client = new Client({ name: "caplo-build", version: "0.1.6" });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the entry did not answer tools/list within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
  });
  try {
    const listing = (async () => {
      await client.connect(transport);
      const tools: McpTool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor !== undefined && tools.length <= 1000);
      const experimental = (client.getServerCapabilities()?.experimental ?? {}) as Record<string, unknown>;
      return { ok: true as const, tools, experimental };
    })();
    return await Promise.race([listing, timeout]);
  } catch (error) {
    // Let the host finish writing why it stopped.
    await new Promise((resolve) => setTimeout(resolve, 50));
    return hostFailure(stderr) ?? { ok: false, code: "entry_invalid", message: `the entry could not be served: ${describe(error)}${tail(stderr)}` };
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => undefined);
  }
}

function hostFailure(stderr: string): ListingFailure | undefined {
  const line = stderr.split("\n").find((candidate) => candidate.startsWith(HOST_ERROR_PREFIX));
  if (!line) return undefined;
  try {
    const parsed = JSON.parse(line.slice(HOST_ERROR_PREFIX.length)) as { code?: unknown; message?: unknown };
    const code = parsed.code === "manifest_invalid" ? "manifest_invalid" : "entry_invalid";
    return { ok: false, code, message: String(parsed.message) };
  } catch {
    return undefined;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function tail(stderr: string): string {
  const text = stderr.trim();
  return text ? `\n${text.split("\n").slice(-8).join("\n")}` : "";
}
