// Connects a demo package's MCP server to the MCP SDK's own Client over the in-memory transport, and
// calls it the way the runner does: the call context in `_meta[CALL_META_KEY]` of each request.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CallToolResultSchema, ElicitRequestSchema, type CallToolResult, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { CALL_META_KEY, STATUS_METHOD, type CallMeta } from "@caplo/shared";

export const DEMO_DIR = join(import.meta.dirname, "..", "..", "examples", "demo");
export const PACKAGES = readdirSync(DEMO_DIR, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

export function manifestText(name: string): string {
  return readFileSync(join(DEMO_DIR, name, "caplo.yaml"), "utf8");
}

type Connectable = { connect(transport: InMemoryTransport): Promise<void>; close(): Promise<void> };

/** The package's server: createServer() of an MCP package, or the function tool's one-tool server. */
export async function packageServer(name: string): Promise<Connectable> {
  const yaml = manifestText(name);
  const entry = /^entry:\s*(\S+)/m.exec(yaml)![1]!;
  const module = (await import(join(DEMO_DIR, name, entry))) as { createServer?: () => Connectable; default?: { createServer(): Connectable } };
  if (module.createServer) return module.createServer();
  return module.default!.createServer();
}

export type Session = {
  client: Client;
  call(tool: string, args: Record<string, unknown>, meta?: Partial<CallMeta>): Promise<CallToolResult>;
  status(tool: string, operationRef: string | undefined, meta?: Partial<CallMeta>): Promise<CallToolResult>;
  close(): Promise<void>;
};

/**
 * Opens a session with a package. `answer` makes the client able to elicit and decides its replies;
 * without it the client has no elicitation capability, as on a channel where nobody can answer.
 */
export async function openSession(name: string, shopUrl: string, answer?: (message: string, schema: unknown) => ElicitResult): Promise<Session> {
  const server = await packageServer(name);
  const client = new Client({ name: "caplo-test", version: "1.0.0" }, { capabilities: answer ? { elicitation: { form: {} } } : {} });
  if (answer) client.setRequestHandler(ElicitRequestSchema, (request) => answer(request.params.message, (request.params as { requestedSchema?: unknown }).requestedSchema));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  await client.connect(clientSide);
  let count = 0;
  const meta = (extra: Partial<CallMeta> = {}): Record<string, unknown> => ({
    [CALL_META_KEY]: {
      invocationId: `inv-${++count}`,
      deadline: new Date(Date.now() + 10_000).toISOString(),
      canElicit: answer !== undefined,
      ...extra,
      secrets: { SHOP_API_KEY: "demo-shop-key", SHOP_API_URL: shopUrl, ...extra.secrets },
    } satisfies CallMeta,
  });
  return {
    client,
    call: async (tool, args, extra) => (await client.callTool({ name: tool, arguments: args, _meta: meta(extra) })) as CallToolResult,
    status: (tool, operationRef, extra) =>
      client.request({ method: STATUS_METHOD, params: { name: tool, ...(operationRef ? { operationRef } : {}), _meta: meta(extra) } } as never, CallToolResultSchema),
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}
