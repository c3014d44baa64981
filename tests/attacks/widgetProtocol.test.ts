// The widget protocol against the hostile clients we do not see (tests/attacks/README.md): a real gateway on
// a loopback port with the real `ws` library, attacked with replays, stale and foreign tokens, edits off the
// card, malformed and flooding frames and lying Origin and Host headers. Every attack ends with what the
// store holds: a write runs once or not at all.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { OPTION_VALUE_MAX, type ServerFrame } from "@caplo/shared";
import { Gateway } from "../../server/src/gateway/index.ts";
import { mintIdentityToken } from "../../server/src/identity/index.ts";
import { answerTo, isT, OpenClients, openProposal, proposeCancel, TestClient, type Frame } from "../gateway/support/client.ts";
import { hs256Identity, ORIGIN, OTHER_ORIGIN, otherSiteRelease, shopRelease, startStack, type Stack } from "../gateway/support/stack.ts";

const outcome = (state: string) => isT("event", (frame) => frame.message.type === "outcome" && frame.message.state === state);

const SHOP_SECRET = "the-shop-sites-identity-secret-of-32-bytes!";
let stack: Stack;
let other: Gateway;
let otherWsUrl: string;
const clients = new OpenClients();
const client = (url = stack.wsUrl, origin = ORIGIN): Promise<TestClient> => clients.open(url, origin);
afterEach(() => clients.closeAll());

beforeAll(async () => {
  // Two agents of one site backend share an identity secret; each names itself as the token's audience.
  stack = await startStack({
    gateway: { secrets: (name) => (name === "SITE_IDENTITY_SECRET" ? SHOP_SECRET : undefined) },
    releases: (version) => [
      shopRelease(version, { identity: hs256Identity("SITE_IDENTITY_SECRET", "shop-agent") }),
      otherSiteRelease(version, { origins: [OTHER_ORIGIN, ORIGIN], identity: hs256Identity("SITE_IDENTITY_SECRET", "other-agent") }),
    ],
  });
  // A second node on the same store and bus: it checks a socket's token before each action and batch of events.
  other = new Gateway({ engine: stack.engine, releases: stack.releases, secrets: (name) => (name === "SITE_IDENTITY_SECRET" ? SHOP_SECRET : undefined), limits: { resumeCheckMs: 60_000 } });
  otherWsUrl = `ws://127.0.0.1:${(await other.listen(0, "127.0.0.1")).port}/v1/ws`;
});
afterAll(async () => {
  await other?.close();
  await stack?.close();
});

const signIn = (sub: string, audience = "shop-agent") => mintIdentityToken({ algorithm: "HS256", secret: SHOP_SECRET, claims: { sub, level: "standard", aud: audience } });

describe("a replayed confirm runs the write once", () => {
  it("the same proposalId confirmed again after a reconnect (resume) and on a second socket, after the write ran: refused by code, the tool ran once", async () => {
    const first = await client();
    const { welcome, proposalId } = await openProposal(first, "SO-8501");
    const confirm = { t: "in", ref: "c-1", event: { type: "confirm", proposalId } };
    first.send(confirm);
    await first.waitFor(outcome("applied"));
    await first.close();
    // The visitor's tab reconnects and resumes; a script replays the recorded frame, twice, on two sockets.
    const resumed = await client();
    await resumed.hello("shop-agent", { token: welcome.resumeToken, after: 0 });
    const second = await client(otherWsUrl);
    await second.hello("shop-agent", { token: welcome.resumeToken, after: 0 });
    resumed.send(confirm);
    second.send(confirm);
    expect(await resumed.waitFor(answerTo("c-1"))).toMatchObject({ t: "error", code: "proposal_not_open", path: "proposalId", ref: "c-1" });
    expect(await second.waitFor(answerTo("c-1"))).toMatchObject({ t: "error", code: "proposal_not_open", path: "proposalId", ref: "c-1" });
    // A decline after the fact changes nothing either.
    resumed.send({ t: "in", ref: "d-1", event: { type: "decline", proposalId } });
    expect(await resumed.waitFor(answerTo("d-1"))).toMatchObject({ t: "error", code: "proposal_not_open" });
    expect(stack.backend.cancels("SO-8501")).toHaveLength(1);
    expect((await stack.store.getWrite(proposalId))?.state).toBe("applied");
  });

  it("ten sockets of one conversation on two nodes confirming at once: one ack, nine proposal_not_open, one run", async () => {
    const owner = await client();
    const { welcome, proposalId } = await openProposal(owner, "SO-8502");
    const tabs = await Promise.all(Array.from({ length: 10 }, async (_, i) => {
      const tab = await client(i % 2 === 0 ? stack.wsUrl : otherWsUrl);
      await tab.hello("shop-agent", { token: welcome.resumeToken, after: 0 });
      return tab;
    }));
    tabs.forEach((tab, i) => tab.send({ t: "in", ref: `race-${i}`, event: { type: "confirm", proposalId } }));
    const answers = await Promise.all(tabs.map((tab, i) => tab.waitFor(answerTo(`race-${i}`), 15_000)));
    expect(answers.filter((frame) => frame.t === "ack")).toHaveLength(1);
    expect(answers.filter((frame) => frame.t === "error").map((frame) => (frame as Frame<"error">).code)).toEqual(Array(9).fill("proposal_not_open"));
    await owner.waitFor(outcome("applied"));
    expect(stack.backend.cancels("SO-8502")).toHaveLength(1);
  });
});

