// serveStdio: runs a package's MCP server over standard input and output, so it works in MCP Inspector,
// Claude Desktop or any local MCP client. Secret values come from same-named environment variables:
// local development only; on Caplo, secrets travel per call and never through the environment.
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Writable } from "node:stream";
import { setDeclaredSecrets, setLocalSecrets } from "./runtime.ts";
import { allowPendingResults } from "./pendingResult.ts";

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
  const frames = keepStdoutForFrames();
  // The same as on Caplo: a pending write result passes McpServer's output check (pendingResult.ts).
  allowPendingResults();
  const server = await createServer();
  await server.connect(new StdioServerTransport(process.stdin, frames));
  return server;
}

/**
 * stdout carries MCP frames only. Everything else the package writes there (console.log and friends,
 * process.stdout.write) goes to stderr; the returned stream is the one way left to write stdout, for
 * the transport.
 */
export function keepStdoutForFrames(): Writable {
  const stdout = process.stdout;
  const writeFrame = stdout.write.bind(stdout) as (chunk: string) => boolean;
  stdout.write = ((...args: Parameters<typeof process.stderr.write>) => process.stderr.write(...args)) as typeof stdout.write;
  const toStderr = (...args: unknown[]) => console.error(...args);
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  console.trace = toStderr;
  console.dir = toStderr;
  console.table = toStderr;
  // What StdioServerTransport uses of its output stream: write, and once("drain").
  const frames = {
    write: (chunk: string) => writeFrame(chunk),
    once: (event: string, listener: () => void) => {
      stdout.once(event, listener);
      return frames;
    },
  };
  return frames as unknown as Writable;
}
