// Lists a remote MCP server's tools once: connect (the URL checked first), list every page, note what the
// server advertises, close. `caplo remote` and the team console's remote review both list through here.
import { EFFECT_OUTCOME_CAPABILITY, OPERATION_STATUS_CAPABILITY } from "@caplo/shared";
import { connectRemote, type RemoteEndpoint, type RemoteProblem, type RemoteTransport } from "./remoteConnection.ts";
import { REVIEW_TOOLS_MAX, type ListedTool } from "./remoteReview.ts";
import { advertises, listRemoteTools } from "./remoteTarget.ts";
import type { RemoteServerFacts } from "./remoteVersion.ts";

/** Each tools/list page must answer within this long (the connection has its own 15 s). */
const LIST_TIMEOUT_MS = 15_000;

export type RemoteListing = { tools: ListedTool[]; transport: RemoteTransport; facts: RemoteServerFacts };

/** The server's tools as listed now, over the endpoint's transport (else Streamable HTTP, then SSE), or why not. */
export async function listRemote(endpoint: RemoteEndpoint): Promise<{ ok: true; listing: RemoteListing } | { ok: false; error: RemoteProblem }> {
  const connected = await connectRemote(endpoint);
  if (!connected.ok) return connected;
  try {
    const tools = await listRemoteTools(connected.client, { timeout: LIST_TIMEOUT_MS });
    if (tools.length > REVIEW_TOOLS_MAX) {
      return { ok: false, error: { code: "remote_too_many_tools", path: "/url", message: `${endpoint.url} lists ${tools.length} tools; a review holds at most ${REVIEW_TOOLS_MAX}` } };
    }
    const facts = { effectOutcomes: advertises(connected.client, EFFECT_OUTCOME_CAPABILITY), operationStatus: advertises(connected.client, OPERATION_STATUS_CAPABILITY) };
    return { ok: true, listing: { tools, transport: connected.transport, facts } };
  } catch (error) {
    return { ok: false, error: { code: "remote_list_failed", path: "/url", message: `${endpoint.url} did not list its tools: ${(error as Error).message}` } };
  } finally {
    await connected.client.close().catch(() => undefined);
  }
}