describe("a proposal of another conversation, and edits off the card", () => {
  it("a stranger who learned the proposalId cannot confirm or decline it, on either node, even signed in as the same customer", async () => {
    const owner = await client();
    await owner.hello("shop-agent");
    owner.send({ t: "identify", ref: "id-owner", token: signIn("cust-8503") });
    await owner.waitFor(answerTo("id-owner"));
    const proposalId = await proposeCancel(owner, "SO-8503");
    for (const url of [stack.wsUrl, otherWsUrl]) {
      const stranger = await client(url);
      await stranger.hello("shop-agent");
      // Even verified as the same person: a proposal belongs to the conversation it was shown in.
      stranger.send({ t: "identify", ref: "id-stranger", token: signIn("cust-8503") });
      await stranger.waitFor(answerTo("id-stranger"));
      stranger.send({ t: "in", ref: "steal", event: { type: "confirm", proposalId } });
      expect(await stranger.waitFor(answerTo("steal"))).toEqual({ t: "error", code: "proposal_not_found", path: "proposalId", ref: "steal", message: "no such proposal in this conversation" });
      stranger.send({ t: "in", ref: "spoil", event: { type: "decline", proposalId } });
      expect(await stranger.waitFor(answerTo("spoil"))).toMatchObject({ t: "error", code: "proposal_not_found" });
    }
    expect(stack.backend.cancels("SO-8503")).toEqual([]);
    expect((await stack.store.getWrite(proposalId))?.state).toBe("proposed");
  });

  it("edits of fields that are not editable, off the options, out of the schema or not strings are refused by code at their path; the card stays open and confirms as proposed", async () => {
    const c = await client();
    const { proposalId } = await openProposal(c, "SO-8504");
    const attempts: Array<[Record<string, unknown>, string, string]> = [
      [{ "/orderId": "SO-1001" }, "field_not_editable", "edits./orderId"],
      [{ "/card": "4000000000000002" }, "field_not_editable", "edits./card"],
      [{ orderId: "SO-1001" }, "field_not_editable", "edits.orderId"],
      [{ "/amount": "1" }, "field_not_editable", "edits./amount"],
      [{ "/speed": "overnight" }, "option_invalid", "edits./speed"],
      [{ "/reason": "no" }, "edit_invalid", "edits./reason"],
      [{ "/reason": "r".repeat(41) }, "edit_invalid", "edits./reason"],
      [{ "/reason": 42 }, "edit_invalid", "event.edits./reason"],
      [{ "/reason": "r".repeat(OPTION_VALUE_MAX + 1) }, "edit_invalid", "event.edits./reason"],
    ];
    for (const [index, [edits, code, path]] of attempts.entries()) {
      c.send({ t: "in", ref: `e-${index}`, event: { type: "confirm", proposalId, edits } });
      const answer = await c.waitFor(answerTo(`e-${index}`));
      expect(answer, JSON.stringify(edits).slice(0, 60)).toMatchObject({ t: "error", code, path });
    }
    expect(stack.backend.cancels("SO-8504")).toEqual([]);
    expect((await stack.store.getWrite(proposalId))?.state).toBe("proposed");
    // At the schema's limit (40 characters) the edit is taken, and the write runs with exactly it.
    c.send({ t: "in", ref: "ok", event: { type: "confirm", proposalId, edits: { "/reason": "r".repeat(40), "/speed": "express" } } });
    expect(await c.waitFor(answerTo("ok"))).toEqual({ t: "ack", ref: "ok" });
    await c.waitFor(outcome("applied"));
    expect(stack.backend.cancels("SO-8504").map((call) => call.args)).toEqual([{ orderId: "SO-8504", reason: "r".repeat(40), speed: "express", card: "4111111111111234" }]);
  });
});

