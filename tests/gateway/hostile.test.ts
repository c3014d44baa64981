// The gateway against a hostile client with the real `ws` library (issue #14, item 3): every error frame that
// answers a frame carries its ref (a rate-limited confirm too), a ref over the limit is refused rather than
// echoed cut short, unknown frames get plain words, prototype keys in edits are refused with edit_invalid,
// a replayed confirm runs nothing, a confirm is acked when recorded (not after a hanging tool), and the
// resume token is replaced when the visitor signs in (an older token neither resumes nor keeps a socket).
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FRAME_REF_MAX, type ServerFrame } from "@caplo/shared";
import { Gateway } from "../../server/src/gateway/index.ts";
import { mintIdentityToken } from "../../server/src/identity/index.ts";
import type { ToolCallRequest } from "../../server/src/runner/api.ts";
import { answerTo, isT, OpenClients, openProposal, proposeCancel, TestClient, type Frame } from "./support/client.ts";
import { hs256Identity, ORIGIN, otherSiteRelease, shopRelease, startStack, type Stack } from "./support/stack.ts";


const HS_SECRET = "a-hostile-test-identity-secret-of-32-bytes!!";
let stack: Stack;
/** The rate limit's clock: real time, unless a test holds it still. */
let clock: number | undefined;
const clients = new OpenClients();
const client = (url = stack.wsUrl, origin = ORIGIN): Promise<TestClient> => clients.open(url, origin);
afterEach(() => clients.closeAll());

beforeAll(async () => {
  stack = await startStack({
    gateway: { now: () => clock ?? Date.now(), secrets: (name) => (name === "IDENTITY_SECRET" ? HS_SECRET : undefined) },
    releases: (version) => [shopRelease(version, { identity: hs256Identity("IDENTITY_SECRET") }), otherSiteRelease(version)],
  });
});
afterAll(async () => stack?.close());

describe("refs on error frames", () => {
  it("a rate-limited confirm is answered rate_limited with its ref, and the same confirm sent again later runs once", async () => {
    const c = await client();
    const { proposalId } = await openProposal(c, "SO-8101");
    clock = Date.now() + 60_000; // a full bucket (20), then time stands still
    try {
      for (let i = 0; i < 20; i++) c.send({ t: "ping" });
      c.send({ t: "in", ref: "confirm-1", event: { type: "confirm", proposalId } });
      expect(await c.waitFor(answerTo("confirm-1"))).toMatchObject({ t: "error", code: "rate_limited", ref: "confirm-1" });
      expect(stack.backend.cancels("SO-8101")).toEqual([]);
      clock += 1000;
      c.send({ t: "in", ref: "confirm-2", event: { type: "confirm", proposalId } });
      expect(await c.waitFor(answerTo("confirm-2"))).toMatchObject({ t: "ack" });
    } finally {
      clock = undefined;
    }
    await c.waitFor(isT("event", (frame) => frame.message.type === "outcome" && frame.message.state === "applied"));
    expect(stack.backend.cancels("SO-8101")).toHaveLength(1);
  });

  it(`a ref of ${FRAME_REF_MAX + 1} characters is refused without being echoed (nothing is stored); one of ${FRAME_REF_MAX} is acked as sent`, async () => {
    const c = await client();
    const welcome = await c.hello("shop-agent");
    c.send({ t: "in", ref: "r".repeat(FRAME_REF_MAX + 1), event: { type: "message", text: "hello from a long ref" } });
    const refused = await c.waitFor(isT("error", (frame) => frame.path === "ref"));
    expect(refused).toEqual({ t: "error", code: "frame_invalid", path: "ref", message: `ref is at most ${FRAME_REF_MAX} characters; this one had ${FRAME_REF_MAX + 1}` });
    const exact = "e".repeat(FRAME_REF_MAX);
    c.send({ t: "in", ref: exact, event: { type: "message", text: "hello from an exact ref" } });
    await c.waitFor(isT("ack", (frame) => frame.ref === exact));
    const texts = (await stack.engine.eventsAfter(welcome.conversationId, 0)).flatMap((event) => (event.message.type === "text" && event.message.from === "customer" ? [event.message.text] : []));
    expect(texts).toEqual(["hello from an exact ref"]);
    // Not a string either: refused by itself, never echoed.
    c.send({ t: "in", ref: { x: 1 }, event: { type: "message", text: "hi" } });
    expect(await c.waitFor(isT("error", (frame) => frame.message === "ref must be a string"))).not.toHaveProperty("ref");
  });

  it("a frame too large is answered with its ref; unknown frame and event types get plain words with the ref", async () => {
    const c = await client();
    await c.hello("shop-agent");
    c.send({ t: "in", ref: "big", event: { type: "message", text: "x".repeat(40_000) } });
    expect(await c.waitFor(answerTo("big"))).toMatchObject({ code: "frame_too_large" });
    c.send({ t: "launch", ref: "l1" });
    expect(await c.waitFor(answerTo("l1"))).toEqual({ t: "error", code: "frame_invalid", path: "t", ref: "l1", message: 'unknown frame type "launch": a client sends one of hello, in, identify, ping, stop, rate' });
    c.send({ t: "in", ref: "e1", event: { type: "refund" } });
    expect(await c.waitFor(answerTo("e1"))).toMatchObject({ code: "frame_invalid", path: "event.type", message: 'unknown event type "refund": one of message, confirm, decline, answer' });
    c.send({ t: "in", ref: "e2", event: { type: "message" } });
    expect(await c.waitFor(answerTo("e2"))).toMatchObject({ path: "event.text", message: "event.text is required" });
    expect(c.closed).toBeUndefined();
  });

  it("a text frame that is not valid UTF-8 closes the socket with 1007", async () => {
    const c = await client();
    await c.hello("shop-agent");
    c.ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
    await c.waitFor(() => c.closed !== undefined).catch(() => undefined);
    expect(c.closed?.code).toBe(1007);
  });
});

