// Turns a lost node owed (its process died mid-turn) are taken over with `engine.recover(lostNodeId)`, as a
// cluster survivor does: run again from where their stored steps end, never repeating a write the turn had
// stored, and never run at all when the turn had finished. The lost node's state is built in the real store
// exactly as its engine stores it (the customer's input with the owed turn, then each step's append).
import { afterEach, describe, expect, it } from "vitest";
import type { ModelToolCall } from "../../server/src/model/model.ts";
import { INTERRUPTED_NOTE } from "../../server/src/engine/engine.ts";
import { CANCEL, engineHarness, type Harness } from "./support/harness.ts";
import { ORDERS } from "./support/shopTools.ts";

const LOST = "node-lost";
let h: Harness;
afterEach(async () => h?.close());

/** The lost node stored the customer's input (owing its turn) and the model's step calling `call`. */
async function interruptedAt(text: string, call: ModelToolCall): Promise<void> {
  await h.store.append(h.conversation.id, { events: [{ type: "text", id: "m_in", from: "customer", text }], transcript: [{ role: "user", content: text }], owedBy: LOST }, h.clock.now);
  await h.store.append(h.conversation.id, { transcript: [{ role: "assistant", content: "", toolCalls: [call] }] }, h.clock.now);
}

const roles = async () => (await h.store.listTranscript(h.conversation.id)).map((entry) => entry.message.role);