describe("a token from before sign-in, and a token of another agent", () => {
  it("after sign-in, a socket of the old resume token on another node can neither rate a reply nor stop one: resume_rotated, closed, nothing recorded", async () => {
    const visitor = await client();
    const welcome = await visitor.hello("shop-agent");
    visitor.send({ t: "in", ref: "hi", event: { type: "message", text: "hello" } });
    const reply = await visitor.waitFor(isT("event", (frame) => frame.message.type === "text" && frame.message.from === "agent"));
    // The attacker copied the token before the visitor signed in and keeps a socket open on another node.
    const rater = await client(otherWsUrl);
    await rater.hello("shop-agent", { token: welcome.resumeToken, after: 0 });
    const stopper = await client(otherWsUrl);
    await stopper.hello("shop-agent", { token: welcome.resumeToken, after: 0 });
    visitor.send({ t: "identify", ref: "sign-in", token: signIn("cust-8601") });
    expect(await visitor.waitFor(answerTo("sign-in"))).toMatchObject({ t: "ack" });
    rater.send({ t: "rate", ref: "r-1", seq: reply.seq, rating: "down" });
    expect(await rater.waitFor(answerTo("r-1"))).toMatchObject({ t: "error", code: "resume_rotated", ref: "r-1" });
    await rater.waitFor(() => rater.closed !== undefined).catch(() => undefined);
    expect(rater.closed?.code).toBe(4409);
    expect(await stack.engine.ratings(welcome.conversationId)).toEqual([]);
    stopper.send({ t: "stop", ref: "s-1" });
    expect(await stopper.waitFor(answerTo("s-1"))).toMatchObject({ t: "error", code: "resume_rotated", ref: "s-1" });
    await stopper.waitFor(() => stopper.closed !== undefined).catch(() => undefined);
    expect(stopper.closed?.code).toBe(4409);
  });

  it("a resume token of one agent said in hello to another agent opens a new conversation there; nothing of the first is sent", async () => {
    const shop = await client();
    const { welcome } = await openProposal(shop, "SO-8602");
    const thief = await client();
    thief.send({ t: "hello", v: 1, agent: "other-agent", capabilities: {}, resume: { token: welcome.resumeToken, after: 0 } });
    expect(await thief.waitFor(isT("error", (frame) => frame.code === "resume_invalid"))).toMatchObject({ path: "resume.token" });
    const fresh = await thief.waitFor(isT("welcome"));
    expect(fresh.conversationId).not.toBe(welcome.conversationId);
    expect(fresh.resumeToken).not.toBe(welcome.resumeToken);
    expect(thief.events()).toEqual([]);
  });

  it("an identity token minted for one agent is refused by another agent sharing its secret (audience), and verifies nothing", async () => {
    const c = await client();
    const welcome = await c.hello("other-agent");
    c.send({ t: "identify", ref: "wrong-aud", token: signIn("cust-8603", "shop-agent") });
    expect(await c.waitFor(answerTo("wrong-aud"))).toMatchObject({ t: "error", code: "token_audience_invalid", ref: "wrong-aud" });
    expect((await stack.store.getConversation(welcome.conversationId))?.subject).toBeNull();
    c.send({ t: "identify", ref: "right-aud", token: signIn("cust-8603", "other-agent") });
    expect(await c.waitFor(answerTo("right-aud"))).toMatchObject({ t: "ack" });
  });
});

