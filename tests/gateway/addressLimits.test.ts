// The gateway's origins and connection limits against hostile clients with the real `ws` library (issue #14,
// items 2 and 3): a DNS-rebinding page's lying Origin/Host pair, the configured public origin, a socket
// that never says hello, a burst of 150 sockets from one address, and X-Forwarded-For only from a trusted proxy.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { DEFAULT_ADDRESS_LIMITS } from "../../server/src/gateway/addressLimits.ts";
import { Gateway, type GatewayOptions } from "../../server/src/gateway/index.ts";
import { TestClient } from "./support/client.ts";
import { startStack, type Stack } from "./support/stack.ts";

let stack: Stack;
const gateways: Gateway[] = [];
const sockets: WebSocket[] = [];
beforeAll(async () => {
  stack = await startStack();
});
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close()));
});
afterAll(async () => stack?.close());

async function gateway(options: Partial<GatewayOptions> = {}, host = "127.0.0.1") {
  const started = new Gateway({ engine: stack.engine, releases: stack.releases, ...options });
  gateways.push(started);
  const address = await started.listen(0, host);
  return { gateway: started, port: address.port, url: `ws://127.0.0.1:${address.port}/v1/ws` };
}

type Seen = { status?: number; frames: { t: string; code?: string }[]; closed?: number; ws: WebSocket };
/** A raw socket (any headers) that says hello for `agent` once open, and records what it is told. */
function raw(url: string, headers: Record<string, string>, agent: string | null = "other-agent"): Promise<Seen> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    sockets.push(ws);
    const seen: Seen = { frames: [], ws };
    ws.once("unexpected-response", (_req, res) => resolve({ ...seen, status: res.statusCode }));
    ws.on("error", () => undefined);
    ws.once("open", () => {
      if (agent) ws.send(JSON.stringify({ t: "hello", v: 1, agent, capabilities: {} }));
      else resolve(seen);
    });
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { t: string; code?: string };
      seen.frames.push(frame);
      if (frame.t === "welcome" && agent) resolve(seen);
    });
    ws.once("close", (code) => {
      seen.closed = code;
      resolve(seen);
    });
  });
}

/** Say hello on an open raw socket: resolves at its welcome or its close. */
function helloOn(seen: Seen): Promise<Seen> {
  return new Promise((resolve) => {
    if (seen.ws.readyState !== WebSocket.OPEN) return resolve(seen); // refused at connect: closing already
    seen.ws.on("message", (data) => {
      if ((JSON.parse(String(data)) as { t: string }).t === "welcome") resolve(seen);
    });
    seen.ws.once("close", () => resolve(seen));
    seen.ws.send(JSON.stringify({ t: "hello", v: 1, agent: "other-agent", capabilities: {} }));
  });
}