describe("confirms", () => {
  it("edits keyed __proto__, constructor or prototype (plain, JSON-escaped, nested, as a path segment) are refused with edit_invalid and nothing runs", async () => {
    const c = await client();
    const { proposalId } = await openProposal(c, "SO-8201");
    const frames = [
      `{"t":"in","ref":"p1","event":{"type":"confirm","proposalId":"${proposalId}","edits":{"__proto__":"x"}}}`,
      `{"t":"in","ref":"p2","event":{"type":"confirm","proposalId":"${proposalId}","edits":{"\\u005f\\u005fproto__":"x"}}}`,
      `{"t":"in","ref":"p3","event":{"type":"confirm","proposalId":"${proposalId}","edits":{"constructor":"x"}}}`,
      `{"t":"in","ref":"p4","event":{"type":"confirm","proposalId":"${proposalId}","edits":{"prototype":"x"}}}`,
      `{"t":"in","ref":"p5","event":{"type":"confirm","proposalId":"${proposalId}","edits":{"/reason":{"__proto__":{"polluted":"yes"}}}}}`,
      `{"t":"in","ref":"p6","event":{"type":"confirm","proposalId":"${proposalId}","edits":{"/reason/__proto__":"x"}}}`,
      `{"t":"in","ref":"p7","event":{"type":"confirm","proposalId":"${proposalId}","edits":{"__proto__":{"/reason":"y"}}}}`,
    ];
    for (const [index, frame] of frames.entries()) {
      c.send(frame);
      const answer = await c.waitFor(answerTo(`p${index + 1}`));
      expect(answer, frame).toMatchObject({ t: "error", code: "edit_invalid" });
      expect((answer as Frame<"error">).path, frame).toMatch(/^event\.edits\./);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(stack.backend.cancels("SO-8201")).toEqual([]);
    expect((await stack.store.getWrite(proposalId))?.state).toBe("proposed");
  });

  it("a confirm is acked once recorded, while its tool still hangs; the outcome arrives as events after; a replay of the frame runs nothing", async () => {
    const c = await client();
    const { proposalId } = await openProposal(c, "SO-8301");
    const runner = stack.runner;
    const call = runner.call.bind(runner);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered = false;
    runner.call = async (request: ToolCallRequest) => {
      if (request.tool === "cancel_order" && (request.args as { orderId?: string }).orderId === "SO-8301") {
        entered = true;
        await held;
      }
      return call(request);
    };
    try {
      const frame = { t: "in", ref: "hang", event: { type: "confirm", proposalId } };
      c.send(frame);
      await c.waitFor(isT("ack", (ack) => ack.ref === "hang"));
      await c.waitFor(() => entered);
      expect(c.frames.some((f) => f.t === "event" && f.message.type === "outcome")).toBe(false);
      // The same frame again (a replay) while the write runs (answered once the write is done), and after:
      // refused with its ref, and nothing runs again.
      c.send(frame);
      release();
      expect(await c.waitFor((f) => f.t === "error" && f.ref === "hang")).toMatchObject({ code: "proposal_not_open" });
      await c.waitFor(isT("event", (f) => f.message.type === "outcome" && f.message.state === "applied"));
      await c.waitFor(isT("event", (f) => f.message.type === "text" && f.message.from === "agent" && f.message.text.startsWith("Done")));
      c.send(frame);
      await c.waitFor(() => c.frames.filter((f) => f.t === "error" && f.ref === "hang").length === 2);
      expect(c.frames.filter((f) => f.t === "ack" && f.ref === "hang")).toHaveLength(1);
      expect(stack.backend.cancels("SO-8301")).toHaveLength(1);
    } finally {
      runner.call = call;
      release();
    }
  });
});

describe("the resume token is replaced when the visitor signs in", () => {
  it("identify's ack carries a new token: the old one starts a new conversation, the new one resumes the verified one; sockets of the old token are closed (4409) on this node and refused on another", async () => {
    // Another node's gateway (same store and bus); it checks the token before every batch of events it sends.
    const other = new Gateway({ engine: stack.engine, releases: stack.releases, limits: { resumeCheckMs: 0 } });
    const address = await other.listen(0, "127.0.0.1");
    try {
      const c = await client();
      const welcome = await c.hello("shop-agent");
      const before = welcome.resumeToken;
      // An attacker holding the token from before sign-in, on this node and on another node.
      const sameNode = await client();
      await sameNode.hello("shop-agent", { token: before, after: 0 });
      const otherNode = await client(`ws://127.0.0.1:${address.port}/v1/ws`);
      await otherNode.hello("shop-agent", { token: before, after: 0 });
      const otherTalker = await client(`ws://127.0.0.1:${address.port}/v1/ws`);
      await otherTalker.hello("shop-agent", { token: before, after: 0 });
      const listener = await client(`ws://127.0.0.1:${address.port}/v1/ws`);
      await listener.hello("shop-agent", { token: before, after: 0 });
      const proposalId = await proposeCancel(c, "SO-8401");
      c.send({ t: "identify", ref: "i1", token: mintIdentityToken({ algorithm: "HS256", secret: HS_SECRET, claims: { sub: "cust-8401", level: "standard" } }) });
      const ack = await c.waitFor(isT("ack", (frame) => frame.ref === "i1"));
      expect(ack.resumeToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(ack.resumeToken).not.toBe(before);
      await sameNode.waitFor(() => sameNode.closed !== undefined).catch(() => undefined);
      expect(sameNode.closed).toEqual({ code: 4409, reason: "resume token replaced" });
      expect(sameNode.frames.at(-1)).toMatchObject({ t: "error", code: "resume_rotated" });
      // On the other node the old token's socket is refused at its next action, and nothing runs.
      otherNode.send({ t: "in", ref: "steal", event: { type: "confirm", proposalId } });
      expect(await otherNode.waitFor(answerTo("steal"))).toMatchObject({ t: "error", code: "resume_rotated" });
      await otherNode.waitFor(() => otherNode.closed !== undefined).catch(() => undefined);
      expect(otherNode.closed?.code).toBe(4409);
      expect((await stack.store.getWrite(proposalId))?.state).toBe("proposed");
      // A message from the old token on the other node is refused where it would be stored: never acked, never stored, never answered.
      const customerTexts = async () => (await stack.store.listEvents(welcome.conversationId, 0)).filter((event) => event.message.type === "text" && event.message.from === "customer").length;
      const textsBefore = await customerTexts();
      otherTalker.send({ t: "in", ref: "steal-text", event: { type: "message", text: "where is order SO-1001" } });
      expect(await otherTalker.waitFor(answerTo("steal-text"))).toMatchObject({ t: "error", code: "resume_rotated" });
      await otherTalker.waitFor(() => otherTalker.closed !== undefined).catch(() => undefined);
      expect(otherTalker.closed?.code).toBe(4409);
      expect(otherTalker.frames.some((frame) => frame.t === "ack")).toBe(false);
      await stack.engine.idle();
      expect(await customerTexts()).toBe(textsBefore);
      // A socket of the old token that only listens is closed before the next event reaches it.
      await stack.engine.emit(welcome.conversationId, { type: "text", id: "m_after_sign_in", from: "system", text: "for the signed-in customer only" });
      await c.waitFor(isT("event", (frame) => frame.message.id === "m_after_sign_in"));
      await listener.waitFor(() => listener.closed !== undefined).catch(() => undefined);
      expect(listener.closed?.code).toBe(4409);
      expect(listener.events().some((event) => event.message.id === "m_after_sign_in")).toBe(false);
      // The old token no longer resumes: a new, unverified conversation; the new one resumes the verified one.
      const stale = await client();
      stale.send({ t: "hello", v: 1, agent: "shop-agent", capabilities: {}, resume: { token: before, after: 0 } });
      await stale.waitFor(isT("error", (frame) => frame.code === "resume_invalid"));
      const fresh = await stale.waitFor(isT("welcome"));
      expect(fresh.conversationId).not.toBe(welcome.conversationId);
      expect(fresh.verified).toBe(false);
      const again = await client();
      const resumed = await again.hello("shop-agent", { token: ack.resumeToken!, after: 0 });
      expect(resumed).toMatchObject({ conversationId: welcome.conversationId, verified: true, resumeToken: ack.resumeToken });
      // The connection that signed in carries on.
      c.send({ t: "in", ref: "after", event: { type: "message", text: "hello" } });
      await c.waitFor(isT("ack", (frame) => frame.ref === "after"));
    } finally {
      await other.close();
    }
  });
});
