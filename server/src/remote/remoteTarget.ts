// A published remote MCP server version as a runner target: calls go over its URL through the same
// validation, limits and outcome mapping as packages. On connect, and when the server says its tool
// list changed, the tools are listed again; a tool that changed or vanished is no longer exposed.
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { EFFECT_OUTCOME_CAPABILITY, type BuiltTool } from "@caplo/shared";
import type { CallRoute } from "../runner/packageProcess.ts";
import type { Session, Target } from "../runner/toolRunner.ts";
import { connectRemote, type RemoteEndpoint } from "./remoteConnection.ts";
import { driftOf, exposedTools, type Drift, type RemoteVersion } from "./remoteVersion.ts";
import type { ListedTool } from "./remoteReview.ts";

export type RemoteTargetOptions = {
  /** The authorization secret's value from the workspace's secret store, if the version names one. */
  authorization?: string;
  allowPrivateNetwork?: boolean;
  /** Told whenever the server's tools drift from the published version. */
  onDrift?: (drift: Drift) => void;
};

export async function listRemoteTools(client: Client): Promise<ListedTool[]> {
  const tools: ListedTool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    for (const tool of page.tools) {
      tools.push({ name: tool.name, ...(tool.description && { description: tool.description }), inputSchema: tool.inputSchema as Record<string, unknown>, ...(tool.outputSchema && { outputSchema: tool.outputSchema as Record<string, unknown> }) });
    }
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

export function remoteTarget(version: RemoteVersion, options: RemoteTargetOptions = {}): Target {
  let exposed: BuiltTool[] = [];
  let effectOutcomes = false;
  let session: Promise<Session> | undefined;
  const endpoint: RemoteEndpoint = { url: version.url, ...(options.authorization && { authorization: options.authorization }), ...(options.allowPrivateNetwork && { allowPrivateNetwork: true }) };

  const refresh = async (client: Client) => {
    const listed = await listRemoteTools(client);
    exposed = exposedTools(version, listed);
    const drift = driftOf(version, listed);
    if (drift.added.length || drift.changed.length || drift.removed.length) options.onDrift?.(drift);
  };

  const open = async (): Promise<Session> => {
    const connected = await connectRemote(endpoint);
    if (!connected.ok) throw new Error(`${connected.error.code}: ${connected.error.message}`);
    const client = connected.client;
    const routes = new Map<string, CallRoute>();
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void refresh(client).catch(() => undefined));
    client.onclose = () => {
      session = undefined;
    };
    // Outcome metadata is trusted only from a server that advertises the capability, as for packages.
    effectOutcomes = Object.keys(EFFECT_OUTCOME_CAPABILITY).some((key) => key in (client.getServerCapabilities()?.experimental ?? {}));
    await refresh(client);
    return { client, routes, recover: async () => undefined };
  };

  return {
    id: version.id,
    get tools() {
      return exposed;
    },
    get effectOutcomes() {
      return effectOutcomes;
    },
    secretNames: [],
    session: () => {
      session ??= open().catch((error: unknown) => {
        session = undefined;
        throw error;
      });
      return session;
    },
    close: async () => {
      const current = await session?.catch(() => undefined);
      session = undefined;
      await current?.client.close().catch(() => undefined);
    },
  };
}
