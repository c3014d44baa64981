// `caplo serve` (unchanged) serving an agent whose tools come from a published remote MCP version: the
// release is published with the version file, serve's own runner loads it, the secret comes from
// CAPLO_SECRET_<NAME>, and a WebSocket customer's read runs at once while a write is proposed,
// confirmed and run once with its idempotency key (a real MCP SDK server on loopback checks the
// Authorization header on every request).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import WebSocket from "ws";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { CALL_META_KEY, EFFECT_META_KEY, EFFECT_OUTCOME_CAPABILITY, type CallMeta } from "@caplo/shared";
import { connectRemote, listRemoteTools, newReview, publishRemote } from "../../server/src/remote/index.ts";
import { runPublish } from "../../server/src/cli/agent.ts";
import { parseServeArgs, startServe } from "../../server/src/cli/serve.ts";
import { listenOnLoopback, serveStreamable, type LoopbackServer } from "./support/mcpServer.ts";

const TOKEN = "serve-remote-token-31";
const dir = mkdtempSync(join(tmpdir(), "caplo-remote-serve-"));
const calls: { tool: string; key: string | undefined; auth: string }[] = [];
const refused: string[] = [];
let mcp: LoopbackServer;

function crm(auth: string): McpServer {
  const server = new McpServer({ name: "crm", version: "1.0.0" }, { capabilities: { tools: {}, experimental: { ...EFFECT_OUTCOME_CAPABILITY } } });
  const key = (extra: { _meta?: Record<string, unknown> }) => (extra._meta?.[CALL_META_KEY] as CallMeta | undefined)?.idempotencyKey;
  server.registerTool("points", { description: "Loyalty points", inputSchema: { email: z.string() } }, async (args, extra) => {
    calls.push({ tool: "points", key: key(extra), auth });
    return { content: [{ type: "text", text: `${args.email} has 340 points` }] };
  });
  server.registerTool("redeem", { description: "Redeem points", inputSchema: { email: z.string(), points: z.number().int() } }, async (args, extra) => {
    calls.push({ tool: "redeem", key: key(extra), auth });
    return { content: [{ type: "text", text: `redeemed ${args.points}` }], _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "applied" } } };
  });
  return server;
}

beforeAll(async () => {
  mcp = await listenOnLoopback(async (req, res) => {
    const auth = req.headers.authorization ?? "";
    if (auth !== `Bearer ${TOKEN}`) {
      refused.push(auth);
      return void res.writeHead(401).end();
    }
    await serveStreamable(crm(auth), req, res);
  });
});

afterAll(async () => {
  await mcp?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("serve loads the remote version from the release and a conversation reads and writes through it", async () => {
  const connected = await connectRemote({ url: mcp.url, authorization: TOKEN, allowPrivateNetwork: true });
  if (!connected.ok) throw new Error(connected.error.message);
  const listed = await listRemoteTools(connected.client);
  await connected.client.close();
  const review = newReview("crm", mcp.url, listed, "CRM_TOKEN", connected.transport);
  review.tools = review.tools.map((tool) => (tool.name === "redeem" ? { ...tool, effect: "write" as const } : { ...tool, effect: "read" as const }));
  const published = publishRemote(review, listed, new Date(), { effectOutcomes: true, operationStatus: false });
  if (!published.ok) throw new Error(JSON.stringify(published.errors));
  const versionFile = join(dir, "crm.json");
  writeFileSync(versionFile, JSON.stringify(published.version));
  const agentFile = join(dir, "agent.yaml");
  writeFileSync(agentFile, "apiVersion: v1\nkind: Agent\nname: loyalty\ninstructions: Help.\ntools:\n  - crm/points\n  - crm/redeem\norigins:\n  - https://site.example\nchannels:\n  web: {}\n");
  const err: string[] = [];
  expect(await runPublish([agentFile, "--packages", versionFile, "--store", join(dir, "releases")], { out: () => undefined, err: (line) => err.push(line) }, { CAPLO_DB: join(dir, "publish.db") })).toBe(0);

  const script = join(dir, "script.json");
  writeFileSync(
    script,
    JSON.stringify([
      { when: "points", replies: [{ toolCalls: [{ name: "crm__points", args: { email: "ana@example.com" } }] }, { text: "{{tool}}" }] },
      { when: "redeem", replies: [{ toolCalls: [{ name: "crm__redeem", args: { email: "ana@example.com", points: 100 } }] }] },
    ]),
  );
  // Loopback http is the operator's local-development allowance, set in serve's environment.
  const env = { CAPLO_SECRET_CRM_TOKEN: TOKEN, CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK: "1" };
  const parsed = parseServeArgs(["--port", "0", "--agent", "loyalty", "--db", join(dir, "caplo.db"), "--releases", join(dir, "releases"), "--script", script], env);
  if (!parsed.ok) throw new Error(parsed.error.message);
  // serve's own runner (no runner passed)
  const started = await startServe(parsed.options, () => undefined);
  if (!started.ok) throw new Error(started.error.message);
  try {
    const ws = new WebSocket(`${started.server.url.replace("http", "ws")}/v1/ws`, { origin: "https://site.example" });
    const messages: { type: string; from?: string; text?: string; proposalId?: string; state?: string }[] = [];
    const waitFor = (test: () => boolean) =>
      new Promise<void>((resolve, reject) => {
        const timer = setInterval(() => test() && (clearInterval(timer), resolve()), 20);
        ws.once("error", (error) => (clearInterval(timer), reject(error)));
      });
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { t: string; message?: (typeof messages)[number] };
      if (frame.t === "event" && frame.message) messages.push(frame.message);
    });
    await new Promise<void>((resolve, reject) => {
      ws.on("error", reject);
      ws.on("open", () => ws.send(JSON.stringify({ t: "hello", v: 1, agent: "loyalty", capabilities: { editableFields: true, forms: true, questions: true, richText: true } })));
      ws.on("message", (data) => (JSON.parse(String(data)) as { t: string }).t === "welcome" && resolve());
    });
    ws.send(JSON.stringify({ t: "in", ref: "1", event: { type: "message", text: "my points" } }));
    await waitFor(() => messages.some((message) => message.type === "text" && message.text?.includes("340 points") === true));
    ws.send(JSON.stringify({ t: "in", ref: "2", event: { type: "message", text: "redeem 100" } }));
    await waitFor(() => messages.some((message) => message.type === "review"));
    expect(calls.map((call) => call.tool)).toEqual(["points"]);
    const proposalId = messages.find((message) => message.type === "review")!.proposalId!;
    ws.send(JSON.stringify({ t: "in", ref: "3", event: { type: "confirm", proposalId } }));
    await waitFor(() => messages.some((message) => message.type === "outcome"));
    ws.close();
    expect(messages.filter((message) => message.type === "outcome").map((message) => message.state)).toEqual(["applied"]);
    const write = await started.server.store.getWrite(proposalId);
    expect(write?.state).toBe("applied");
    expect(calls).toEqual([
      { tool: "points", key: undefined, auth: `Bearer ${TOKEN}` },
      { tool: "redeem", key: write!.idempotencyKey, auth: `Bearer ${TOKEN}` },
    ]);
    expect(refused).toEqual([]);
    expect(JSON.stringify(messages)).not.toContain(TOKEN);
  } finally {
    await started.server.close();
  }
}, 30_000);