describe("frames a browser never sends", () => {
  it("malformed JSON, deep nesting, prototype keys as the agent, unknown frame types and binary frames are answered by code; the socket lives on", async () => {
    const c = await client();
    c.send("{not json");
    expect(await c.waitFor(isT("error"))).toMatchObject({ code: "frame_invalid", message: "the frame is not valid JSON" });
    c.send(`${"[".repeat(3000)}${"]".repeat(3000)}`);
    expect(await c.waitFor(() => c.frames.length === 2)).toMatchObject({ t: "error", code: "frame_invalid" });
    for (const agent of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      c.send({ t: "hello", v: 1, agent, capabilities: {} });
      expect(await c.waitFor(isT("error", (frame) => frame.code === "agent_unknown" && frame.message.endsWith(agent)))).toMatchObject({ path: "agent" });
    }
    c.send({ t: "__proto__", ref: "p" });
    expect(await c.waitFor(answerTo("p"))).toMatchObject({ code: "frame_invalid", path: "t" });
    c.ws.send(Buffer.from('{"t":"ping"}'), { binary: true });
    expect(await c.waitFor(isT("error", (frame) => frame.message === "frames are JSON text, not binary"))).toMatchObject({ code: "frame_invalid" });
    c.send("null");
    c.send("[]");
    c.send('"hello"');
    await c.waitFor(() => c.frames.filter((frame) => frame.t === "error").length >= 11);
    // Still open and usable.
    const welcome = await c.hello("shop-agent");
    expect(welcome.conversationId).toBeTruthy();
    expect(c.closed).toBeUndefined();
  });

  it("a flood of 2000 frames is cut to the burst and rate, nothing past the limit is handled, and the socket and its conversation live on", async () => {
    const c = await client();
    const welcome = await c.hello("shop-agent");
    for (let i = 0; i < 2000; i++) c.send({ t: "in", ref: `f-${i}`, event: { type: "message", text: `flood ${i}` } });
    await c.waitFor(() => c.frames.filter((frame) => frame.t === "ack" || frame.t === "error").length >= 2000, 30_000);
    const acked = c.frames.filter((frame) => frame.t === "ack").length;
    const limited = c.frames.filter((frame) => frame.t === "error" && frame.code === "rate_limited").length;
    expect(acked + limited).toBe(2000);
    // Every frame takes a token, the hello too: the burst of 20 leaves 19 for the flood, plus what refills
    // while it is read (at least 20 failed on a quiet machine, where hello and flood took under 100 ms).
    expect(acked).toBeGreaterThanOrEqual(19);
    // The burst, plus 10 per second for however long the flood took to read: far below 2000.
    expect(acked).toBeLessThan(200);
    // Every acked message is stored (the turns queue behind each other), and nothing refused is.
    const customerTexts = async () => (await stack.engine.eventsAfter(welcome.conversationId, 0, 5000)).filter((event) => event.message.type === "text" && event.message.from === "customer");
    for (let waited = 0; (await customerTexts()).length < acked && waited < 200; waited++) await new Promise((resolve) => setTimeout(resolve, 50));
    const refs = new Set(c.frames.flatMap((frame) => (frame.t === "ack" ? [Number(frame.ref.slice(2))] : [])));
    expect((await customerTexts()).map((event) => (event.message as { text: string }).text).sort()).toEqual([...refs].map((i) => `flood ${i}`).sort());
    expect(c.closed).toBeUndefined();
  });
});

