// The resume token check before a connection's events are sent (issue #13 item 2, fewer round trips): the
// row the turn's own append read in its transaction answers it, so a read turn reads no conversation for it;
// events this node's appends did not store (another node's, or stored without a row read) are still checked
// against the store, and a replaced token still closes the socket before such an event reaches it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { MemoryBus } from "../../server/src/bus/memoryBus.ts";
import { Gateway } from "../../server/src/gateway/index.ts";
import { TestClient } from "./support/client.ts";
import { ORIGIN, startStack, type Stack } from "./support/stack.ts";

const agentText = (frame: ServerFrame) => frame.t === "event" && frame.message.type === "text" && frame.message.from === "agent";

let stack: Stack;
const bus = new MemoryBus();
/** Conversation reads of the store since the test began (the token check's read is one). */
let reads = 0;
const clients: TestClient[] = [];
async function client(url = stack.wsUrl): Promise<TestClient> {
  const opened = await TestClient.open(url, ORIGIN);
  clients.push(opened);
  return opened;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

beforeAll(async () => {
  // The engine's clock stands still, so a row an append read is never too old; the gateway checks the token
  // before every batch of events it sends (resumeCheckMs 0), so every batch needs an answer.
  const at = Date.now();
  stack = await startStack({ bus, now: () => at, gateway: { limits: { resumeCheckMs: 0 } } });
  const getConversation = stack.store.getConversation.bind(stack.store);
  stack.store.getConversation = (id: string) => {
    reads += 1;
    return getConversation(id);
  };
});
afterAll(async () => stack?.close());

describe("the resume token check before events are sent", () => {
  it("a new conversation's read turn reads no conversation: its owner is known from its opening, its events' token check from the row its own appends read", async () => {
    const c = await client();
    await c.hello("shop-agent");
    reads = 0;
    c.send({ t: "in", ref: "r1", event: { type: "message", text: "where is order SO-1234" } });
    await c.waitFor(agentText);
    await stack.engine.idle();
    expect(c.events().map((event) => event.message.type)).toEqual(["text", "progress", "progress", "result", "text"]);
    expect(reads).toBe(0);
  });

  it("an event no append of this node read the row for is checked against the store; once the token is replaced on another node, no event reaches the old socket", async () => {
    const c = await client();
    const welcome = await c.hello("shop-agent");
    c.send({ t: "in", ref: "r1", event: { type: "message", text: "where is order SO-1234" } });
    await c.waitFor(agentText);
    await stack.engine.idle();
    reads = 0;
    // A single event stored without a row read: the token is checked against the store.
    await stack.engine.emit(welcome.conversationId, { type: "text", id: "m_notice", from: "system", text: "a notice" });
    await c.waitFor((frame) => frame.t === "event" && frame.message.id === "m_notice");
    expect(reads).toBeGreaterThan(0);
    // Another node replaces the token (its visitor signed in there); then this node appends (a team member takes
    // over): its append reads the new hash, which does not vouch for the old one, so the store says no and the socket closes.
    const before = (await stack.store.getConversation(welcome.conversationId))!.resumeHash!;
    expect(await stack.store.rotateResumeHash(welcome.conversationId, before, "replaced-on-another-node-1")).toBe(true);
    expect(await stack.engine.takeOver(welcome.conversationId, "ana")).toEqual({ ok: true });
    await c.waitFor(() => c.closed !== undefined).catch(() => undefined);
    expect(c.closed?.code).toBe(4409);
    expect(c.events().some((event) => event.message.type === "handoff")).toBe(false);
  });

  it("an old token's socket is closed before an event another node stored reaches it", async () => {
    const c = await client();
    const welcome = await c.hello("shop-agent");
    c.send({ t: "in", ref: "r1", event: { type: "message", text: "where is order SO-1234" } });
    await c.waitFor(agentText);
    await stack.engine.idle();
    const before = (await stack.store.getConversation(welcome.conversationId))!.resumeHash!;
    expect(await stack.store.rotateResumeHash(welcome.conversationId, before, "replaced-on-another-node-2")).toBe(true);
    // Stored by another node (straight into the store) and announced on the bus: its seq is past what this node's appends read.
    const stored = await stack.store.appendEvent(welcome.conversationId, { type: "text", id: "m_other_node", from: "system", text: "for the signed-in customer only" }, Date.now());
    await bus.publish(welcome.conversationId, { seq: stored.seq });
    await c.waitFor(() => c.closed !== undefined).catch(() => undefined);
    expect(c.closed?.code).toBe(4409);
    expect(c.events().some((event) => event.message.id === "m_other_node")).toBe(false);
  });

  describe("on a node that trusts a check for a minute (resumeCheckMs 60,000)", () => {
    let trusting: Gateway;
    let trustingUrl: string;
    beforeAll(async () => {
      trusting = new Gateway({ engine: stack.engine, releases: stack.releases, limits: { resumeCheckMs: 60_000 } });
      trustingUrl = `ws://127.0.0.1:${(await trusting.listen(0, "127.0.0.1")).port}/v1/ws`;
    });
    afterAll(async () => trusting?.close());

    it("a token just found current is checked again before an event another node stored after a sign-in there: the old socket is closed, never sent it", async () => {
      const c = await client(trustingUrl);
      const welcome = await c.hello("shop-agent");
      c.send({ t: "in", ref: "r1", event: { type: "message", text: "where is order SO-1234" } });
      await c.waitFor(agentText);
      await stack.engine.idle();
      // The token was found current a moment ago (the turn's own append read it); then the visitor signs in on
      // another node, which stores an event for the signed-in customer.
      const before = (await stack.store.getConversation(welcome.conversationId))!.resumeHash!;
      expect(await stack.store.rotateResumeHash(welcome.conversationId, before, "replaced-on-another-node-3")).toBe(true);
      const stored = await stack.store.appendEvent(welcome.conversationId, { type: "text", id: "m_right_after", from: "system", text: "for the signed-in customer only" }, Date.now());
      await bus.publish(welcome.conversationId, { seq: stored.seq });
      await c.waitFor(() => c.closed !== undefined).catch(() => undefined);
      expect(c.closed?.code).toBe(4409);
      expect(c.events().some((event) => event.message.id === "m_right_after")).toBe(false);
    });

    it("a reply written on this node after the visitor signed in on another node does not stream to a socket of the old token: no part of it, then closed at its stored event", async () => {
      const old = await client(trustingUrl);
      const welcome = await old.hello("shop-agent");
      old.send({ t: "in", ref: "r1", event: { type: "message", text: "where is order SO-1234" } });
      await old.waitFor(agentText);
      await stack.engine.idle();
      const streamedBefore = old.frames.filter((frame) => frame.t === "delta").length;
      expect(streamedBefore).toBeGreaterThan(0); // the token's own reply streamed to it
      // Signed in on another node: the new token's socket then writes here, and its turn runs on this node.
      const conversation = (await stack.store.getConversation(welcome.conversationId))!;
      expect(await stack.store.rotateResumeHash(welcome.conversationId, conversation.resumeHash!, "signed-in-elsewhere")).toBe(true);
      // The old socket's check of that turn's first event against the store is held until the reply is
      // written, so the socket is still open while the parts stream.
      const resumeCurrent = stack.engine.resumeCurrent.bind(stack.engine);
      let answer!: () => void;
      const held = new Promise<void>((resolve) => (answer = resolve));
      stack.engine.resumeCurrent = async (id, hash) => {
        await held;
        return resumeCurrent(id, hash);
      };
      try {
        const handled = await stack.engine.handle(welcome.conversationId, conversation.ownerId, { type: "message", text: "where is order SO-1234" }, { resumeHash: "signed-in-elsewhere" });
        expect(handled).toMatchObject({ ok: true });
        await stack.engine.idle();
        expect(old.closed).toBeUndefined();
      } finally {
        answer();
        stack.engine.resumeCurrent = resumeCurrent;
      }
      await old.waitFor(() => old.closed !== undefined).catch(() => undefined);
      expect(old.closed?.code).toBe(4409);
      expect(old.frames.filter((frame) => frame.t === "delta")).toHaveLength(streamedBefore);
      expect(old.events().filter(agentText)).toHaveLength(1);
    });
  });
});
