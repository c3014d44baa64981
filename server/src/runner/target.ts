// The runner's seam to wherever tools run: a Target is a loaded package version or remote MCP server
// version, and its Session a connected MCP client with call routing. The runner's one call path works on
// these only; package processes (toolRunner.ts) and remote servers (remote/remoteTarget.ts) implement them.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { BuiltTool, PackageVersion } from "@caplo/shared";
import type { CallRoute } from "./routedClient.ts";

/** What a call needs from wherever the tools run: a connected MCP client and call routing. */
export type Session = {
  client: Client;
  routes: Map<string, CallRoute>;
  /** After a timeout: make sure the next call finds a responsive server (restart if stuck). */
  recover: () => Promise<void>;
  /** Why the process serving it ended, once it has (e.g. killed over its memory limit). */
  exitReason?: () => string | undefined;
};

/** A loaded thing that can be called: a package version or a reviewed remote MCP server version. */
export type Target = {
  id: string;
  tools: BuiltTool[];
  effectOutcomes: boolean;
  /** Secret names the target may receive. */
  secretNames: string[];
  /**
   * A connected session; `waitMs`: how long a package version may wait for a free process place;
   * `secrets`: the call's secret values (a remote version takes its authorization header from them);
   * `workspaceId`: the calling workspace (a package version keeps one process per workspace).
   */
  session: (waitMs?: number, secrets?: Record<string, string>, workspaceId?: string) => Promise<Session>;
  /** Checked once the session is open, before the tool is called: a refusal message, or undefined to call it. */
  beforeCall?: (session: Session, tool: string, timeoutMs: number) => Promise<string | undefined>;
  close: () => Promise<void>;
};

/**
 * Another kind of target, registered with the runner by the composition root (remote MCP server versions,
 * remote/remoteTarget.ts): which version ids it loads, and the target it makes of one, or why it cannot.
 */
export type TargetKind = {
  loads: (versionId: string) => boolean;
  load: (version: PackageVersion) => Promise<{ ok: true; target: Target } | { ok: false; error: { code: string; path: string; message: string } }>;
};
