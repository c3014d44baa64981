// The gateway with real `ws` clients: the protocol, the write policy over the wire, frame validation and
// limits, origins, resume, static files, health, registered routes and the team API.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { mintIdentityToken } from "../../server/src/identity/index.ts";
import { answerTo, isT, OpenClients, openProposal, proposeCancel, TestClient, type Frame } from "./support/client.ts";
import { hs256Identity, ORIGIN, OTHER_ORIGIN, otherSiteRelease, SHOP_RULES, shopRelease, SLOW_ANSWER, SLOW_RULE, startStack, type Stack } from "./support/stack.ts";

const isEvent = (type: string, extra: (message: Record<string, unknown>) => boolean = () => true) =>
  isT("event", (frame) => frame.message.type === type && extra(frame.message as unknown as Record<string, unknown>));

let stack: Stack;
const clients = new OpenClients();
const client = (origin = ORIGIN): Promise<TestClient> => clients.open(stack.wsUrl, origin);
afterEach(() => clients.closeAll());

const HS_SECRET = "a-test-identity-secret-of-at-least-32-bytes!!";
/** The app page's inline style in the test's widget folder. */
const APP_STYLE = "body{margin:0}\n";
/** The rate limit's clock: real time, unless a test holds it still. */
let rateClock: number | undefined;

beforeAll(async () => {
  const widgetDir = mkdtempSync(join(tmpdir(), "caplo-widget-"));
  mkdirSync(join(widgetDir, "assets"));
  writeFileSync(join(widgetDir, "widget.js"), "console.log('loader')");
  writeFileSync(join(widgetDir, "app.html"), `<!doctype html><title>app</title><style>${APP_STYLE}</style>`);
  writeFileSync(join(widgetDir, "assets", "app-1.js"), "export {}");
  const schemasDir = mkdtempSync(join(tmpdir(), "caplo-schemas-"));
  writeFileSync(join(schemasDir, "caplo.schema.json"), JSON.stringify({ $id: "https://docs.caplo.si/schemas/caplo.schema.json" }));
  stack = await startStack({
    rules: [SLOW_RULE, ...SHOP_RULES],
    gateway: { widgetDir, schemasDir, limits: { maxFrameBytes: 4096, framesPerSecond: 10, burst: 20 }, now: () => rateClock ?? Date.now(), secrets: (name) => (name === "WIDGET_IDENTITY_SECRET" ? HS_SECRET : undefined) },
    releases: (version) => [shopRelease(version, { identity: hs256Identity("WIDGET_IDENTITY_SECRET") }), otherSiteRelease(version)],
  });
  stack.gateway.route("POST", "/webhooks/test/:channel", (_req, res, params) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(`hook ${params.channel}`);
  });
  return () => {
    rmSync(widgetDir, { recursive: true, force: true });
    rmSync(schemasDir, { recursive: true, force: true });
  };
});
afterAll(async () => stack?.close());