describe("origins", () => {
  it("a DNS-rebinding page (Origin and Host both its own name) is refused; the listening address's own origin is accepted", async () => {
    const { url, port } = await gateway();
    // other-agent allows only https://other.example: an own-origin socket is the only way in.
    const rebinding = await raw(url, { origin: `http://rebind.attacker.example:${port}`, host: `rebind.attacker.example:${port}` });
    expect(rebinding.status).toBe(403);
    const lyingHost = await raw(url, { origin: `http://127.0.0.1:${port + 1}`, host: `127.0.0.1:${port + 1}` });
    expect(lyingHost.status).toBe(403);
    const own = await raw(url, { origin: `http://127.0.0.1:${port}`, host: `rebind.attacker.example:${port}` });
    expect(own.frames.map((frame) => frame.t)).toEqual(["welcome"]);
  });

  it("the configured public origin (CAPLO_PUBLIC_URL) is the widget app's own whatever Host says; other names are not", async () => {
    const { url, gateway: started, port } = await gateway({ publicOrigins: ["https://caplo.shop.example"] });
    expect(started.origins).toEqual(["https://caplo.shop.example", `http://127.0.0.1:${port}`]);
    const publicOne = await raw(url, { origin: "https://caplo.shop.example", host: "internal:8080" });
    expect(publicOne.frames.map((frame) => frame.t)).toEqual(["welcome"]);
    const lookalike = await raw(url, { origin: "https://caplo.shop.example.attacker.example", host: "caplo.shop.example.attacker.example" });
    expect(lookalike.status).toBe(403);
    const plainHttp = await raw(url, { origin: "http://caplo.shop.example", host: "caplo.shop.example" });
    expect(plainHttp.status).toBe(403);
  });

  it("listening on every address (0.0.0.0), only the loopback names of its port are its own", async () => {
    const { gateway: started, port } = await gateway({}, "0.0.0.0");
    expect(started.origins).toEqual([`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]);
  });
});

describe("hello timeout", () => {
  it("a socket that never says hello is told hello_timeout and closed with 4408; one that said hello stays", async () => {
    const { url } = await gateway({ helloTimeoutMs: 300 });
    const silent = await TestClient.open(url, "https://other.example");
    const greeted = await TestClient.open(url, "https://other.example");
    await greeted.hello("other-agent");
    await silent.waitFor(() => silent.closed !== undefined).catch(() => undefined);
    expect(silent.closed).toEqual({ code: 4408, reason: "no hello in time" });
    expect(silent.frames).toEqual([{ t: "error", code: "hello_timeout", message: "no hello within 0.3 s; connect again and say hello first" }]);
    greeted.send({ t: "ping" });
    await greeted.waitFor((frame) => frame.t === "pong");
    expect(greeted.closed).toBeUndefined();
    await greeted.close();
  });
});

describe("per-address limits", () => {
  it(`a burst of 150 sockets from one address: ${DEFAULT_ADDRESS_LIMITS.socketsPerAddress} open, ${DEFAULT_ADDRESS_LIMITS.conversationsPerMinute} get conversations, the rest are told why and closed with 1013`, async () => {
    let now = Date.now();
    const { url, gateway: started } = await gateway({ now: () => now });
    const before = stack.store; // conversations are counted in the store
    const countBefore = (await before.listConversations({ limit: 100_000 })).length;
    // All 150 connect first (so the count of open sockets is what it is at the peak), then each says hello.
    const connected = await Promise.all(Array.from({ length: 150 }, () => raw(url, { origin: "https://other.example" }, null)));
    const seen = await Promise.all(connected.map(helloOn));
    const codes = (code: string) => seen.filter((entry) => entry.frames.some((frame) => frame.code === code));
    const welcomed = seen.filter((entry) => entry.frames.some((frame) => frame.t === "welcome"));
    expect(welcomed).toHaveLength(DEFAULT_ADDRESS_LIMITS.conversationsPerMinute);
    expect(codes("too_many_connections")).toHaveLength(150 - DEFAULT_ADDRESS_LIMITS.socketsPerAddress);
    expect(codes("too_many_conversations")).toHaveLength(DEFAULT_ADDRESS_LIMITS.socketsPerAddress - DEFAULT_ADDRESS_LIMITS.conversationsPerMinute);
    expect([...codes("too_many_connections"), ...codes("too_many_conversations")].every((entry) => entry.closed === 1013)).toBe(true);
    expect((await before.listConversations({ limit: 100_000 })).length - countBefore).toBe(DEFAULT_ADDRESS_LIMITS.conversationsPerMinute);
    // A closed socket gives its slot back; a new conversation is allowed every 60/N seconds.
    await new Promise<void>((resolve) => {
      welcomed[0]!.ws.once("close", () => resolve());
      welcomed[0]!.ws.close();
    });
    await expect.poll(() => started.connectionCount).toBe(DEFAULT_ADDRESS_LIMITS.conversationsPerMinute - 1);
    const refusedAgain = await raw(url, { origin: "https://other.example" });
    expect(refusedAgain.frames.map((frame) => frame.code)).toEqual(["too_many_conversations"]);
    now += 60_000 / DEFAULT_ADDRESS_LIMITS.conversationsPerMinute - 1;
    expect((await raw(url, { origin: "https://other.example" })).frames.map((frame) => frame.code)).toEqual(["too_many_conversations"]);
    now += 1;
    expect((await raw(url, { origin: "https://other.example" })).frames.map((frame) => frame.t)).toEqual(["welcome"]);
  });

  it("resuming a conversation is not a new one: it is welcomed while the address may start no more", async () => {
    const { url } = await gateway({ addressLimits: { conversationsPerMinute: 1 } });
    const first = await TestClient.open(url, "https://other.example");
    const welcome = await first.hello("other-agent");
    await first.close();
    expect((await raw(url, { origin: "https://other.example" })).frames.map((frame) => frame.code)).toEqual(["too_many_conversations"]);
    const again = await TestClient.open(url, "https://other.example");
    expect((await again.hello("other-agent", { token: welcome.resumeToken, after: 0 })).conversationId).toBe(welcome.conversationId);
    await again.close();
  });

  it("X-Forwarded-For names the client only behind a trusted proxy (read from the right); otherwise every socket counts as the peer", async () => {
    const limits = { socketsPerAddress: 2, conversationsPerMinute: 100 };
    const origin = "https://other.example";
    const direct = await gateway({ addressLimits: limits });
    const spoofed = await Promise.all(["203.0.113.1", "203.0.113.2", "203.0.113.3"].map((ip) => raw(direct.url, { origin, "x-forwarded-for": ip })));
    expect(spoofed.map((entry) => entry.frames.at(-1)?.code ?? entry.frames.at(-1)?.t).sort()).toEqual(["too_many_connections", "welcome", "welcome"]);
    const proxied = await gateway({ addressLimits: limits, trustedProxies: ["127.0.0.0/8"] });
    const clients = ["203.0.113.5", "203.0.113.5", "203.0.113.6", "203.0.113.6"];
    const each = await Promise.all(clients.map((ip) => raw(proxied.url, { origin, "x-forwarded-for": ip })));
    expect(each.every((entry) => entry.frames.some((frame) => frame.t === "welcome"))).toBe(true);
    // A client cannot pass for another by writing its own X-Forwarded-For: the proxy appends the real one.
    const lying = await raw(proxied.url, { origin, "x-forwarded-for": "198.51.100.9, 203.0.113.5" });
    expect(lying.frames.map((frame) => frame.code)).toEqual(["too_many_connections"]);
    expect(lying.closed).toBe(1013);
  });
});
