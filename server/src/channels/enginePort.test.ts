// The engine port hands a channel every outbound event of a conversation, in order, once. A failed read of
// the events (the store away) is not the end of that: it is logged and read again, and nothing is lost or
// handed on twice. Runs against the real engine (SQLite) through a view whose event reads fail on demand.
import { afterEach, describe, expect, it } from "vitest";
import { engineHarness, WHATSAPP, type Harness } from "../../../tests/engine/support/harness.ts";
import { EnginePort, type EngineView } from "./enginePort.ts";
import type { ConversationEvent } from "./ports.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("EnginePort.subscribe", () => {
  it("reads the events again after a failed read: every event handed on once, in order", async () => {
    h = await engineHarness({ rules: [], capabilities: WHATSAPP });
    const engine = h.engine;
    let failing = 0;
    const view: EngineView = {
      openConversation: (input) => engine.openConversation(input),
      handle: (conversationId, ownerId, inbound, source) => engine.handle(conversationId, ownerId, inbound, source),
      subscribe: (conversationId, listener) => engine.subscribe(conversationId, listener),
      recordUndelivered: (conversationId, text) => engine.recordUndelivered(conversationId, text),
      conversation: (conversationId) => engine.conversation(conversationId),
      eventsAfter: async (conversationId, after, limit) => {
        if (failing > 0) {
          failing--;
          throw new Error("connection terminated unexpectedly");
        }
        return engine.eventsAfter(conversationId, after, limit);
      },
      pruneInboundSources: (before) => engine.pruneInboundSources(before),
      proposal: (conversationId, proposalId) => engine.proposal(conversationId, proposalId),
      openProposal: (conversationId) => engine.openProposal(conversationId),
      openQuestion: (conversationId) => engine.openQuestion(conversationId),
    };
    const logs: string[] = [];
    const port = new EnginePort({ engine: view, agentFor: () => "shop-agent", agentConfig: () => ({ channels: { whatsapp: {} } }), capabilities: () => WHATSAPP, catchUpRetryMs: 10, log: (line) => void logs.push(line) });
    const conversationId = h.conversation.id;
    const got: ConversationEvent[] = [];
    const unsubscribe = port.subscribe(conversationId, 0, (event) => void got.push(event));
    try {
      await engine.emit(conversationId, { type: "text", id: "m-1", from: "agent", text: "one" });
      for (let i = 0; i < 200 && got.length < 1; i++) await new Promise((r) => setTimeout(r, 5));
      failing = 2;
      await engine.emit(conversationId, { type: "text", id: "m-2", from: "agent", text: "two" });
      await engine.emit(conversationId, { type: "text", id: "m-3", from: "agent", text: "three" });
      for (let i = 0; i < 400 && got.length < 3; i++) await new Promise((r) => setTimeout(r, 5));
      expect(got.map((e) => (e.outbound.type === "text" ? e.outbound.text : e.outbound.type))).toEqual(["one", "two", "three"]);
      expect(got.map((e) => e.seq)).toEqual([...got.map((e) => e.seq)].sort((a, b) => a - b));
      expect(logs.some((l) => l.includes("connection terminated unexpectedly") && l.includes("reading again in 10 ms"))).toBe(true);
    } finally {
      unsubscribe();
    }
  });
});