describe("conversation over the WebSocket", () => {
  it("hello gets a welcome with a resume token; a message is acked and the turn's events arrive in order with typing", async () => {
    const c = await client();
    const welcome = await c.hello("shop-agent");
    expect(welcome).toMatchObject({ v: 1, verified: false });
    expect(welcome.resumeToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    c.send({ t: "in", ref: "r1", event: { type: "message", text: "where is order SO-1234" } });
    await c.waitFor(isT("ack", (frame) => frame.ref === "r1"));
    await c.waitFor(isEvent("text", (message) => message.from === "agent"));
    const events = c.events();
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.map((event) => event.message.type)).toEqual(["text", "progress", "progress", "result", "text"]);
    expect(c.frames.some((frame) => frame.t === "typing" && frame.on)).toBe(true);
    c.send({ t: "ping" });
    await c.waitFor(isT("pong"));
  });

  it("the reply streams as delta frames before its event: parts the model hands over at once are one frame, parts that come apart are frames of their own", async () => {
    const c = await client();
    await c.hello("shop-agent");
    c.send({ t: "in", ref: "r1", event: { type: "message", text: "where is order SO-1234" } });
    const reply = await c.waitFor(isEvent("text", (message) => message.from === "agent"));
    // The scripted model hands over every word of "Your order is on its way." in one go: one frame, before the event.
    const deltas = () => c.frames.filter(isT("delta"));
    expect(deltas()).toEqual([{ t: "delta", id: reply.message.id, at: 0, text: "Your order is on its way." }]);
    expect(c.frames.indexOf(deltas()[0]!)).toBeLessThan(c.frames.indexOf(reply));
    // This answer's first word comes, then the rest after a pause: two frames, which make the reply together.
    c.send({ t: "in", ref: "r2", event: { type: "message", text: "slowly, order SO-1234" } });
    const slow = await c.waitFor(isEvent("text", (message) => message.text === SLOW_ANSWER));
    const parts = deltas().filter((frame) => frame.id === slow.message.id);
    expect(parts.map((frame) => [frame.at, frame.text])).toEqual([
      [0, "Your "],
      [5, "order is on its way, slowly."],
    ]);
    expect(c.frames.indexOf(parts[1]!)).toBeLessThan(c.frames.indexOf(slow));
  });

  it("two confirm frames for one proposal (double click) run the write once", async () => {
    const c = await client();
    const { proposalId } = await openProposal(c, "SO-7001");
    c.send({ t: "in", ref: "c1", event: { type: "confirm", proposalId } });
    c.send({ t: "in", ref: "c2", event: { type: "confirm", proposalId } });
    await c.waitFor(isEvent("outcome", (message) => message.state === "applied"));
    const answers = await Promise.all([c.waitFor(answerTo("c1")), c.waitFor(answerTo("c2"))]);
    expect(answers.map((frame) => frame.t).sort()).toEqual(["ack", "error"]);
    expect(answers.find((frame) => frame.t === "error")).toMatchObject({ code: "proposal_not_open" });
    expect(stack.backend.cancels("SO-7001")).toHaveLength(1);
  });

  it("two tabs of one conversation (same resume token) confirming at once run the write once", async () => {
    const first = await client();
    const { welcome, proposalId } = await openProposal(first, "SO-7002");
    const second = await client();
    await second.hello("shop-agent", { token: welcome.resumeToken, after: 0 });
    await second.waitFor(isEvent("review"));
    first.send({ t: "in", ref: "a", event: { type: "confirm", proposalId } });
    second.send({ t: "in", ref: "b", event: { type: "confirm", proposalId } });
    await first.waitFor(isEvent("outcome", (message) => message.state === "applied"));
    await second.waitFor(isEvent("outcome", (message) => message.state === "applied"));
    const a = await first.waitFor(answerTo("a"));
    const b = await second.waitFor(answerTo("b"));
    expect([a.t, b.t].sort()).toEqual(["ack", "error"]);
    expect(stack.backend.cancels("SO-7002")).toHaveLength(1);
  });

  it("a confirm from another customer's connection is refused and nothing runs", async () => {
    const owner = await client();
    const { proposalId } = await openProposal(owner, "SO-7003");
    const stranger = await client();
    await stranger.hello("shop-agent");
    stranger.send({ t: "in", ref: "x", event: { type: "confirm", proposalId } });
    expect(await stranger.waitFor(isT("error", (frame) => frame.ref === "x"))).toMatchObject({ code: "proposal_not_found" });
    stranger.send({ t: "in", ref: "y", event: { type: "decline", proposalId } });
    expect(await stranger.waitFor(isT("error", (frame) => frame.ref === "y"))).toMatchObject({ code: "proposal_not_found" });
    expect(stack.backend.invocations.filter((call) => call.args.orderId === "SO-7003")).toEqual([]);
    expect((await stack.store.getWrite(proposalId))?.state).toBe("proposed");
    expect(stranger.events().some((event) => event.message.type === "review")).toBe(false);
  });

  it("identify with a valid signed token verifies the customer; a forged one is refused", async () => {
    const c = await client();
    await c.hello("shop-agent");
    const token = mintIdentityToken({ algorithm: "HS256", secret: HS_SECRET, claims: { sub: "cust-42", level: "standard" } });
    c.send({ t: "identify", ref: "i1", token });
    await c.waitFor(isT("ack", (frame) => frame.ref === "i1"));
    const conversationId = (c.frames.find((frame) => frame.t === "welcome") as Frame<"welcome">).conversationId;
    expect((await stack.store.getConversation(conversationId))?.subject).toMatchObject({ id: "cust-42", level: "standard" });
    const forged = mintIdentityToken({ algorithm: "HS256", secret: "another-secret-that-is-also-32-bytes-long!", claims: { sub: "cust-43" } });
    c.send({ t: "identify", ref: "i2", token: forged });
    const error = await c.waitFor(isT("error", (frame) => frame.ref === "i2"));
    expect(error.code).toMatch(/signature/);
    expect((await stack.store.getConversation(conversationId))?.subject?.id).toBe("cust-42");
  });
});

