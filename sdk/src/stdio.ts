// serveStdio: runs a package's MCP server over standard input and output, so it works in MCP Inspector,
// Claude Desktop or any local MCP client. Secret values come from same-named environment variables:
// local development only; on Caplo, secrets travel per call and never through the environment.
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { setDeclaredSecrets, setLocalSecrets } from "./runtime.ts";

/** Anything with connect(transport): the SDK's Server or McpServer. */
export type Connectable = { connect(transport: Transport): Promise<void> };
export type ServeStdioOptions = { secrets?: readonly string[] };

export async function serveStdio(createServer: () => Connectable | Promise<Connectable>, options: ServeStdioOptions = {}): Promise<Connectable> {
  const names = options.secrets ?? [];
  const values = new Map<string, string>();
  for (const name of names) {
    const value = process.env[name];
    if (value !== undefined) values.set(name, value);
  }
  setDeclaredSecrets(names);
  setLocalSecrets(values);
  keepStdoutForFrames();
  const server = await createServer();
  await server.connect(new StdioServerTransport());
  return server;
}

/** stdout carries MCP frames only: console output from the package goes to stderr instead. */
export function keepStdoutForFrames(): void {
  const toStderr = (...args: unknown[]) => console.error(...args);
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  console.trace = toStderr;
  console.dir = toStderr;
  console.table = toStderr;
}
