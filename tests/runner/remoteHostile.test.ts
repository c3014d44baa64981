// A hostile remote MCP server (the official SDK's server on loopback) against the runner's remote target:
// what reaches Caplo's server thread and the remote server when the remote misbehaves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { checkReview, connectRemote, driftOf, listRemote, listRemoteTools, newReview, publishRemote, remoteTarget } from "../../server/src/remote/index.ts";
import { LISTED_TOOLS_MAX, LISTING_BYTES_MAX } from "../../server/src/remote/remoteTarget.ts";
import { REMOTE_LISTING_MESSAGE_BYTES_MAX } from "../../server/src/remote/remoteFetch.ts";
import { gzipSync } from "node:zlib";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { listenOnLoopback, serveStreamable, sseHandler, type LoopbackServer } from "./support/mcpServer.ts";

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

/**
 * A server whose reviewed outputSchema holds a pattern that backtracks (it reads as a host name rule),
 * and whose result is built to make it backtrack. The low-level SDK server: McpServer would check its
 * own result against the pattern first, in this process.
 */
const HOST_PATTERN = "^([a-z0-9]+-?)+$";
function backtrackingServer(): Server {
  const server = new Server({ name: "hosts", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: "lookup_host",
        description: "Look up a host",
        inputSchema: { type: "object", properties: { name: { type: "string", pattern: HOST_PATTERN } }, required: ["name"] },
        outputSchema: { type: "object", properties: { host: { type: "string", pattern: HOST_PATTERN } }, required: ["host"] },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const name = String(request.params.arguments?.name);
    // Thirty-two letters and a character the pattern refuses: billions of ways to split them, all tried.
    const host = name === "evil" ? `${"a".repeat(32)}!` : name;
    return { content: [{ type: "text", text: host }], structuredContent: { host } };
  });
  return server;
}

/**
 * Tools whose outputSchemas share an `$id` (a generator's fixed one) with different content: each is
 * checked against its own schema (the runner's ajv kept the first $id, and the second could never compile).
 */
function sharedIdServer(): Server {
  const server = new Server({ name: "ids", version: "1.0.0" }, { capabilities: { tools: {} } });
  const output = (field: string) => ({ $id: "https://example.test/result.json", type: "object", properties: { [field]: { type: "string" } }, required: [field] });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: "get_order", description: "An order", inputSchema: { type: "object" }, outputSchema: output("order") },
      { name: "get_invoice", description: "An invoice", inputSchema: { type: "object" }, outputSchema: output("invoice") },
      // Left unreviewed: its outputSchema's $ref leads nowhere. Listing does not compile schemas (the MCP
      // SDK's listTools did, with an ajv of the session's, on every listing: this one made each throw).
      { name: "get_note", description: "A note", inputSchema: { type: "object" }, outputSchema: { type: "object", properties: { note: { $ref: "#/$defs/missing" } } } },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const field = request.params.name === "get_order" ? "order" : "invoice";
    return { content: [{ type: "text", text: `${field} 1` }], structuredContent: { [field]: "1" } };
  });
  return server;
}