describe("frames and limits", () => {
  it("a malformed or oversized frame gets an error frame; the connection and other conversations live on", async () => {
    const bystander = await client();
    await bystander.hello("shop-agent");
    const c = await client();
    await c.hello("shop-agent");
    c.send("{not json");
    expect(await c.waitFor(isT("error", (frame) => frame.code === "frame_invalid"))).toMatchObject({ message: "the frame is not valid JSON" });
    c.send({ t: "in", ref: "bad", event: { type: "message", text: "" } });
    expect(await c.waitFor(isT("error", (frame) => frame.ref === "bad"))).toMatchObject({ code: "frame_invalid", path: "event.text" });
    c.send({ t: "launch" });
    await c.waitFor(isT("error", (frame) => frame.code === "frame_invalid" && frame.path === "t"));
    c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    await c.waitFor(isT("error", (frame) => frame.message === "frames are JSON text, not binary"));
    // 4096 bytes is the limit: 4097 is refused, 4096 is handled.
    const framed = (size: number) => {
      const base = JSON.stringify({ t: "in", ref: "big", event: { type: "message", text: "" } });
      return JSON.stringify({ t: "in", ref: "big", event: { type: "message", text: "x".repeat(size - base.length) } });
    };
    expect(Buffer.byteLength(framed(4097))).toBe(4097);
    c.send(framed(4097));
    expect(await c.waitFor(isT("error", (frame) => frame.code === "frame_too_large"))).toMatchObject({ message: "frames are at most 4096 bytes; this one had 4097" });
    c.send({ t: "in", ref: "ok", event: { type: "message", text: "hello there" } });
    await c.waitFor(isT("ack", (frame) => frame.ref === "ok"));
    expect(c.closed).toBeUndefined();
    bystander.send({ t: "in", ref: "still", event: { type: "message", text: "hello again" } });
    await bystander.waitFor(isT("ack", (frame) => frame.ref === "still"));
    await bystander.waitFor(isEvent("text", (message) => message.text === "Hi! How can I help?"));
    expect(bystander.closed).toBeUndefined();
    expect(bystander.frames.some((frame) => frame.t === "error")).toBe(false);
  });

  it("a frame of exactly the size limit is handled", async () => {
    const c = await client();
    await c.hello("shop-agent");
    const base = JSON.stringify({ t: "in", ref: "edge", event: { type: "message", text: "" } });
    // Text at most 4000 characters (the message limit): use multi-byte characters to reach 4096 bytes.
    const filler = "é".repeat((4096 - Buffer.byteLength(base)) / 2);
    const frame = JSON.stringify({ t: "in", ref: "edge", event: { type: "message", text: filler } });
    expect(Buffer.byteLength(frame)).toBe(4096);
    c.send(frame);
    await c.waitFor(isT("ack", (f) => f.ref === "edge"));
  });

  it("a burst of exactly 20 frames is handled and the 21st gets rate_limited; 100 ms later (10 per second) one more is allowed; the connection and other connections live on", async () => {
    const bystander = await client();
    await bystander.hello("shop-agent");
    const c = await client();
    await c.hello("shop-agent");
    rateClock = Date.now() + 60_000; // a full bucket, then time stands still
    try {
      const pongs = () => c.frames.filter((frame) => frame.t === "pong").length;
      const limited = () => c.frames.filter((frame) => frame.t === "error" && frame.code === "rate_limited").length;
      for (let i = 0; i < 21; i++) c.send({ t: "ping" });
      const refused = await c.waitFor(isT("error", (frame) => frame.code === "rate_limited"));
      expect(refused.message).toBe("Too many actions at once: this one was not handled; please try again in a moment (at most 10 per second)");
      // Frames are handled in order: every pong before the refusal has arrived.
      expect(pongs()).toBe(20);
      rateClock += 99;
      c.send({ t: "ping" });
      await c.waitFor(() => limited() === 2);
      rateClock += 1;
      c.send({ t: "ping" });
      c.send({ t: "ping" });
      await c.waitFor(() => limited() === 3);
      expect(pongs()).toBe(21);
      expect(c.closed).toBeUndefined();
      // The limit is per connection: another connection's frames are handled meanwhile.
      bystander.send({ t: "ping" });
      await bystander.waitFor(isT("pong"));
      expect(bystander.frames.some((frame) => frame.t === "error")).toBe(false);
    } finally {
      rateClock = undefined;
    }
  });

  it("frames before hello are refused; a second hello is refused", async () => {
    const c = await client();
    c.send({ t: "in", ref: "early", event: { type: "message", text: "hi" } });
    expect(await c.waitFor(isT("error", (frame) => frame.ref === "early"))).toMatchObject({ code: "not_started" });
    await c.hello("shop-agent");
    c.send({ t: "hello", v: 1, agent: "shop-agent", capabilities: {} });
    await c.waitFor(isT("error", (frame) => frame.code === "already_started"));
  });

  it("a hello of another protocol version is refused by name; the same connection can then say hello in version 1", async () => {
    const c = await client();
    c.send({ t: "hello", v: 2, agent: "shop-agent", capabilities: {} });
    expect(await c.waitFor(isT("error", (frame) => frame.code === "protocol_unsupported"))).toMatchObject({
      path: "v",
      message: "this gateway speaks protocol version 1; the hello asked for 2",
    });
    c.send({ t: "hello", agent: "shop-agent", capabilities: {} });
    expect(await c.waitFor(isT("error", (frame) => frame.message.endsWith("asked for no version")))).toMatchObject({ code: "protocol_unsupported" });
    expect(c.frames.some((frame) => frame.t === "welcome")).toBe(false);
    await c.hello("shop-agent");
    expect(c.closed).toBeUndefined();
  });
});

