// Real MCP servers for the remote-MCP tests (runner and console): the official SDK's server on a loopback
// port, stateless over Streamable HTTP (a server per request, so each request meets what the test offers at
// that moment) or over SSE, as older servers are.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Server as ProtocolServer } from "@modelcontextprotocol/sdk/server/index.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** An HTTP server on a loopback port; `url` is its address and the path the test gave. */
export type LoopbackServer = { url: string; port: number; http: Server; close: () => Promise<void> };

/** Starts `handler` on a free loopback port; close ends the connections still open (an SSE stream) too. */
export async function listenOnLoopback(handler: Handler, path = "/mcp"): Promise<LoopbackServer> {
  const http = createServer(handler);
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    port,
    http,
    close: async () => {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

/** Answers one request with `server` over stateless Streamable HTTP; both close when the response does. */
export async function serveStreamable(server: McpServer | ProtocolServer, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => void transport.close().then(() => server.close()));
  await server.connect(transport);
  await transport.handleRequest(req, res);
}

/**
 * MCP over SSE: GET /sse opens a session with a server from `build`, POST /messages?sessionId= carries its
 * requests, anything else is 405 (so a Streamable HTTP client falls back to SSE).
 */
export function sseHandler(build: () => McpServer): Handler {
  const sessions = new Map<string, SSEServerTransport>();
  return async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res);
      sessions.set(transport.sessionId, transport);
      res.on("close", () => sessions.delete(transport.sessionId));
      await build().connect(transport);
      return;
    }
    if (req.method === "POST" && url.pathname === "/messages") {
      const transport = sessions.get(url.searchParams.get("sessionId") ?? "");
      if (!transport) return void res.writeHead(404).end();
      await transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(405).end();
  };
}