let mcp: LoopbackServer;
let hosts: LoopbackServer;
let ids: LoopbackServer;
beforeAll(async () => {
  mcp = await listenOnLoopback(sseHandler(buildServer), "/sse");
  hosts = await listenOnLoopback((req, res) => serveStreamable(backtrackingServer(), req, res));
  ids = await listenOnLoopback((req, res) => serveStreamable(sharedIdServer(), req, res));
});
afterAll(async () => {
  await mcp?.close();
  await hosts?.close();
  await ids?.close();
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

describe("a reviewed schema whose pattern backtracks", () => {
  it("does not hold the server's thread: the check is stopped, the result refused by code, and the next call is checked", async () => {
    const connected = await connectRemote({ url: hosts.url, ...local });
    if (!connected.ok) throw new Error(connected.error.message);
    const tools = await listRemoteTools(connected.client);
    await connected.client.close();
    const review = newReview("hosts", hosts.url, tools, undefined, "streamable-http");
    review.tools = review.tools.map((tool) => ({ ...tool, effect: "read" as const }));
    const published = publishRemote(review, tools);
    if (!published.ok) throw new Error("publish failed");
    const runner = new CaploToolRunner({});
    await runner.addTarget(remoteTarget(published.version, local));
    const call = (name: string, invocationId: string) => runner.call({ packageVersionId: published.version.id, tool: "lookup_host", args: { name }, context: { invocationId, secrets: {} } });

    // Without the worker this call held the thread for as long as the regex ran (seconds; minutes with a
    // few more letters), every customer waiting.
    const evil = await call("evil", "h1");
    expect(evil.isError).toBe(true);
    expect(evil.modelText).toContain("does not match its outputSchema: the value could not be checked");
    expect(evil.modelText).toContain("patterns took over");
    expect(evil.structuredContent).toBeUndefined();

    // The checker serves the next calls: a good host passes, a bad one is refused by the pattern.
    const good = await call("shop-1", "h2");
    expect(good).toMatchObject({ isError: false, structuredContent: { host: "shop-1" } });
    const bad = await call("-x", "h3");
    expect(bad.modelText).toContain("must match pattern");
    await runner.close();
  });
});

describe("outputSchemas the listing does not compile", () => {
  it("two tools whose outputSchemas share an $id, beside one whose schema cannot compile, are listed, reviewed and called, again and again", async () => {
    const connected = await connectRemote({ url: ids.url, ...local });
    if (!connected.ok) throw new Error(connected.error.message);
    const tools = await listRemoteTools(connected.client);
    await connected.client.close();
    expect(tools.map((tool) => tool.name)).toEqual(["get_order", "get_invoice", "get_note"]);
    const review = newReview("ids", ids.url, tools, undefined, "streamable-http");
    review.tools = review.tools.map((tool) => (tool.name === "get_note" ? tool : { ...tool, effect: "read" as const }));
    const published = publishRemote(review, tools);
    if (!published.ok) throw new Error("publish failed");
    const runner = new CaploToolRunner({});
    await runner.addTarget(remoteTarget(published.version, local));
    for (const [tool, index] of [["get_order", 1], ["get_invoice", 2], ["get_order", 3]] as const) {
      const result = await runner.call({ packageVersionId: published.version.id, tool, args: {}, context: { invocationId: `i${index}`, secrets: {} } });
      expect(result).toMatchObject({ isError: false, structuredContent: { [tool === "get_order" ? "order" : "invoice"]: "1" } });
    }
    await runner.close();
  });
});

describe("a listing over the bounds", () => {
  it("a tool description of 5 MiB is refused at listing, not reviewed into a version no one can load", async () => {
    const huge = await listenOnLoopback((req, res) => {
      const server = new Server({ name: "huge", version: "1.0.0" }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "get_manual", description: "x".repeat(5 * 1024 * 1024), inputSchema: { type: "object" } }] }));
      return serveStreamable(server, req, res);
    });
    try {
      const listing = await listRemote({ url: huge.url, ...local });
      expect(listing).toMatchObject({ ok: false, error: { code: "remote_list_failed", message: expect.stringContaining(`tools/list is over ${LISTING_BYTES_MAX} bytes`) } });
    } finally {
      await huge.close();
    }
  });
  it("a server paging out tools without end stops at the tool bound, before its 50th page", async () => {
    let pages = 0;
    const many = await listenOnLoopback((req, res) => {
      const server = new Server({ name: "many", version: "1.0.0" }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async (request) => {
        pages += 1;
        const from = Number(request.params?.cursor ?? 0);
        return { tools: Array.from({ length: 200 }, (_, index) => ({ name: `tool_${from + index}`, inputSchema: { type: "object" as const } })), nextCursor: String(from + 200) };
      });
      return serveStreamable(server, req, res);
    });
    try {
      const listing = await listRemote({ url: many.url, ...local });
      expect(listing).toMatchObject({ ok: false, error: { code: "remote_list_failed", message: expect.stringContaining(`over ${LISTED_TOOLS_MAX} tools`) } });
      expect(pages).toBe(Math.ceil((LISTED_TOOLS_MAX + 1) / 200));
    } finally {
      await many.close();
    }
  });
});

describe("an answer over the message bound", () => {
  it("a gzip answer to tools/list that inflates past the listing's bound (8 MiB) is stopped while read, not parsed", async () => {
    // 9 MiB of JSON whitespace after a valid answer (a page over the listing's bound, though far under the
    // 48 MiB any other message may be), sent as about 9 KiB of gzip.
    const padding = gzipSync(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}'), Buffer.alloc(9 * 1024 * 1024, " ")]), { level: 9 });
    let bombs = 0;
    const bomb = await listenOnLoopback(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const message = JSON.parse(Buffer.concat(chunks).toString() || "{}") as { id?: number; method?: string };
      if (message.method === "initialize") {
        return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "bomb", version: "1" } } }));
      }
      if (message.method === "tools/list" && message.id === 1) {
        bombs += 1;
        return void res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" }).end(padding);
      }
      res.writeHead(202).end();
    });
    try {
      const listing = await listRemote({ url: bomb.url, ...local });
      expect(bombs).toBe(1);
      expect(REMOTE_LISTING_MESSAGE_BYTES_MAX).toBe(8 * 1024 * 1024);
      expect(listing).toMatchObject({ ok: false, error: { code: "remote_list_failed", message: expect.stringContaining(`over ${REMOTE_LISTING_MESSAGE_BYTES_MAX} bytes`) } });
    } finally {
      await bomb.close();
    }
  });
});