describe("heartbeats", () => {
  it("a connection that stops answering pings is closed; one that answers stays", async () => {
    const { Gateway } = await import("../../server/src/gateway/index.ts");
    const { default: WebSocket } = await import("ws");
    const fast = new Gateway({ engine: stack.engine, releases: stack.releases, heartbeatMs: 100 });
    const address = await fast.listen(0, "127.0.0.1");
    try {
      const open = (autoPong: boolean) =>
        new Promise<InstanceType<typeof WebSocket>>((resolve, reject) => {
          const ws = new WebSocket(`ws://127.0.0.1:${address.port}/v1/ws`, { origin: ORIGIN, autoPong });
          ws.once("open", () => resolve(ws));
          ws.once("error", reject);
        });
      const silent = await open(false);
      const lively = await open(true);
      const closed = new Promise<number>((resolve) => silent.once("close", (code) => resolve(code)));
      expect(await closed).toBe(1006);
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(lively.readyState).toBe(WebSocket.OPEN);
      lively.close();
    } finally {
      await fast.close();
    }
  });
});

describe("backpressure", () => {
  it("a client that stops reading is not sent more than the buffer limit; when it reads again every event arrives once, in order", async () => {
    const { Gateway } = await import("../../server/src/gateway/index.ts");
    const slow = new Gateway({ engine: stack.engine, releases: stack.releases, limits: { maxBufferedBytes: 64 * 1024 } });
    const address = await slow.listen(0, "127.0.0.1");
    try {
      const c = await clients.open(`ws://127.0.0.1:${address.port}/v1/ws`, ORIGIN);
      const welcome = await c.hello("shop-agent");
      const socket = (c.ws as unknown as { _socket: import("node:net").Socket })._socket;
      socket.pause();
      const big = "y".repeat(200_000);
      for (let i = 0; i < 40; i++) await stack.engine.emit(welcome.conversationId, { type: "text", id: `m_big_${i}`, from: "system", text: `${i} ${big}` });
      await new Promise((resolve) => setTimeout(resolve, 300));
      // 8 MB were stored; the server stopped sending once the socket's buffer passed its limit.
      const server = [...(slow as unknown as { connections: Set<{ lastSent: number }> }).connections][0]!;
      expect(server.lastSent).toBeLessThan(40);
      socket.resume();
      await c.waitFor((frame) => frame.t === "event" && frame.message.type === "text" && frame.message.text.startsWith("39 "), 20_000);
      const texts = c.events().map((event) => (event.message.type === "text" ? Number(event.message.text.split(" ")[0]) : -1));
      expect(texts).toEqual(Array.from({ length: 40 }, (_, i) => i));
      expect(c.events().map((event) => event.seq)).toEqual(c.events().map((_, i) => c.events()[0]!.seq + i));
    } finally {
      await slow.close();
    }
  });
});

