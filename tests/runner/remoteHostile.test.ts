// A hostile remote MCP server (the official SDK's server on loopback) against the runner's remote target:
// what reaches Caplo's server thread and the remote server when the remote misbehaves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { connectRemote, listRemoteTools, newReview, publishRemote, remoteTarget } from "../../server/src/remote/index.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { listenOnLoopback, sseHandler, type LoopbackServer } from "./support/mcpServer.ts";

const local = { allowPrivateNetwork: true } as const;
/** tools/list requests the server received. */
let listed = 0;
const FLOOD = 300;

function buildServer(): McpServer {
  const server = new McpServer({ name: "flood", version: "1.0.0" });
  server.registerTool("flood", { description: "Says the list changed, many times", inputSchema: { n: z.number() } }, async () => {
    for (let index = 0; index < FLOOD; index++) server.sendToolListChanged();
    return { content: [{ type: "text", text: "flooded" }] };
  });
  // Count the tools/list requests this server answers (the SDK keeps its handlers by method).
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, (...args: unknown[]) => unknown> })._requestHandlers;
  const list = handlers.get("tools/list")!;
  handlers.set("tools/list", (...args) => {
    listed += 1;
    return list(...args);
  });
  return server;
}

let mcp: LoopbackServer;
beforeAll(async () => {
  mcp = await listenOnLoopback(sseHandler(buildServer), "/sse");
});
afterAll(async () => {
  await mcp?.close();
});

describe("a server flooding tools/list_changed", () => {
  it("is listed again once at a time, not once per notification", async () => {
    const connected = await connectRemote({ url: mcp.url, ...local });
    if (!connected.ok) throw new Error(connected.error.message);
    const tools = await listRemoteTools(connected.client);
    await connected.client.close();
    const review = newReview("flood", mcp.url, tools, undefined, "sse");
    review.tools = review.tools.map((tool) => ({ ...tool, effect: "read" as const }));
    const published = publishRemote(review, tools);
    if (!published.ok) throw new Error("publish failed");

    const runner = new CaploToolRunner({});
    await runner.addTarget(remoteTarget(published.version, local));
    listed = 0;
    const result = await runner.call({ packageVersionId: published.version.id, tool: "flood", args: { n: 1 }, context: { invocationId: "f1", secrets: {} } });
    expect(result.modelText).toBe("flooded");
    // The notifications arrive and their listings finish (a call's own listing proves the session answers).
    await runner.call({ packageVersionId: published.version.id, tool: "flood", args: { n: 2 }, context: { invocationId: "f2", secrets: {} } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Two calls, each listing before it is sent; each flood asks for a listing while one runs, and one more.
    expect(listed).toBeLessThan(20);
    await runner.close();
  });
});