describe("a client that sends but does not read", () => {
  type ServerSide = { ws: WebSocket };
  const serverSide = (gateway: Gateway) => [...(gateway as unknown as { connections: Set<ServerSide> }).connections][0]!;
  /** A client of `gateway` that said hello and then stops reading (its socket paused). */
  const pausedClient = async (port: number) => {
    const c = await client(`ws://127.0.0.1:${port}/v1/ws`);
    const welcome = await c.hello("shop-agent");
    const socket = (c.ws as unknown as { _socket: import("node:net").Socket })._socket;
    socket.pause();
    return { c, welcome, socket };
  };
  /** The n-th answer to a ping (a pong or rate_limited): waitFor asks once per frame, in order. */
  const nthAnswer = (n: number) => {
    let seen = 0;
    return (frame: ServerFrame) => (frame.t === "pong" || (frame.t === "error" && frame.code === "rate_limited")) && ++seen === n;
  };

  it("100000 pings sent without reading their answers: the server holds at most about its buffer limit for it (it stops reading), then answers every one once the client reads", async () => {
    // Every frame is answered (a pong, or rate_limited at ten times the frame's size): those answers piled up
    // in the server without bound (15 MB here, growing as long as the client sent) and the socket was never closed.
    const gateway = new Gateway({ engine: stack.engine, releases: stack.releases, limits: { maxBufferedBytes: 64 * 1024 } });
    const { port } = await gateway.listen(0, "127.0.0.1");
    try {
      const { c, welcome, socket } = await pausedClient(port);
      const ping = JSON.stringify({ t: "ping" });
      for (let i = 0; i < 100_000; i++) c.ws.send(ping);
      await new Promise((resolve) => setTimeout(resolve, 500));
      // Past the limit by at most what one read from the socket answers (a 64 KiB read of pings is ~800 KB of answers).
      expect(serverSide(gateway).ws.bufferedAmount).toBeLessThan(1024 * 1024);
      socket.resume();
      await c.waitFor(nthAnswer(100_000), 60_000);
      expect(c.frames.filter((frame) => frame.t === "pong").length).toBeGreaterThanOrEqual(19);
      expect(c.closed).toBeUndefined();
      // The conversation goes on: a message is acked and stored once.
      await new Promise((resolve) => setTimeout(resolve, 200)); // a token for the message
      c.send({ t: "in", ref: "after", event: { type: "message", text: "hello" } });
      expect(await c.waitFor(answerTo("after"))).toEqual({ t: "ack", ref: "after" });
      const customer = (await stack.engine.eventsAfter(welcome.conversationId, 0, 100)).filter((event) => event.message.type === "text" && event.message.from === "customer");
      expect(customer.map((event) => (event.message as { text: string }).text)).toEqual(["hello"]);
    } finally {
      await gateway.close();
    }
  }, 90_000);

  it("one that stays that way past the stall limit is closed with 1013, as a slow reader is", async () => {
    const gateway = new Gateway({ engine: stack.engine, releases: stack.releases, limits: { maxBufferedBytes: 64 * 1024, stallTimeoutMs: 300 } });
    const { port } = await gateway.listen(0, "127.0.0.1");
    try {
      const { c, socket } = await pausedClient(port);
      const ping = JSON.stringify({ t: "ping" });
      for (let i = 0; i < 100_000; i++) c.ws.send(ping);
      const server = serverSide(gateway);
      for (let waited = 0; server.ws.readyState === WebSocket.OPEN && waited < 100; waited++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(server.ws.readyState).toBe(WebSocket.CLOSING);
      socket.resume();
      // Once the client reads, the close completes: the server reads its closing frame (paused, it held the
      // socket for the ws library's 30 s close timeout).
      await c.waitFor(() => c.closed !== undefined, 10_000).catch(() => undefined);
      expect(c.closed?.code).toBe(1013);
    } finally {
      await gateway.close();
    }
  }, 60_000);
});

describe("Origin and Host headers that lie", () => {
  const refusedOrigins = [
    "https://shop.example.evil.example",
    "https://evil.example/https://shop.example",
    "https://shop.example/",
    "https://SHOP.example",
    "https://shop.example:8443",
    "http://shop.example",
    "null",
    "file://",
  ];
  it.each(refusedOrigins)("an upgrade from Origin %s is refused with 403 before any frame", async (origin) => {
    await expect(TestClient.open(stack.wsUrl, origin)).rejects.toThrow("HTTP 403");
  });

  it("a DNS-rebinding page (Host and Origin both its own name, pointing at this server) is refused with 403", async () => {
    const port = new URL(stack.base).port;
    const rebound = await new Promise<number>((resolve) => {
      const ws = new WebSocket(stack.wsUrl, { origin: `http://rebind.example:${port}`, headers: { host: `rebind.example:${port}` } });
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.once("open", () => {
        ws.close();
        resolve(101);
      });
      ws.once("error", () => resolve(-1));
    });
    expect(rebound).toBe(403);
  });
});
