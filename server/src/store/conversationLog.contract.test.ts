// The conversation log's contract (ConversationLogPort: conversations, their customer-visible events and
// transcript, and the turns they owe), on SQLite and on PostgreSQL: seqs contiguous per conversation even
// from two nodes at once, a batch all or nothing, conversations found by resume hash and channel identity,
// the resume hash rotated by compare-and-set, and an owed turn finished or claimed exactly once.
import { randomBytes } from "node:crypto";
import { expect, it } from "vitest";
import type { Outbound } from "@caplo/shared";
import { CAPABILITIES, describeEachStore, text, uid } from "./testing/storeHarness.ts";

describeEachStore("Conversation log contract", ({ store, second, conversation }) => {
  it("events get seq 1, 2, 3 per conversation, independently of other conversations", async () => {
    const a = await conversation();
    const b = await conversation();
    expect((await store.appendEvent(a.id, text("a1"), 1)).seq).toBe(1);
    expect((await store.appendEvent(b.id, text("b1"), 1)).seq).toBe(1);
    expect((await store.appendEvent(a.id, text("a2"), 2)).seq).toBe(2);
    expect((await store.appendEvent(a.id, text("a3"), 3)).seq).toBe(3);
    const after1 = await store.listEvents(a.id, 1);
    expect(after1.map((event) => [event.seq, event.message.type === "text" ? event.message.text : ""])).toEqual([
      [2, "a2"],
      [3, "a3"],
    ]);
    expect((await store.getConversation(a.id))?.lastSeq).toBe(3);
  });

  it("concurrent appends from two store instances give contiguous seqs with no duplicate", async () => {
    const c = await conversation();
    await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? store : second).appendEvent(c.id, text(`m${i}`), i)));
    const events = await store.listEvents(c.id, 0);
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(new Set(events.map((event) => (event.message.type === "text" ? event.message.text : ""))).size).toBe(40);
  });

  it("latestSeqs gives each existing conversation's last seq in one query, none for unknown ids", async () => {
    const a = await conversation();
    const b = await conversation();
    const quiet = await conversation();
    await store.append(a.id, { events: [text("a1"), text("a2"), text("a3")] }, 1);
    await second.appendEvent(b.id, text("b1"), 1);
    const seqs = await store.latestSeqs([a.id, b.id, quiet.id, "no-such-conversation"]);
    expect(Object.fromEntries(seqs)).toEqual({ [a.id]: 3, [b.id]: 1, [quiet.id]: 0 });
    expect((await store.latestSeqs([])).size).toBe(0);
  });

  it("an append to a missing conversation fails and stores nothing", async () => {
    await expect(store.appendEvent("no-such-conversation", text("x"), 1)).rejects.toThrow(/no conversation/);
    expect(await store.listEvents("no-such-conversation", 0)).toEqual([]);
  });

  it("the transcript is append-only with its own seq", async () => {
    const c = await conversation();
    await store.appendEvent(c.id, text("visible"), 1);
    await store.appendTranscript(c.id, { role: "user", content: "hi" }, 1);
    await store.appendTranscript(c.id, { role: "assistant", content: "", toolCalls: [{ id: "x", name: "a__b", arguments: "{}" }] }, 2);
    const transcript = await store.listTranscript(c.id);
    expect(transcript.map((entry) => [entry.seq, entry.message.role])).toEqual([
      [1, "user"],
      [2, "assistant"],
    ]);
  });

  it("a batch appends events and transcript entries together, with the next seqs of each, and returns the conversation after it", async () => {
    const c = await conversation();
    await store.appendEvent(c.id, text("e1"), 1);
    await store.appendTranscript(c.id, { role: "user", content: "t1" }, 1);
    const batch = await store.append(c.id, { events: [text("e2"), text("e3")], transcript: [{ role: "assistant", content: "t2" }, { role: "tool", toolCallId: "x", name: "a__b", content: "t3" }] }, 7);
    expect(batch.events.map((event) => [event.seq, event.at])).toEqual([
      [2, 7],
      [3, 7],
    ]);
    expect(batch.transcript.map((entry) => entry.seq)).toEqual([2, 3]);
    expect(batch.conversation).toMatchObject({ id: c.id, lastSeq: 3, lastTranscriptSeq: 3, capabilities: CAPABILITIES });
    // A batch of one kind only, from the other store instance, continues both sequences.
    const more = await second.append(c.id, { transcript: [{ role: "assistant", content: "t4" }] }, 8);
    expect(more.events).toEqual([]);
    expect(more.conversation).toMatchObject({ lastSeq: 3, lastTranscriptSeq: 4 });
    expect((await store.listEvents(c.id, 0)).map((event) => (event.message.type === "text" ? event.message.text : ""))).toEqual(["e1", "e2", "e3"]);
    expect((await store.listTranscript(c.id)).map((entry) => entry.message.content)).toEqual(["t1", "t2", "t3", "t4"]);
    expect((await store.listTranscript(c.id, 2)).map((entry) => [entry.seq, entry.message.content])).toEqual([
      [3, "t3"],
      [4, "t4"],
    ]);
    expect((await store.getConversation(c.id))?.lastTranscriptSeq).toBe(4);
    // Text that array and JSON encodings must both carry exactly.
    const tricky = 'say "hi", {x} [y] \\ back\\slash\nnew line, ünïcödé 🙂 NULL \'q\'';
    const odd = await store.append(c.id, { events: [text(tricky)], transcript: [{ role: "user", content: tricky }] }, 9);
    expect(odd.events[0]!.seq).toBe(4);
    expect((await second.listEvents(c.id, 3)).map((event) => (event.message.type === "text" ? event.message.text : ""))).toEqual([tricky]);
    expect((await second.listTranscript(c.id, 4)).map((entry) => entry.message.content)).toEqual([tricky]);
  });

  it("a batch is all or nothing: one item that cannot be stored leaves no event, no entry and no seq used", async () => {
    const c = await conversation();
    await store.appendEvent(c.id, text("before"), 1);
    const unstorable = { ...text("bad"), size: 1n } as unknown as Outbound; // JSON cannot encode a bigint
    await expect(store.append(c.id, { events: [text("ok"), unstorable], transcript: [{ role: "user", content: "lost" }] }, 2)).rejects.toThrow(/BigInt/);
    expect((await store.listEvents(c.id, 0)).length).toBe(1);
    expect(await store.listTranscript(c.id)).toEqual([]);
    expect(await store.getConversation(c.id)).toMatchObject({ lastSeq: 1, lastTranscriptSeq: 0 });
    await expect(store.append("no-such-conversation", { events: [text("x")] }, 1)).rejects.toThrow(/no conversation/);
    expect(await store.listEvents("no-such-conversation", 0)).toEqual([]);
  });

  it("batches asked for at once each succeed or fail on their own (a bad one never takes the others with it)", async () => {
    const a = await conversation();
    const b = await conversation();
    const unstorable = { ...text("bad"), size: 1n } as unknown as Outbound;
    const results = await Promise.allSettled([
      store.append(a.id, { events: [text("a1")], transcript: [{ role: "user", content: "a1" }] }, 1),
      store.append("no-such-conversation", { events: [text("x")] }, 1),
      store.append(b.id, { events: [text("b-ok"), unstorable] }, 1),
      store.append(b.id, { events: [text("b1")] }, 1),
      store.append(a.id, { events: [text("a2")] }, 1),
    ]);
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled", "fulfilled"]);
    // Concurrent batches are not ordered among themselves (PostgreSQL): seqs contiguous, contents exact.
    const eventsOf = async (id: string) => (await store.listEvents(id, 0)).map((event) => [event.seq, event.message.type === "text" ? event.message.text : ""] as const);
    const ofA = await eventsOf(a.id);
    expect(ofA.map(([seq]) => seq)).toEqual([1, 2]);
    expect(ofA.map(([, value]) => value).sort()).toEqual(["a1", "a2"]);
    expect(await eventsOf(b.id)).toEqual([[1, "b1"]]);
    expect((await store.listTranscript(a.id)).map((entry) => entry.message.content)).toEqual(["a1"]);
  });

  it("concurrent batches from two store instances interleave whole, with contiguous seqs and no duplicate", async () => {
    const c = await conversation();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? store : second).append(c.id, { events: [text(`m${i}a`), text(`m${i}b`)], transcript: [{ role: "user", content: `u${i}` }] }, i),
      ),
    );
    const events = await store.listEvents(c.id, 0);
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    const texts = events.map((event) => (event.message.type === "text" ? event.message.text : ""));
    for (let i = 0; i < 40; i += 2) expect(texts[i]!.replace(/a$/, "b")).toBe(texts[i + 1]); // each batch's two events are adjacent
    expect((await store.listTranscript(c.id)).map((entry) => entry.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it("conversations are found by resume hash and by channel identity; subject and handoff are kept", async () => {
    const hash = randomBytes(32).toString("hex");
    const c = await conversation({ resumeHash: hash, externalId: uid("whatsapp:+386") });
    expect((await store.findConversationByResume(hash))?.id).toBe(c.id);
    expect(await store.findConversationByResume("nope")).toBeUndefined();
    expect((await store.findConversationByExternal("shop", "web", c.externalId!, "default"))?.id).toBe(c.id);
    expect(await store.findConversationByExternal("shop", "web", c.externalId!, "other")).toBeUndefined();
    await store.setSubject(c.id, { id: "cust-1", level: "high", authTime: "2026-01-01T00:00:00.000Z" });
    await store.setHandoff(c.id, { state: "taken", member: "ana", at: 5 });
    const again = await second.getConversation(c.id);
    expect(again?.subject?.id).toBe("cust-1");
    expect(again?.handoff).toEqual({ state: "taken", member: "ana", at: 5 });
    expect((await store.listConversations({ handoff: true })).some((row) => row.id === c.id)).toBe(true);
    await store.setHandoff(c.id, null);
    expect((await store.getConversation(c.id))?.handoff).toBeNull();
  });

  it("a handoff set for a member lands only while no other member holds the conversation: of two members taking it at once, one does", async () => {
    const c = await conversation();
    expect(await store.setHandoff(c.id, { state: "requested", queue: "help", at: 1 }, "ana")).toBe(true);
    const taken = await Promise.all([store.setHandoff(c.id, { state: "taken", member: "ana", at: 2 }, "ana"), second.setHandoff(c.id, { state: "taken", member: "ben", at: 2 }, "ben")]);
    expect(taken.filter(Boolean)).toHaveLength(1);
    const holder = (await store.getConversation(c.id))?.handoff?.member;
    expect(holder).toBe(taken[0] ? "ana" : "ben");
    const other = holder === "ana" ? "ben" : "ana";
    // The other member can neither take it nor hand it back; the holder can do both, and without a holder anyone may.
    expect(await store.setHandoff(c.id, null, other)).toBe(false);
    expect(await store.setHandoff(c.id, { state: "taken", member: other, at: 3 }, other)).toBe(false);
    expect((await store.getConversation(c.id))?.handoff).toMatchObject({ state: "taken", member: holder });
    expect(await store.setHandoff(c.id, { state: "taken", member: holder!, at: 4 }, holder)).toBe(true);
    expect(await store.setHandoff(c.id, null, holder)).toBe(true);
    expect(await store.setHandoff(c.id, { state: "taken", member: other, at: 5 }, other)).toBe(true);
    // The agent's request (holder null) lands only while no member holds it.
    expect(await store.setHandoff(c.id, { state: "requested", queue: "help", at: 6 }, null)).toBe(false);
    expect((await store.getConversation(c.id))?.handoff).toMatchObject({ state: "taken", member: other });
    expect(await store.setHandoff(c.id, null)).toBe(true); // without a holder it is set whatever it was
    expect((await store.getConversation(c.id))?.handoff).toBeNull();
    expect(await store.setHandoff(c.id, { state: "requested", queue: "help", at: 7 }, null)).toBe(true);
    expect(await store.setHandoff(c.id, { state: "requested", queue: "help", at: 8 }, null)).toBe(true);
  });

  it("a resume hash is rotated by compare-and-set: the old hash no longer finds the conversation, a stale rotation loses", async () => {
    const [before, after, other] = [1, 2, 3].map(() => randomBytes(32).toString("hex")) as [string, string, string];
    const c = await conversation({ resumeHash: before });
    const rotations = await Promise.all([store.rotateResumeHash(c.id, before, after), second.rotateResumeHash(c.id, before, other)]);
    expect(rotations.filter(Boolean)).toHaveLength(1);
    const winner = rotations[0] ? after : other;
    expect(await store.findConversationByResume(before)).toBeUndefined();
    expect((await second.findConversationByResume(winner))?.id).toBe(c.id);
    expect(await store.rotateResumeHash(c.id, before, randomBytes(32).toString("hex"))).toBe(false);
    expect((await store.getConversation(c.id))?.resumeHash).toBe(winner);
  });

  it("a widget customer's input is stored only while its resume hash is still the conversation's, checked in the append itself (also in a group of appends, and from another store instance)", async () => {
    const [before, after] = [1, 2].map(() => randomBytes(32).toString("hex")) as [string, string];
    const c = await conversation({ resumeHash: before });
    const other = await conversation();
    const input = (word: string) => ({ events: [text(word)], transcript: [{ role: "user" as const, content: word }], owedBy: "node-a" });
    const stored = await store.append(c.id, { ...input("first"), resumeHash: before }, 1);
    expect(stored?.events.map((event) => event.seq)).toEqual([1]);
    expect(stored?.conversation).toMatchObject({ id: c.id, resumeHash: before, lastSeq: 1, lastTranscriptSeq: 1, owedTurn: { nodeId: "node-a", seq: 1 } });
    expect(await second.rotateResumeHash(c.id, before, after)).toBe(true);
    // The old hash stores nothing, not even alongside other appends committed with it; the new one goes on.
    const [refused, alongside] = await Promise.all([store.append(c.id, { ...input("stolen"), resumeHash: before }, 2), store.append(other.id, input("elsewhere"), 2)]);
    expect(refused).toBeUndefined();
    expect(alongside.events.map((event) => event.seq)).toEqual([1]);
    expect(await store.append("no-such-conversation", { ...input("nobody"), resumeHash: before }, 2)).toBeUndefined();
    const again = await second.append(c.id, { ...input("second"), resumeHash: after }, 3);
    expect(again?.events.map((event) => event.seq)).toEqual([2]);
    expect((await store.listEvents(c.id, 0)).map((event) => (event.message.type === "text" ? event.message.text : ""))).toEqual(["first", "second"]);
    expect((await store.listTranscript(c.id)).map((entry) => entry.message.content)).toEqual(["first", "second"]);
    expect(await store.getConversation(c.id)).toMatchObject({ lastSeq: 2, lastTranscriptSeq: 2, owedTurn: { nodeId: "node-a", seq: 2 } });
  });

  it("a customer input owes its turn until finished; a lost node's owed turns are claimed once, even by two store instances at the same moment", async () => {
    const lost = uid("node-lost");
    const [a, b, c] = [await conversation(), await conversation(), await conversation()];
    const input = await store.append(a.id, { events: [text("hi")], transcript: [{ role: "user", content: "hi" }], owedBy: lost }, 1);
    expect(input.transcript[0]!.seq).toBe(1);
    // A later step of the turn (no owedBy) leaves the owed turn as it is.
    await store.append(a.id, { events: [text("step")], transcript: [{ role: "assistant", content: "" }] }, 2);
    await store.append(b.id, { transcript: [{ role: "system", content: "note" }, { role: "user", content: "x" }], owedBy: lost }, 3);
    await store.append(c.id, { transcript: [{ role: "user", content: "done" }], owedBy: lost }, 4);
    const byId = (x: { conversationId: string }, y: { conversationId: string }) => x.conversationId.localeCompare(y.conversationId);
    expect((await store.listOwedTurns(lost, 10)).sort(byId)).toEqual(
      [
        { conversationId: a.id, nodeId: lost, seq: 1 },
        { conversationId: b.id, nodeId: lost, seq: 2 },
        { conversationId: c.id, nodeId: lost, seq: 1 },
      ].sort(byId),
    );
    // Finishing needs the same node and the same input; a finished turn is owed by nobody.
    expect(await store.finishTurn(c.id, lost, 2)).toBe(false);
    expect(await store.finishTurn(c.id, uid("node-other"), 1)).toBe(false);
    expect(await store.finishTurn(c.id, lost, 1)).toBe(true);
    expect(await store.finishTurn(c.id, lost, 1)).toBe(false);
    // Two survivors take over the lost node at the same moment: each owed turn goes to exactly one.
    const [first, other] = [uid("node-a"), uid("node-b")];
    const claims = await Promise.all([store.claimOwedTurns(lost, first, 10), second.claimOwedTurns(lost, other, 10)]);
    const claimed = claims.flat().map((turn) => turn.conversationId).sort();
    expect(claimed).toEqual([a.id, b.id].sort());
    expect(await store.claimOwedTurns(lost, first, 10)).toEqual([]);
    expect(await store.listOwedTurns(lost, 10)).toEqual([]);
    for (const [index, node] of [first, other].entries()) {
      expect((await store.listOwedTurns(node, 10)).map((turn) => turn.conversationId).sort()).toEqual(claims[index]!.map((turn) => turn.conversationId).sort());
    }
    // The limit takes that many; a newer input replaces the owed one, so the old turn's finish does not clear it.
    const owner = claims[0]!.length > 0 ? first : other;
    const [moved] = await store.claimOwedTurns(owner, uid("node-c"), 1);
    expect(moved).toBeDefined();
    await store.append(moved!.conversationId, { transcript: [{ role: "user", content: "again" }], owedBy: moved!.nodeId }, 5);
    expect(await store.finishTurn(moved!.conversationId, moved!.nodeId, moved!.seq)).toBe(false);
    const [newer] = await store.listOwedTurns(moved!.nodeId, 10);
    expect(newer).toMatchObject({ conversationId: moved!.conversationId, seq: (await store.getConversation(moved!.conversationId))!.lastTranscriptSeq });
    expect(await store.finishTurn(newer!.conversationId, newer!.nodeId, newer!.seq)).toBe(true);
  });

  it("a turn's last append finishes it in the same statement, only while it is still that turn owed by that node; a batch may hold only the finish", async () => {
    const node = uid("node");
    const c = await conversation();
    const input = await store.append(c.id, { events: [text("hi")], transcript: [{ role: "user", content: "hi" }], owedBy: node }, 1);
    const seq = input.transcript[0]!.seq;
    // Another node's finish, or the finish of an older input, leaves it owed; the stored answer still lands.
    const other = await store.append(c.id, { events: [text("step")], transcript: [{ role: "assistant", content: "step" }], finish: { nodeId: uid("node-other"), seq } }, 2);
    expect(other.conversation.owedTurn).toEqual({ nodeId: node, seq });
    expect((await store.append(c.id, { finish: { nodeId: node, seq: seq + 5 } }, 3)).conversation.owedTurn).toEqual({ nodeId: node, seq });
    const answered = await store.append(c.id, { events: [text("answer")], transcript: [{ role: "assistant", content: "answer" }], finish: { nodeId: node, seq } }, 4);
    expect(answered.conversation.owedTurn).toBeNull();
    expect(answered.events.map((event) => event.seq)).toEqual([3]);
    expect(await store.listOwedTurns(node, 10)).toEqual([]);
    // A finish-only batch stores nothing else.
    const next = await store.append(c.id, { transcript: [{ role: "user", content: "again" }], owedBy: node }, 5);
    const done = await store.append(c.id, { finish: { nodeId: node, seq: next.transcript[0]!.seq } }, 6);
    expect(done.conversation).toMatchObject({ owedTurn: null, lastSeq: 3, lastTranscriptSeq: 4 });
    expect(done.events).toEqual([]);
  });
});