describe("taking over the turns of a lost node", () => {
  it("a read cut short: its progress ends, the call is recorded as interrupted, and the model answers once", async () => {
    h = await engineHarness({ rules: [{ when: /order (SO-\d{4})/, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: "It ships today." }] }] });
    const call = { id: "call_read", name: "shop__get_order", arguments: JSON.stringify({ orderId: ORDERS.applied }) };
    await interruptedAt(`order ${ORDERS.applied}`, call);
    await h.store.append(h.conversation.id, { events: [{ type: "progress", id: "m_p", callId: call.id, state: "start", label: "Looking up your order" }] }, h.clock.now);

    await h.engine.recover(LOST);
    await h.engine.idle();
    const progress = (await h.ofType("progress")).map((event) => event.state);
    expect(progress).toEqual(["start", "end"]);
    expect((await h.ofType("text")).filter((event) => event.from === "agent").map((event) => event.text)).toEqual(["It ships today."]);
    expect(await roles()).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(await h.modelNotes()).toEqual([INTERRUPTED_NOTE]);
    expect(await h.store.listOwedTurns(LOST, 10)).toEqual([]);
    expect(await h.store.listOwedTurns("node-test", 10)).toEqual([]);
    // Taking the lost node over again finds nothing owed: the turn does not run twice.
    await h.engine.recover(LOST);
    await h.engine.idle();
    expect(await roles()).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  it("a proposal stored before its card was shown: the card is shown once, the turn ends as it would have, nothing runs", async () => {
    h = await engineHarness({ rules: [{ when: /cancel/, replies: [{ toolCalls: [CANCEL(ORDERS.applied)] }, { text: "should not be said" }] }] });
    const call = { id: "call_write", name: CANCEL(ORDERS.applied).name, arguments: JSON.stringify(CANCEL(ORDERS.applied).args) };
    await interruptedAt(`cancel ${ORDERS.applied}`, call);
    const release = h.release.tools.find((tool) => tool.modelName === call.name)!;
    const write = await h.store.insertWrite({
      id: "p_lost",
      conversationId: h.conversation.id,
      turnId: "t_lost",
      callId: call.id,
      toolRef: release.ref,
      modelName: release.modelName,
      packageVersionId: release.packageVersionId,
      tool: release.tool,
      args: CANCEL(ORDERS.applied).args,
      state: "proposed",
      confirmation: "required",
      ownerId: "owner-1",
      subjectId: null,
      createdAt: h.clock.now,
    });

    await h.engine.recover(LOST);
    await h.engine.idle();
    expect((await h.ofType("review")).map((event) => event.proposalId)).toEqual([write.id]);
    expect(await roles()).toEqual(["user", "assistant", "tool"]);
    expect((await h.modelNotes())[0]).toMatch(/^proposed: .*p_lost/);
    expect((await h.ofType("text")).filter((event) => event.from === "agent")).toEqual([]);
    expect(h.backend.invocations).toEqual([]);
    expect((await h.store.getWrite(write.id))?.state).toBe("proposed");
    expect(await h.store.listOwedTurns("node-test", 10)).toEqual([]);
  });

  it("a write without confirmation that was running: it becomes unknown and is never sent again; the model is told and continues", async () => {
    h = await engineHarness({ rules: [{ when: /note/, replies: [{ toolCalls: [{ name: "shop__add_note", args: { text: "call me" } }] }, { text: "{{tool}}" }] }] });
    const call = { id: "call_note", name: "shop__add_note", arguments: JSON.stringify({ text: "call me" }) };
    await interruptedAt("please add a note", call);
    const tool = h.release.tools.find((candidate) => candidate.modelName === call.name)!;
    const stored = await h.store.insertWrite({
      id: "p_note",
      conversationId: h.conversation.id,
      turnId: "t_lost",
      callId: call.id,
      toolRef: tool.ref,
      modelName: tool.modelName,
      packageVersionId: tool.packageVersionId,
      tool: tool.tool,
      args: { text: "call me" },
      state: "proposed",
      confirmation: "none",
      ownerId: "owner-1",
      subjectId: null,
      createdAt: h.clock.now,
    });
    await h.store.transitionWrite(stored.id, { states: ["proposed"] }, { state: "confirmed", finalArgs: { text: "call me" }, idempotencyKey: "ik_lost", nodeId: LOST }, h.clock.now);
    await h.store.transitionWrite(stored.id, { states: ["confirmed"] }, { state: "running", nodeId: LOST }, h.clock.now);

    await h.engine.recover(LOST);
    await h.engine.idle();
    expect((await h.store.getWrite(stored.id))?.state).toBe("unknown");
    expect(h.backend.invocations).toEqual([]);
    const transcript = (await h.store.listTranscript(h.conversation.id)).map((entry) => entry.message);
    const result = transcript.find((message) => message.role === "tool");
    expect(result).toMatchObject({ toolCallId: call.id });
    expect(result!.content).toMatch(/unknown/);
    expect(transcript.at(-1)).toMatchObject({ role: "assistant" });
    expect(await h.store.listOwedTurns("node-test", 10)).toEqual([]);
  });

  it("a turn that had finished (its answer stored) is not run again", async () => {
    h = await engineHarness({ rules: [{ when: "hello", replies: [{ text: "Hi!" }] }] });
    await h.store.append(h.conversation.id, { events: [{ type: "text", id: "m_in", from: "customer", text: "hello" }], transcript: [{ role: "user", content: "hello" }], owedBy: LOST }, h.clock.now);
    await h.store.append(h.conversation.id, { events: [{ type: "text", id: "m_out", from: "agent", text: "Hi!" }], transcript: [{ role: "assistant", content: "Hi!" }] }, h.clock.now);
    const before = (await h.events()).length;

    await h.engine.recover(LOST);
    await h.engine.idle();
    expect((await h.events()).length).toBe(before);
    expect(await roles()).toEqual(["user", "assistant"]);
    expect(await h.store.listOwedTurns("node-test", 10)).toEqual([]);
  });

  it("a turn taken over while it ran (its node stalled) stops at its next step: the node that took it over answers, not both", async () => {
    h = await engineHarness({ rules: [{ when: "reach", replies: [{ toolCalls: [{ name: "shop__contact", args: {} }] }, { text: "late: {{tool}}" }] }] });
    const turn = h.say("please reach me");
    // The turn waits inside its read for the customer's answer; meanwhile another node takes the turn over.
    let question;
    while (!(question = (await h.ofType("question"))[0])) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await h.store.claimOwedTurns("node-test", "node-other", 10)).toMatchObject([{ conversationId: h.conversation.id, nodeId: "node-other" }]);
    await h.engine.handle(h.conversation.id, "owner-1", { type: "answer", elicitationId: question.elicitationId, action: "accept", content: { email: "a@b.example" } });
    expect(await turn).toEqual({ ok: true });
    // The read's result is kept, but this node asks the model nothing more and leaves the turn to its new owner.
    expect((await h.ofType("text")).filter((event) => event.from === "agent")).toEqual([]);
    expect(await roles()).toEqual(["user", "assistant", "tool"]);
    expect(await h.store.listOwedTurns("node-other", 10)).toMatchObject([{ conversationId: h.conversation.id }]);
  });

  it("a message answered normally owes nothing afterwards", async () => {
    h = await engineHarness({ rules: [{ when: "hello", replies: [{ text: "Hi!" }] }] });
    await h.say("hello");
    expect(await h.store.listOwedTurns("node-test", 10)).toEqual([]);
  });
});