describe("a tool listed twice", () => {
  it("is refused at listing, and a review naming a tool twice is refused, so no version holds two tools under one model name", async () => {
    const twice = await listenOnLoopback((req, res) => {
      const server = new Server({ name: "twice", version: "1.0.0" }, { capabilities: { tools: {} } });
      const tool = { name: "get_invoice", description: "An invoice", inputSchema: { type: "object" as const } };
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [tool, { ...tool }] }));
      return serveStreamable(server, req, res);
    });
    try {
      const listing = await listRemote({ url: twice.url, ...local });
      expect(listing).toMatchObject({ ok: false, error: { code: "remote_list_failed", message: expect.stringContaining('lists a tool named "get_invoice" twice') } });
    } finally {
      await twice.close();
    }
    const listed = [{ name: "get_invoice", description: "An invoice", inputSchema: { type: "object" } }];
    const review = newReview("twice", "https://twice.example/mcp", [...listed, ...listed]);
    review.tools = review.tools.map((tool) => ({ ...tool, effect: "read" as const }));
    expect(checkReview(JSON.parse(JSON.stringify(review)))).toMatchObject({ ok: false, errors: [{ code: "review_invalid", path: "/tools/1/name" }] });
  });
});

describe("tool names Caplo's model names cannot hold", () => {
  it("stay unreviewed and unpublished, without holding back the server's other tools", async () => {
    const listed = [
      { name: "getOrder", description: "camelCase, as many servers name tools", inputSchema: { type: "object" } },
      { name: "get-refund", description: "dashed", inputSchema: { type: "object" } },
      { name: "get_invoice", description: "An invoice", inputSchema: { type: "object" } },
    ];
    const review = newReview("shop", "https://shop.example/mcp", listed);
    review.tools = review.tools.map((tool) => (tool.name === "get_invoice" ? { ...tool, effect: "read" as const } : tool));
    // The review as listed, decided for the one tool that can be published, round-trips as the console sends it.
    const checked = checkReview(JSON.parse(JSON.stringify(review)));
    if (!checked.ok) throw new Error(JSON.stringify(checked.errors));
    const published = publishRemote(checked.review, listed);
    if (!published.ok) throw new Error(JSON.stringify(published.errors));
    expect(published.version.tools.map((tool) => tool.modelName)).toEqual(["shop__get_invoice"]);
    expect(published.version.unpublished).toEqual(["getOrder", "get-refund"]);
    expect(driftOf(published.version, listed)).toEqual({ added: [], removed: [], changed: [] });
    // Reviewed as a read, such a name is refused by code, at its place.
    const camel = { ...review, tools: review.tools.map((tool) => (tool.name === "getOrder" ? { ...tool, effect: "read" as const } : tool)) };
    expect(checkReview(JSON.parse(JSON.stringify(camel)))).toMatchObject({ ok: false, errors: [{ code: "tool_name_invalid", path: "/tools/0/name" }] });
  });
});

describe("a listing that pages slowly", () => {
  it("is bounded as a whole by the call's timeout, not page by page", async () => {
    let paging = false;
    let pages = 0;
    const slow = await listenOnLoopback((req, res) => {
      const server = new Server({ name: "slow", version: "1.0.0" }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async (request) => {
        const tools = [{ name: "get_order", description: "An order", inputSchema: { type: "object" as const } }];
        if (!paging) return { tools };
        pages += 1;
        // Each page well inside the call's one second, and always another one after it.
        await new Promise((resolve) => setTimeout(resolve, 300));
        return { tools: request.params?.cursor ? [] : tools, nextCursor: String(pages) };
      });
      server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: "text", text: "order 1" }] }));
      return serveStreamable(server, req, res);
    });
    try {
      const connected = await connectRemote({ url: slow.url, ...local });
      if (!connected.ok) throw new Error(connected.error.message);
      const tools = await listRemoteTools(connected.client);
      await connected.client.close();
      const review = newReview("slow", slow.url, tools, undefined, "streamable-http");
      review.tools = review.tools.map((tool) => ({ ...tool, effect: "read" as const, timeoutSeconds: 1 }));
      const published = publishRemote(review, tools);
      if (!published.ok) throw new Error("publish failed");
      const runner = new CaploToolRunner({});
      await runner.addTarget(remoteTarget(published.version, local));
      paging = true;
      const result = await runner.call({ packageVersionId: published.version.id, tool: "get_order", args: {}, context: { invocationId: "s1", secrets: {} } });
      expect(result.isError).toBe(true);
      expect(result.modelText).toContain("could not list its tools");
      // Without the bound it read all 50 pages (15 s) before refusing.
      expect(pages).toBeLessThan(10);
      await runner.close();
    } finally {
      await slow.close();
    }
  });
});
