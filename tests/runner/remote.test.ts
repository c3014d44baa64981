// Remote MCP servers end to end against real MCP SDK servers on loopback (Streamable HTTP and, for
// older servers, SSE): authorization from a secret, review, publish as an immutable version, calls
// through the runner, drift reported and changed tools not exposed, annotations ignored.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { connectRemote, driftOf, listRemoteTools, mergeReview, newReview, parseReview, formatReview, publishRemote, remoteTarget } from "../../server/src/remote/index.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { run as remoteCli } from "../../server/src/cli/remote.ts";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { vi } from "vitest";
import { listenOnLoopback, serveStreamable, sseHandler, type LoopbackServer } from "./support/mcpServer.ts";

const TOKEN = "remote-token-9f8e7d";
/** What the fake CRM offers; tests change it to simulate the server changing after review. */
const config = { renamedArg: false, extraTool: false };

function buildServer(): McpServer {
  const server = new McpServer({ name: "crm", version: "1.0.0" });
  server.registerTool(
    "find_customer",
    { description: "Find a customer by email", inputSchema: config.renamedArg ? { mail: z.string() } : { email: z.string().email() }, annotations: { readOnlyHint: true } },
    async (args: Record<string, unknown>) => ({ content: [{ type: "text" as const, text: `found ${JSON.stringify(args)}` }], structuredContent: { id: "cu_1", ...args } }),
  );
  // Annotated read-only by the server, but the owner reviews it as a write: the review wins.
  server.registerTool("delete_customer", { description: "Delete a customer", inputSchema: { id: z.string() }, annotations: { readOnlyHint: true } }, async ({ id }) =>
    id === "cu_fail" ? { isError: true, content: [{ type: "text", text: "failed" }] } : { content: [{ type: "text", text: `deleted ${id}` }] },
  );
  if (config.extraTool) server.registerTool("export_all", { description: "Export everything", inputSchema: {} }, async () => ({ content: [{ type: "text", text: "all" }] }));
  return server;
}

function authorized(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.headers.authorization === `Bearer ${TOKEN}`) return true;
  res.writeHead(401).end("unauthorized");
  return false;
}

let streamableMcp: LoopbackServer;
let sseMcp: LoopbackServer;

/** Stateless Streamable HTTP: a fresh server per request, built from the current config. */
async function streamableHandler(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (authorized(req, res)) await serveStreamable(buildServer(), req, res);
}

beforeAll(async () => {
  streamableMcp = await listenOnLoopback(streamableHandler);
  // An older server: SSE only (Streamable HTTP POSTs to /sse get 405, so the client falls back).
  const sse = sseHandler(buildServer);
  sseMcp = await listenOnLoopback(async (req, res) => {
    if (authorized(req, res)) await sse(req, res);
  }, "/sse");
});

afterAll(async () => {
  await streamableMcp?.close();
  await sseMcp?.close();
});

const local = { allowPrivateNetwork: true } as const;

async function list(url: string) {
  const connected = await connectRemote({ url, authorization: TOKEN, ...local });
  if (!connected.ok) throw new Error(connected.error.message);
  const tools = await listRemoteTools(connected.client);
  await connected.client.close();
  return { tools, transport: connected.transport };
}

function reviewed(tools: Awaited<ReturnType<typeof list>>["tools"]) {
  const review = newReview("crm", streamableMcp.url, tools, "CRM_TOKEN");
  review.tools = review.tools.map((tool) =>
    tool.name === "find_customer" ? { ...tool, effect: "read" as const, timeoutSeconds: 5 } : tool.name === "delete_customer" ? { ...tool, effect: "write" as const, timeoutSeconds: 5 } : tool,
  );
  return review;
}