describe("slow clients and huge frames", () => {
  it("a client whose buffer stays full past the stall limit is closed with 1013; resuming from its last seq delivers the rest once, in order", async () => {
    const { Gateway } = await import("../../server/src/gateway/index.ts");
    const slow = new Gateway({ engine: stack.engine, releases: stack.releases, limits: { maxBufferedBytes: 64 * 1024, stallTimeoutMs: 300 } });
    const address = await slow.listen(0, "127.0.0.1");
    const url = `ws://127.0.0.1:${address.port}/v1/ws`;
    try {
      const c = await clients.open(url, ORIGIN);
      const welcome = await c.hello("shop-agent");
      const socket = (c.ws as unknown as { _socket: import("node:net").Socket })._socket;
      socket.pause();
      const big = "z".repeat(200_000);
      for (let i = 0; i < 40; i++) await stack.engine.emit(welcome.conversationId, { type: "text", id: `m_stall_${i}`, from: "system", text: `${i} ${big}` });
      const server = [...(slow as unknown as { connections: Set<{ ws: { readyState: number; OPEN: number } }> }).connections][0]!;
      for (let i = 0; i < 400 && server.ws.readyState === server.ws.OPEN; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(server.ws.readyState).not.toBe(server.ws.OPEN);
      socket.resume();
      await c.waitFor(() => c.closed !== undefined).catch(() => undefined);
      expect(c.closed).toEqual({ code: 1013, reason: "too slow; resume from the last event" });
      const got = c.events();
      expect(got.length).toBeLessThan(40);
      const after = got.at(-1)?.seq ?? 0;
      const again = await clients.open(url, ORIGIN);
      await again.hello("shop-agent", { token: welcome.resumeToken, after });
      await again.waitFor((frame) => frame.t === "event" && frame.message.type === "text" && frame.message.text.startsWith("39 "), 20_000);
      const all = [...got, ...again.events()];
      expect(all.map((event) => (event.message.type === "text" ? Number(event.message.text.split(" ")[0]) : -1))).toEqual(Array.from({ length: 40 }, (_, i) => i));
      expect(all.map((event) => event.seq)).toEqual(all.map((_, i) => all[0]!.seq + i));
    } finally {
      await slow.close();
    }
  });

  it("a frame over the hard payload limit closes its socket (1009) unread; one of exactly the limit gets frame_too_large; others live on", async () => {
    const { Gateway } = await import("../../server/src/gateway/index.ts");
    const strict = new Gateway({ engine: stack.engine, releases: stack.releases, limits: { maxFrameBytes: 1000 }, hardMaxPayloadBytes: 20_000 });
    const address = await strict.listen(0, "127.0.0.1");
    const url = `ws://127.0.0.1:${address.port}/v1/ws`;
    try {
      const open = async () => {
        const opened = await clients.open(url, ORIGIN);
        await opened.hello("shop-agent");
        return opened;
      };
      const [bystander, c] = [await open(), await open()];
      c.send("x".repeat(20_000));
      expect(await c.waitFor(isT("error", (frame) => frame.code === "frame_too_large"))).toMatchObject({ message: "frames are at most 1000 bytes; this one had 20000" });
      c.send("x".repeat(20_001));
      await c.waitFor(() => c.closed !== undefined).catch(() => undefined);
      expect(c.closed?.code).toBe(1009);
      bystander.send({ t: "in", ref: "still", event: { type: "message", text: "hello again" } });
      await bystander.waitFor(isT("ack", (frame) => frame.ref === "still"));
      expect(bystander.closed).toBeUndefined();
    } finally {
      await strict.close();
    }
  });
});

describe("origins", () => {
  it("an upgrade from an origin no agent allows, or without an origin, is refused with 403", async () => {
    await expect(TestClient.open(stack.wsUrl, "https://evil.example")).rejects.toThrow("HTTP 403");
    await expect(TestClient.open(`${stack.wsUrl}?agent=shop-agent`, OTHER_ORIGIN)).rejects.toThrow("HTTP 403");
  });

  it("the widget app's own socket, from the gateway's origin, is accepted; only the agent's sites may frame the app page", async () => {
    const own = new URL(stack.base).origin;
    const c = await client(own);
    const welcome = await c.hello("other-agent");
    expect(welcome.conversationId).toBeTruthy();
    await c.close();
    // Another host name for the same address is not the gateway's origin as the browser sees it.
    await expect(TestClient.open(stack.wsUrl, own.replace("127.0.0.1", "localhost"))).rejects.toThrow("HTTP 403");
    // Strict: this host's script and socket only, the page's own inline style only (its hash), nothing else.
    const strict = `default-src 'none'; script-src 'self'; style-src 'sha256-${createHash("sha256").update(APP_STYLE).digest("base64")}'; connect-src 'self'; img-src 'self' https: http://localhost:* http://127.0.0.1:*; frame-src https: http://localhost:* http://127.0.0.1:*; base-uri 'none'; form-action 'none'`;
    const page = await fetch(`${stack.base}/widget/app.html?agent=shop-agent`);
    expect(page.headers.get("content-security-policy")).toBe(`${strict}; frame-ancestors ${ORIGIN}`);
    const unknown = await fetch(`${stack.base}/widget/app.html?agent=nobody`);
    expect(unknown.headers.get("content-security-policy")).toBe(`${strict}; frame-ancestors 'none'`);
  });

  it("hello for an agent not embedded on this origin gets origin_not_allowed and the socket closes", async () => {
    const c = await client(OTHER_ORIGIN);
    c.send({ t: "hello", v: 1, agent: "shop-agent", capabilities: {} });
    expect(await c.waitFor(isT("error", (frame) => frame.code === "origin_not_allowed"))).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(c.closed?.code).toBe(1008);
  });
});

describe("ratings of the agent's replies", () => {
  it("the visitor rates a reply of their own conversation, changes it and takes it back; the team sees the rating on the event and a count per conversation", async () => {
    const c = await client();
    const welcome = await c.hello("shop-agent");
    c.send({ t: "in", ref: "m1", event: { type: "message", text: "hello" } });
    const reply = await c.waitFor(isEvent("text", (message) => message.from === "agent"));
    const customer = c.events().find((event) => event.message.type === "text" && event.message.from === "customer")!;
    const headers = { authorization: "Bearer team-secret-token" };
    const team = async () => {
      const events = (await (await fetch(`${stack.base}/v1/team/conversations/${welcome.conversationId}/events`, { headers })).json()) as {
        conversation: { ratings: { up: number; down: number } };
        events: { seq: number; rating?: string }[];
      };
      const listed = (await (await fetch(`${stack.base}/v1/team/conversations`, { headers })).json()) as { conversations: { id: string; ratings: unknown }[] };
      return { rating: events.events.find((event) => event.seq === reply.seq)?.rating, counts: events.conversation.ratings, listed: listed.conversations.find((conversation) => conversation.id === welcome.conversationId)?.ratings };
    };

    c.send({ t: "rate", ref: "r1", seq: reply.seq, rating: "down" });
    await c.waitFor(isT("ack", (frame) => frame.ref === "r1"));
    expect(await team()).toEqual({ rating: "down", counts: { up: 0, down: 1 }, listed: { up: 0, down: 1 } });
    c.send({ t: "rate", ref: "r2", seq: reply.seq, rating: "up" });
    await c.waitFor(isT("ack", (frame) => frame.ref === "r2"));
    expect(await team()).toEqual({ rating: "up", counts: { up: 1, down: 0 }, listed: { up: 1, down: 0 } });

    // Only the agent's replies: the visitor's own message, an event that does not exist, a bad value.
    c.send({ t: "rate", ref: "r3", seq: customer.seq, rating: "down" });
    expect(await c.waitFor(isT("error", (frame) => frame.ref === "r3"))).toMatchObject({ code: "not_rateable", path: "seq" });
    c.send({ t: "rate", ref: "r4", seq: 9999, rating: "down" });
    expect(await c.waitFor(isT("error", (frame) => frame.ref === "r4"))).toMatchObject({ code: "not_rateable", path: "seq" });
    c.send({ t: "rate", ref: "r5", seq: reply.seq, rating: "meh" });
    expect(await c.waitFor(isT("error", (frame) => frame.ref === "r5"))).toMatchObject({ code: "frame_invalid", path: "rating" });
    c.send({ t: "rate", ref: "r6", seq: 0, rating: "up" });
    expect(await c.waitFor(isT("error", (frame) => frame.ref === "r6"))).toMatchObject({ code: "frame_invalid", path: "seq" });
    // Another conversation's visitor cannot rate this one's reply: the seq is read in their own conversation.
    const other = await client();
    await other.hello("shop-agent");
    other.send({ t: "rate", ref: "o1", seq: reply.seq, rating: "down" });
    expect(await other.waitFor(isT("error", (frame) => frame.ref === "o1"))).toMatchObject({ code: "not_rateable" });
    expect(await team()).toEqual({ rating: "up", counts: { up: 1, down: 0 }, listed: { up: 1, down: 0 } });

    // A reload resumes after its last event: the welcome still carries every rating of the conversation.
    const resumed = await client();
    expect((await resumed.hello("shop-agent", { token: welcome.resumeToken, after: reply.seq })).ratings).toEqual([{ seq: reply.seq, rating: "up" }]);
    await resumed.close();
    // A new conversation, and a token that resumes nothing, start with none.
    expect(welcome.ratings).toEqual([]);
    const stranger = await client();
    expect((await stranger.hello("shop-agent", { token: "not-a-token", after: 0 })).ratings).toEqual([]);
    await stranger.close();

    c.send({ t: "rate", ref: "r7", seq: reply.seq, rating: null });
    await c.waitFor(isT("ack", (frame) => frame.ref === "r7"));
    expect(await team()).toEqual({ rating: undefined, counts: { up: 0, down: 0 }, listed: { up: 0, down: 0 } });
    const after = await client();
    expect((await after.hello("shop-agent", { token: welcome.resumeToken, after: 0 })).ratings).toEqual([]);
    await after.close();
  });
});

describe("resume", () => {
  it("reconnecting with the resume token and the last seq delivers exactly the missed events, in order", async () => {
    const c = await client();
    const welcome = await c.hello("shop-agent");
    c.send({ t: "in", ref: "1", event: { type: "message", text: "hello" } });
    await c.waitFor(isEvent("text", (message) => message.from === "agent"));
    const lastSeen = c.events().at(-1)!.seq;
    await c.close();
    // Meanwhile the team writes in the conversation.
    const headers = { authorization: "Bearer team-secret-token", "content-type": "application/json" };
    expect((await fetch(`${stack.base}/v1/team/conversations/${welcome.conversationId}/takeover`, { method: "POST", headers, body: JSON.stringify({}) })).status).toBe(200);
    expect((await fetch(`${stack.base}/v1/team/conversations/${welcome.conversationId}/messages`, { method: "POST", headers, body: JSON.stringify({ text: "Ana here" }) })).status).toBe(200);
    const again = await client();
    const resumed = await again.hello("shop-agent", { token: welcome.resumeToken, after: lastSeen });
    expect(resumed.conversationId).toBe(welcome.conversationId);
    expect(resumed.resumeToken).toBe(welcome.resumeToken);
    await again.waitFor(isEvent("text", (message) => message.text === "Ana here"));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const seqs = again.events().map((event) => event.seq);
    expect(seqs).toEqual([lastSeen + 1, lastSeen + 2]);
    expect(again.events().map((event) => event.message.type)).toEqual(["handoff", "text"]);
    // Live events keep coming after the replay, once each.
    await fetch(`${stack.base}/v1/team/conversations/${welcome.conversationId}/messages`, { method: "POST", headers, body: JSON.stringify({ text: "Still here" }) });
    await again.waitFor(isEvent("text", (message) => message.text === "Still here"));
    expect(again.events().map((event) => event.seq)).toEqual([lastSeen + 1, lastSeen + 2, lastSeen + 3]);
  });

  it("a resume after more events than one read (200) delivers every one of them once, in order, from the seq asked for", async () => {
    const c = await client();
    const welcome = await c.hello("shop-agent");
    await c.close();
    for (let i = 0; i < 450; i++) await stack.engine.emit(welcome.conversationId, { type: "text", id: `m_many_${i}`, from: "system", text: `n${i}` });
    const last = (await stack.store.getConversation(welcome.conversationId))!.lastSeq;
    const after = last - 401; // 401 missed: two full reads and one more
    const again = await client();
    await again.hello("shop-agent", { token: welcome.resumeToken, after });
    await again.waitFor(isT("event", (frame) => frame.seq === last));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(again.events().map((event) => event.seq)).toEqual(Array.from({ length: 401 }, (_, i) => after + 1 + i));
  });

  it("a socket closed while its hello waits on the store leaves nothing behind: no subscription, no joined connection", async () => {
    const engine = stack.engine;
    const gateway = stack.gateway as unknown as { byConversation: Map<string, Set<unknown>> };
    const open = engine.openConversation.bind(engine);
    const subscribe = engine.subscribe.bind(engine);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let subscribed = 0;
    let opened = "";
    engine.openConversation = async (...args: Parameters<typeof open>) => {
      await held;
      const conversation = await open(...args);
      opened = conversation.id;
      return conversation;
    };
    engine.subscribe = (...args: Parameters<typeof subscribe>) => {
      subscribed += 1;
      return subscribe(...args);
    };
    try {
      const c = await client();
      c.send({ t: "hello", v: 1, agent: "shop-agent", capabilities: {} });
      await new Promise((resolve) => setTimeout(resolve, 50));
      await c.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      release();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(opened).not.toBe(""); // the hello did carry on after the close
      expect(subscribed).toBe(0);
      expect(gateway.byConversation.has(opened)).toBe(false);
    } finally {
      engine.openConversation = open;
      engine.subscribe = subscribe;
    }
  });

  it("a resume token that is unknown, or of another agent, starts a new conversation and says so", async () => {
    const c = await client();
    c.send({ t: "hello", v: 1, agent: "shop-agent", capabilities: {}, resume: { token: "nope", after: 3 } });
    await c.waitFor(isT("error", (frame) => frame.code === "resume_invalid"));
    const welcome = await c.waitFor(isT("welcome"));
    expect(welcome.resumeToken).not.toBe("nope");
  });
});

describe("HTTP", () => {
  it("serves health, readiness, the widget's files, the schema and registered routes; refuses path traversal", async () => {
    expect(await (await fetch(`${stack.base}/healthz`)).json()).toEqual({ ok: true });
    expect(await (await fetch(`${stack.base}/readyz`)).json()).toEqual({ ready: true, store: "ok", bus: "healthy" });
    const loader = await fetch(`${stack.base}/widget.js`);
    expect(loader.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(loader.headers.get("cache-control")).toBe("public, max-age=300");
    expect(await loader.text()).toBe("console.log('loader')");
    expect((await fetch(`${stack.base}/widget/app.html`)).headers.get("cache-control")).toBe("no-cache");
    expect((await fetch(`${stack.base}/widget/assets/app-1.js`)).headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const schema = await fetch(`${stack.base}/schemas/caplo.schema.json`);
    expect(await schema.json()).toEqual({ $id: "https://docs.caplo.si/schemas/caplo.schema.json" });
    expect((await fetch(`${stack.base}/widget/..%2f..%2fetc%2fpasswd`)).status).toBe(404);
    expect((await fetch(`${stack.base}/widget/%2e%2e/caplo.db`)).status).toBe(404);
    expect((await fetch(`${stack.base}/nothing`)).status).toBe(404);
    const hook = await fetch(`${stack.base}/webhooks/test/whatsapp`, { method: "POST", body: "x" });
    expect(await hook.text()).toBe("hook whatsapp");
    expect((await fetch(`${stack.base}/webhooks/test/whatsapp`)).status).toBe(405);
  });

  it("a delivered file downloads by its URL as an attachment; an unknown id is 404", async () => {
    const id = "f_" + "A".repeat(32);
    const c = await client();
    const welcome = await c.hello("shop-agent");
    const bytes = Buffer.from("%PDF-1.4\n%%EOF\n");
    await stack.store.putFile({ id, conversationId: welcome.conversationId, name: "in voice<1>.pdf", mimeType: "application/pdf", size: bytes.length, bytes, createdAt: Date.now() });
    const response = await fetch(`${stack.base}/v1/files/${id}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/pdf");
    expect(response.headers.get("content-disposition")).toBe('attachment; filename="in_voice_1_.pdf"');
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    expect((await fetch(`${stack.base}/v1/files/f_${"B".repeat(32)}`)).status).toBe(404);
    expect((await fetch(`${stack.base}/v1/files/..%2fcaplo.db`)).status).toBe(404);
  });

  it("the team API needs the bearer token", async () => {
    expect((await fetch(`${stack.base}/v1/team/follow-ups`)).status).toBe(401);
    const wrong = await fetch(`${stack.base}/v1/team/follow-ups`, { headers: { authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ error: { code: "unauthorized", path: "authorization", message: "a valid team member's bearer token is required" } });
    const right = await fetch(`${stack.base}/v1/team/follow-ups`, { headers: { authorization: "Bearer team-secret-token" } });
    expect(right.status).toBe(200);
    expect(await right.json()).toHaveProperty("writes");
  });

  it("the team API refuses bad bodies with a located error and changes nothing", async () => {
    const c = await client();
    const welcome = await c.hello("shop-agent");
    const headers = { authorization: "Bearer team-secret-token", "content-type": "application/json" };
    const bad = await fetch(`${stack.base}/v1/team/conversations/${welcome.conversationId}/messages`, { method: "POST", headers, body: JSON.stringify({ text: "" }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { path: string } }).error.path).toBe("text");
    const extra = await fetch(`${stack.base}/v1/team/conversations/${welcome.conversationId}/takeover`, { method: "POST", headers, body: JSON.stringify({ admin: true }) });
    expect(extra.status).toBe(400);
    const missing = await fetch(`${stack.base}/v1/team/conversations/c_nope/takeover`, { method: "POST", headers, body: JSON.stringify({}) });
    expect(missing.status).toBe(404);
    expect((await stack.store.getConversation(welcome.conversationId))?.handoff).toBeNull();
    const list = await fetch(`${stack.base}/v1/team/conversations/${welcome.conversationId}/events`, { headers });
    expect(list.status).toBe(200);
  });
});
