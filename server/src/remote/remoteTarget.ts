// A published remote MCP server version as a runner target: calls go over its URL (the transport it was
// reviewed over) through the same validation, limits and outcome mapping as packages, with the
// authorization header from the call's secrets. Before each call the tools are listed again; a tool
// that changed or vanished since review is refused.
import { createHash } from "node:crypto";
import { ListToolsResultSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { EFFECT_OUTCOME_CAPABILITY, LISTED_TOOLS_MAX, LISTING_BYTES_MAX } from "@caplo/shared";
import type { CallRoute } from "../runner/routedClient.ts";
import type { Session, Target, TargetKind } from "../runner/target.ts";
import { isRemoteVersionId, loadPinnedRemote } from "./remotePin.ts";
import { connectRemote, type RemoteEndpoint } from "./remoteConnection.ts";
import type { RemoteResolve } from "./remoteFetch.ts";
import { driftOf, type Drift, type RemoteVersion } from "./remoteVersion.ts";
import type { ListedTool } from "./remoteReview.ts";

export type RemoteTargetOptions = {
  /**
   * A fixed authorization value (the CLI and tests). Without it the value is taken per call from the
   * call's secrets under the version's authorizationSecret name (the workspace's secret store).
   */
  authorization?: string;
  allowPrivateNetwork?: boolean;
  /** The resolver for the URL check and every connection (default: the system's); tests of the address rule replace it. */
  resolve?: RemoteResolve;
  /** Told whenever the server's tools drift from the published version (once per different drift). */
  onDrift?: (drift: Drift) => void;
};

/** A listing's bytes (its tools as JSON) and tools at most, as for a package's (shared limits). */
export { LISTED_TOOLS_MAX, LISTING_BYTES_MAX };

/** Pages of tools/list followed at most: a server that keeps sending a next cursor is not listed forever. */
export const REMOTE_LIST_PAGES_MAX = 50;

export async function listRemoteTools(client: Client, options?: RequestOptions): Promise<ListedTool[]> {
  const tools: ListedTool[] = [];
  let cursor: string | undefined;
  let pages = 0;
  let bytes = 0;
  do {
    if (++pages > REMOTE_LIST_PAGES_MAX) throw new Error(`the server kept sending more pages of tools after ${REMOTE_LIST_PAGES_MAX}`);
    // A plain request, not client.listTools: that compiles every listed outputSchema with the SDK's own
    // ajv on the server's thread and keeps each compiled validator for good (its cache is keyed by the
    // schema object, new on every listing), and the runner checks results against the reviewed schemas
    // itself. A listing before every call made 64 tools with middling outputSchemas cost seconds of the
    // server's thread and megabytes that were never freed, per call.
    const page = await client.request({ method: "tools/list", params: cursor ? { cursor } : {} }, ListToolsResultSchema, options);
    for (const tool of page.tools) {
      // Names are a server's tools' identity (reviewed, published and called by name): one listed twice
      // would be published twice under one model name, or reviewed as one and called as the other.
      if (tools.some((listed) => listed.name === tool.name)) throw new Error(`the server lists a tool named ${JSON.stringify(tool.name.slice(0, 100))} twice`);
      tools.push({ name: tool.name, ...(tool.description && { description: tool.description }), inputSchema: tool.inputSchema as Record<string, unknown>, ...(tool.outputSchema && { outputSchema: tool.outputSchema as Record<string, unknown> }) });
    }
    // The bounds of a package's listing: a version over them could not be kept (its file is read up to
    // 4 MiB) nor sent to the model, and every call lists again.
    bytes += Buffer.byteLength(JSON.stringify(page.tools));
    if (bytes > LISTING_BYTES_MAX) throw new Error(`the server's tools/list is over ${LISTING_BYTES_MAX} bytes`);
    if (tools.length > LISTED_TOOLS_MAX) throw new Error(`the server lists over ${LISTED_TOOLS_MAX} tools`);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

/** Whether the connected server advertises an experimental capability object (EFFECT_OUTCOME_CAPABILITY...). */
export function advertises(client: Client, capability: Record<string, unknown>): boolean {
  return Object.keys(capability).some((key) => key in (client.getServerCapabilities()?.experimental ?? {}));
}

/** How long a listing after tools/list_changed may take (a page that never answers ends it). */
const RELIST_TIMEOUT_MS = 15_000;

/** Sessions kept per authorization value at most: a rotated secret opens a new one, the oldest is closed. */
const SESSIONS_MAX = 2;

/**
 * A published remote version as a runner target. Every call first lists the server's tools again: a
 * published tool whose description or schemas changed since review, or that the server no longer lists,
 * is refused before anything is sent (the model is told it changed and must be reviewed again).
 */
export function remoteTarget(version: RemoteVersion, options: RemoteTargetOptions = {}): Target {
  let liveEffectOutcomes = false;
  let reported = "";
  // One connection per authorization value, so each call is sent with the value its secrets hold.
  const sessions = new Map<string, Promise<Session>>();

  const noteDrift = (listed: ListedTool[]): Drift => {
    const drift = driftOf(version, listed);
    const key = JSON.stringify(drift);
    if (drift.added.length || drift.changed.length || drift.removed.length) {
      if (key !== reported) options.onDrift?.(drift);
    }
    reported = key;
    return drift;
  };

  const open = async (key: string, authorization: string | undefined): Promise<Session> => {
    const endpoint: RemoteEndpoint = {
      url: version.url,
      ...(authorization !== undefined && { authorization }),
      ...(options.allowPrivateNetwork && { allowPrivateNetwork: true }),
      ...(version.transport && { transport: version.transport }),
      ...(options.resolve && { resolve: options.resolve }),
    };
    const connected = await connectRemote(endpoint);
    if (!connected.ok) throw new Error(`${connected.error.code}: ${connected.error.message}`);
    const client = connected.client;
    // A changed list is listed again once, however many notifications arrive: one listing at a time, and
    // notifications that arrive during it ask for one more after it (a server sending thousands would
    // otherwise have each answered with a tools/list of every page, all at once).
    let relisting = false;
    let again = false;
    const relist = async () => {
      if (relisting) return void (again = true);
      relisting = true;
      try {
        do {
          again = false;
          await listRemoteTools(client, { timeout: RELIST_TIMEOUT_MS }).then(noteDrift, () => undefined);
        } while (again);
      } finally {
        relisting = false;
      }
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void relist());
    client.onclose = () => {
      sessions.delete(key);
    };
    // Outcome metadata is trusted only from a server that advertises the capability, as for packages,
    // and (for a version that recorded it) only if it did when the version was reviewed and published.
    liveEffectOutcomes = advertises(client, EFFECT_OUTCOME_CAPABILITY);
    return { client, routes: new Map<string, CallRoute>(), recover: async () => undefined };
  };

  return {
    id: version.id,
    tools: version.tools,
    get effectOutcomes() {
      return liveEffectOutcomes && version.effectOutcomes !== false;
    },
    // Secrets are never sent to a remote server in the call's context: only its authorization header.
    secretNames: [],
    session: (_waitMs, secrets) => {
      let authorization = options.authorization;
      if (authorization === undefined && version.authorizationSecret !== undefined) {
        authorization = secrets?.[version.authorizationSecret];
        if (authorization === undefined) {
          return Promise.reject(new Error(`secret_missing: the authorization secret ${version.authorizationSecret} has no value in the workspace's secret store`));
        }
      }
      const key = authorization === undefined ? "" : createHash("sha256").update(authorization).digest("hex");
      let session = sessions.get(key);
      if (!session) {
        session = open(key, authorization).catch((error: unknown) => {
          sessions.delete(key);
          throw error;
        });
        sessions.set(key, session);
        while (sessions.size > SESSIONS_MAX) {
          const [oldest, stale] = sessions.entries().next().value!;
          sessions.delete(oldest);
          void stale.then((old) => old.client.close(), () => undefined).catch(() => undefined);
        }
      }
      return session;
    },
    beforeCall: async (session, tool, timeoutMs) => {
      // The call's timeout bounds the whole listing, not each page of it: a server sending page after page
      // just inside the timeout held the call for up to 50 timeouts before it was even sent.
      const drift = noteDrift(await listRemoteTools(session.client, { timeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs) }));
      if (drift.changed.includes(tool)) {
        return `remote_tool_changed: the server changed ${tool} (its description or schemas) since it was reviewed, so it is not called until it is reviewed again and a new version is published.`;
      }
      if (drift.removed.includes(tool)) return `remote_tool_gone: the server no longer lists ${tool}.`;
      return undefined;
    },
    close: async () => {
      const current = [...sessions.values()];
      sessions.clear();
      await Promise.all(current.map((session) => session.then((open) => open.client.close(), () => undefined).catch(() => undefined)));
    },
  };
}

/**
 * Remote MCP server versions as a kind of runner target, registered by the composition root: a version id
 * `remote:…` loads its pinned, reviewed version file. `allowPrivateNetwork`: local development and tests
 * only (CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK=1): http, loopback and private addresses may be reached.
 */
export function remoteTargetKind(options: { allowPrivateNetwork?: boolean } = {}): TargetKind {
  return {
    loads: isRemoteVersionId,
    load: async (version) => {
      const pinned = await loadPinnedRemote(version);
      if (!pinned.ok) return pinned;
      return { ok: true, target: remoteTarget(pinned.version, { ...(options.allowPrivateNetwork && { allowPrivateNetwork: true }) }) };
    },
  };
}