describe("connecting", () => {
  it("connects over Streamable HTTP with the authorization secret as a Bearer header", async () => {
    const { tools, transport } = await list(streamableMcp.url);
    expect(transport).toBe("streamable-http");
    expect(tools.map((tool) => tool.name)).toEqual(["find_customer", "delete_customer"]);
  });
  it("falls back to SSE for older servers", async () => {
    const { tools, transport } = await list(sseMcp.url);
    expect(transport).toBe("sse");
    expect(tools.map((tool) => tool.name)).toEqual(["find_customer", "delete_customer"]);
  });
  it("reports a refused authorization by code", async () => {
    const connected = await connectRemote({ url: streamableMcp.url, authorization: "wrong", ...local });
    expect(connected).toMatchObject({ ok: false, error: { code: "remote_unauthorized" } });
  });
  it("never follows a redirect to another origin (the reviewed URL is the server), and says so by code", async () => {
    let followed = 0;
    const target = createServer((_req, res) => {
      followed += 1;
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    const redirector = createServer((_req, res) => res.writeHead(307, { location: `http://127.0.0.1:${(target.address() as { port: number }).port}/mcp` }).end());
    await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", resolve));
    try {
      const connected = await connectRemote({ url: `http://127.0.0.1:${(redirector.address() as { port: number }).port}/mcp`, authorization: TOKEN, ...local });
      expect(connected).toMatchObject({ ok: false, error: { code: "remote_redirect" } });
      expect(followed).toBe(0);
    } finally {
      await new Promise((resolve) => target.close(resolve));
      await new Promise((resolve) => redirector.close(resolve));
    }
  });
  it("refuses http and loopback URLs unless the operator allows private networks", async () => {
    expect(await connectRemote({ url: streamableMcp.url, authorization: TOKEN })).toMatchObject({ ok: false, error: { code: "remote_url_insecure" } });
    expect(await connectRemote({ url: "https://127.0.0.1/mcp" })).toMatchObject({ ok: false, error: { code: "remote_url_ip_literal" } });
    expect(await connectRemote({ url: "https://localhost/mcp" })).toMatchObject({ ok: false, error: { code: "remote_url_private" } });
  });
});

describe("the address connected to is the address checked (DNS rebinding)", () => {
  /** A resolver that answers a public address the first time and `then` every time after, counting calls. */
  function rebinding(then: string) {
    const asked: string[] = [];
    const resolve = async (host: string) => {
      asked.push(host);
      return asked.length === 1 ? ["93.184.216.34"] : [then];
    };
    return { asked, resolve };
  }
  /** A real MCP server on loopback that counts every TCP connection made to it. */
  async function countingServer(handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>) {
    const server = await listenOnLoopback(handler);
    let connections = 0;
    server.http.on("connection", () => void (connections += 1));
    return { ...server, connections: () => connections };
  }

  it("refuses a name that passes the check and then resolves to 127.0.0.1 when connecting: nothing reaches the server", async () => {
    const server = await countingServer(streamableHandler);
    try {
      for (const transport of [undefined, "streamable-http", "sse"] as const) {
        const dns = rebinding("127.0.0.1");
        const connected = await connectRemote({ url: `https://rebind.test:${server.port}/mcp`, authorization: TOKEN, resolve: dns.resolve, ...(transport && { transport }) });
        expect(connected).toMatchObject({ ok: false, error: { code: "remote_address_private", path: "/url", message: expect.stringContaining("rebind.test resolved to 127.0.0.1 when connecting") } });
        // Resolved by the check (public) and again by the connection (refused); not retried over SSE.
        expect(dns.asked).toEqual(["rebind.test", "rebind.test"]);
      }
      for (const address of ["10.1.2.3", "169.254.169.254", "::1", "::ffff:127.0.0.1"]) {
        const dns = rebinding(address);
        expect(await connectRemote({ url: `https://rebind.test:${server.port}/mcp`, resolve: dns.resolve })).toMatchObject({ ok: false, error: { code: "remote_address_private" } });
      }
      expect(server.connections()).toBe(0);
    } finally {
      await server.close();
    }
  });

  it("connects to the addresses its own resolver answered (the positive case: a name only that resolver knows)", async () => {
    const server = await countingServer(streamableHandler);
    try {
      const asked: string[] = [];
      const resolve = async (host: string) => (asked.push(host), host === "mcp.test" ? ["127.0.0.1"] : []);
      const connected = await connectRemote({ url: `http://mcp.test:${server.port}/mcp`, authorization: TOKEN, resolve, ...local });
      if (!connected.ok) throw new Error(connected.error.message);
      expect((await listRemoteTools(connected.client)).map((tool) => tool.name)).toEqual(["find_customer", "delete_customer"]);
      await connected.client.close();
      expect(server.connections()).toBeGreaterThan(0);
      expect(asked.length).toBeGreaterThan(1);
      expect(new Set(asked)).toEqual(new Set(["mcp.test"]));
      // Over SSE too: the event stream's GET and the message POSTs.
      const sse = await connectRemote({ url: `http://mcp.test:${sseMcp.port}/sse`, authorization: TOKEN, resolve, ...local });
      if (!sse.ok) throw new Error(sse.error.message);
      expect(sse.transport).toBe("sse");
      expect((await listRemoteTools(sse.client)).map((tool) => tool.name)).toEqual(["find_customer", "delete_customer"]);
      await sse.client.close();
    } finally {
      await server.close();
    }
  });

  it("a published version's runner target is refused the same way, by code", async () => {
    const server = await countingServer(streamableHandler);
    try {
      const { tools } = await list(streamableMcp.url);
      const review = reviewed(tools);
      review.url = `https://rebind.test:${server.port}/mcp`;
      const published = publishRemote(review, tools);
      if (!published.ok) throw new Error("publish failed");
      const dns = rebinding("169.254.169.254");
      const runner = new CaploToolRunner({});
      // Adding the target opens its session (the runner lists its tools): refused before anything is sent.
      await expect(runner.addTarget(remoteTarget(published.version, { authorization: TOKEN, resolve: dns.resolve }))).rejects.toThrow(/^remote_address_private: rebind\.test resolved to 169\.254\.169\.254 when connecting/);
      expect(dns.asked).toEqual(["rebind.test", "rebind.test"]);
      await runner.close();
      expect(server.connections()).toBe(0);
    } finally {
      await server.close();
    }
  });
});

describe("review and publish", () => {
  it("lists every tool unreviewed, and the review file round-trips", async () => {
    const { tools } = await list(streamableMcp.url);
    const review = newReview("crm", streamableMcp.url, tools, "CRM_TOKEN");
    expect(review.tools.map((tool) => [tool.name, tool.effect])).toEqual([["find_customer", "unreviewed"], ["delete_customer", "unreviewed"]]);
    const parsed = parseReview(formatReview(review));
    expect(parsed).toEqual({ ok: true, review });
    expect(parseReview(formatReview(review).replace("effect: unreviewed", "effect: maybe"))).toMatchObject({ ok: false, errors: [{ code: "review_invalid", path: "/tools/0/effect" }] });
  });

  it("publishes only reviewed tools, as a version named by the content hash", async () => {
    const { tools } = await list(streamableMcp.url);
    const review = reviewed(tools);
    review.tools[1] = { ...review.tools[1]!, effect: "unreviewed" };
    const once = publishRemote(review, tools);
    const twice = publishRemote(review, tools, new Date(1));
    if (!once.ok || !twice.ok) throw new Error("publish failed");
    expect(once.version.tools.map((tool) => tool.name)).toEqual(["find_customer"]);
    expect(once.skipped).toEqual(["delete_customer"]);
    expect(once.version.id).toMatch(/^remote:crm@sha256:[0-9a-f]{64}$/);
    expect(twice.version.id).toBe(once.version.id);
    const all = publishRemote(reviewed(tools), tools);
    expect(all.ok && all.version.id).not.toBe(once.version.id);
  });

  it("a change on the server is reported, refused at publish and not exposed until reviewed again", async () => {
    const before = (await list(streamableMcp.url)).tools;
    const published = publishRemote(reviewed(before), before);
    if (!published.ok) throw new Error("publish failed");
    config.renamedArg = true;
    config.extraTool = true;
    try {
      const after = (await list(streamableMcp.url)).tools;
      expect(driftOf(published.version, after)).toEqual({ added: ["export_all"], removed: [], changed: ["find_customer"] });
      expect(publishRemote(reviewed(before), after)).toMatchObject({ ok: false, errors: [{ code: "remote_tool_changed", path: "/tools/0/schemaHash" }] });
      const merged = mergeReview(reviewed(before), after);
      expect(merged.changes).toEqual({ added: ["export_all"], removed: [], changed: ["find_customer"] });
      expect(merged.review.tools.map((tool) => [tool.name, tool.effect])).toEqual([["find_customer", "unreviewed"], ["delete_customer", "write"], ["export_all", "unreviewed"]]);

      const runner = new CaploToolRunner({});
      const drifts: unknown[] = [];
      await runner.addTarget(remoteTarget(published.version, { authorization: TOKEN, ...local, onDrift: (drift) => drifts.push(drift) }));
      // The server's new arguments are not the reviewed ones: refused by the reviewed schema.
      const unreviewedArgs = await runner.call({ packageVersionId: published.version.id, tool: "find_customer", args: { mail: "a@b.co" }, context: { invocationId: "r0", secrets: {} } });
      expect(unreviewedArgs.modelText).toContain("/email");
      // Reviewed arguments: the tool changed on the server, so it is refused before anything is sent.
      const changed = await runner.call({ packageVersionId: published.version.id, tool: "find_customer", args: { email: "a@b.co" }, context: { invocationId: "r1", secrets: {} } });
      expect(changed.isError).toBe(true);
      expect(changed.modelText).toContain("remote_tool_changed: the server changed find_customer");
      expect(changed.logs).toEqual([expect.objectContaining({ level: "warn", message: expect.stringContaining("remote_tool_changed") })]);
      const added = await runner.call({ packageVersionId: published.version.id, tool: "export_all", args: {}, context: { invocationId: "r2", secrets: {} } });
      expect(added.isError).toBe(true);
      expect(drifts).toHaveLength(1);
      await runner.close();
    } finally {
      config.renamedArg = false;
      config.extraTool = false;
    }
  });
});

describe("calls through the runner", () => {
  it("validates arguments, returns results, and maps write outcomes by the review, not the annotations", async () => {
    const { tools } = await list(streamableMcp.url);
    const published = publishRemote(reviewed(tools), tools);
    if (!published.ok) throw new Error("publish failed");
    const runner = new CaploToolRunner({});
    await runner.addTarget(remoteTarget(published.version, { authorization: TOKEN, ...local }));
    const call = (tool: string, args: unknown) => runner.call({ packageVersionId: published.version.id, tool, args, context: { invocationId: `c-${tool}-${JSON.stringify(args)}`, secrets: { SHOP: "never-sent-to-remote" }, idempotencyKey: "k1" } });
    const bad = await call("find_customer", { email: "not-an-email" });
    expect(bad.modelText).toContain("/email");
    const found = await call("find_customer", { email: "a@b.co" });
    expect(found.structuredContent).toEqual({ id: "cu_1", email: "a@b.co" });
    expect(found.outcome).toBeUndefined();
    expect((await call("delete_customer", { id: "cu_1" })).outcome).toMatchObject({ outcome: "applied" });
    expect((await call("delete_customer", { id: "cu_fail" })).outcome).toMatchObject({ outcome: "unknown" });
    await runner.close();
  });
});

describe("caplo remote", () => {
  it("lists into a review file, publishes the reviewed tools, and checks drift", async () => {
    const dir = mkdtempSync(join(tmpdir(), "caplo-remote-"));
    const lines: string[] = [];
    const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
    const error = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
    process.env.CRM_TOKEN = TOKEN;
    try {
      const file = join(dir, "crm.review.yaml");
      const out = join(dir, "versions");
      const flags = ["--allow-private-network"];
      expect(await remoteCli(["list", streamableMcp.url, "--name", "crm", "--auth-secret", "CRM_TOKEN", "--out", file, ...flags])).toBe(0);
      expect(readFileSync(file, "utf8")).toContain("effect: unreviewed");
      expect(readFileSync(file, "utf8")).toContain("transport: streamable-http");
      const sseFile = join(dir, "oldcrm.review.yaml");
      expect(await remoteCli(["list", sseMcp.url, "--name", "oldcrm", "--auth-secret", "CRM_TOKEN", "--out", sseFile, ...flags])).toBe(0);
      expect(readFileSync(sseFile, "utf8")).toContain("transport: sse");
      expect(await remoteCli(["publish", file, "--out", out, ...flags])).toBe(1);
      expect(lines.join("\n")).toContain("remote_nothing_reviewed");
      writeFileSync(file, readFileSync(file, "utf8").replace("effect: unreviewed", "effect: read"));
      expect(await remoteCli(["publish", file, "--out", out, ...flags])).toBe(0);
      const [versionFile] = readdirSync(out);
      const version = JSON.parse(readFileSync(join(out, versionFile!), "utf8"));
      expect(version.tools.map((tool: { name: string }) => tool.name)).toEqual(["find_customer"]);
      // What the server advertised when published (this one: neither capability), and the reviewed transport.
      expect(version).toMatchObject({ transport: "streamable-http", effectOutcomes: false, operationStatus: false });
      expect(lines.join("\n")).toContain("not published (unreviewed): delete_customer");
      expect(await remoteCli(["check", join(out, versionFile!), ...flags])).toBe(0);
      config.extraTool = true;
      expect(await remoteCli(["check", join(out, versionFile!), ...flags])).toBe(1);
      expect(lines.join("\n")).toContain("+ export_all: new on the server, not exposed until reviewed");
      expect(await remoteCli(["review", file, ...flags])).toBe(0);
      expect(readFileSync(file, "utf8")).toContain("name: export_all");
      delete process.env.CRM_TOKEN;
      expect(await remoteCli(["publish", file, "--out", out, ...flags])).toBe(2);
      expect(lines.join("\n")).toContain("secret_missing: CRM_TOKEN");
    } finally {
      config.extraTool = false;
      delete process.env.CRM_TOKEN;
      log.mockRestore();
      error.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
