// One contract suite, run against every Store: SQLite in a real file and PostgreSQL (the machine's, or one tests/support/globalSetup.ts started)
// (a schema of its own per run, dropped afterwards).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChannelCapabilities, Outbound } from "@caplo/shared";
import { PostgresStore, SqliteStore, WriteBlockedError, type NewWrite, type Store } from "./index.ts";
import { testPg } from "../../../tests/support/services.ts";
import { eachStore } from "./testing/storeHarness.ts";
import { sqliteSynchronous } from "./sqliteStore.ts";

const capabilities: ChannelCapabilities = { editableFields: true, forms: true, questions: true, files: false, pages: false, richText: true };

let counter = 0;
const uid = (prefix: string) => `${prefix}_${process.pid}_${++counter}_${randomBytes(3).toString("hex")}`;

function text(textValue: string): Outbound {
  return { type: "text", id: uid("m"), from: "agent", text: textValue };
}

function newWrite(conversationId: string, overrides: Partial<NewWrite> = {}): NewWrite {
  return {
    id: uid("w"),
    conversationId,
    turnId: "t1",
    callId: "call_1",
    toolRef: "orders/cancel_order",
    modelName: "orders__cancel_order",
    packageVersionId: "orders@sha256:" + "0".repeat(64),
    tool: "cancel_order",
    args: { orderId: "SO-1002" },
    state: "proposed",
    confirmation: "required",
    ownerId: "owner-a",
    subjectId: null,
    createdAt: 1000,
    ...overrides,
  };
}

describe.each(eachStore())("Store contract ($name)", (harness) => {
  let store: Store;
  let second: Store;

  beforeAll(async () => {
    store = await harness.open();
    second = await harness.open();
  });
  afterAll(async () => {
    await store?.close();
    await second?.close();
    await harness.cleanup();
  });

  async function conversation(overrides: { externalId?: string; resumeHash?: string; workspaceId?: string } = {}) {
    return store.createConversation({
      id: uid("c"),
      workspaceId: overrides.workspaceId ?? "default",
      agent: "shop",
      releaseId: "shop@sha256:" + "1".repeat(64),
      channel: "web",
      externalId: overrides.externalId ?? null,
      resumeHash: overrides.resumeHash ?? null,
      ownerId: "owner-a",
      capabilities,
      createdAt: Date.now(),
    });
  }

  it("migrations are idempotent: migrating again changes nothing", async () => {
    const c = await conversation();
    await store.migrate();
    expect((await store.getConversation(c.id))?.id).toBe(c.id);
    expect(await store.ping()).toBe(true);
  });

  it("a rating is kept per event, replaced by a later one and removed by null; counts are per conversation", async () => {
    const a = await conversation();
    const b = await conversation();
    for (const c of [a, b]) for (let i = 1; i <= 3; i++) await store.appendEvent(c.id, text(`${c.id} ${i}`), i);
    await store.rateEvent(a.id, 1, "down", 10);
    await store.rateEvent(a.id, 1, "up", 11);
    await store.rateEvent(a.id, 2, "down", 12);
    await store.rateEvent(a.id, 3, "up", 13);
    await store.rateEvent(a.id, 3, null, 14);
    await store.rateEvent(b.id, 2, "down", 15);
    expect(await store.listRatings(a.id)).toEqual([
      { seq: 1, rating: "up", at: 11 },
      { seq: 2, rating: "down", at: 12 },
    ]);
    const counts = await store.countRatings([a.id, b.id, "no-such-conversation"]);
    expect(Object.fromEntries(counts)).toEqual({ [a.id]: { up: 1, down: 1 }, [b.id]: { up: 0, down: 1 } });
    expect((await store.countRatings([])).size).toBe(0);
    // Only a stored event can be rated.
    await expect(store.rateEvent(a.id, 99, "up", 16)).rejects.toThrow();
  });

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
    expect(batch.conversation).toMatchObject({ id: c.id, lastSeq: 3, lastTranscriptSeq: 3, capabilities });
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

  it("a conversation belongs to a workspace that exists: listed, found and followed up only within it", async () => {
    const workspace = `ws-${randomBytes(4).toString("hex")}`;
    await expect(conversation({ workspaceId: workspace })).rejects.toThrow();
    await store.ensureWorkspace(workspace, 1);
    await store.ensureWorkspace(workspace, 2); // idempotent
    expect(await second.listWorkspaces()).toEqual(expect.arrayContaining(["default", workspace]));
    const external = uid("whatsapp:+386");
    const theirs = await conversation({ workspaceId: workspace, externalId: external });
    const ours = await conversation({ externalId: external });
    expect(theirs.workspaceId).toBe(workspace);
    expect((await second.getConversation(ours.id))?.workspaceId).toBe("default");
    const listed = (await store.listConversations({ workspaceId: workspace, limit: 1000 })).map((row) => row.id);
    expect(listed).toEqual([theirs.id]);
    expect((await store.listConversations({ workspaceId: "default", limit: 100_000 })).map((row) => row.id)).not.toContain(theirs.id);
    expect((await store.findConversationByExternal("shop", "web", external, workspace))?.id).toBe(theirs.id);
    expect((await store.findConversationByExternal("shop", "web", external, "default"))?.id).toBe(ours.id);
    const write = await store.insertWrite(newWrite(theirs.id));
    await store.transitionWrite(write.id, { states: ["proposed"] }, { state: "unknown", followUp: true }, 2);
    expect((await store.listFollowUps(workspace)).map((row) => row.id)).toEqual([write.id]);
    expect((await store.listFollowUps("default")).map((row) => row.id)).not.toContain(write.id);
    expect((await store.listFollowUps()).map((row) => row.id)).toContain(write.id);
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

  it("a write transition is a compare-and-set: of two concurrent confirms exactly one wins", async () => {
    const c = await conversation();
    const w = await store.insertWrite(newWrite(c.id));
    const results = await Promise.all(
      [store, second, store, second].map((s, i) =>
        s.transitionWrite(w.id, { states: ["proposed"] }, { state: "confirmed", idempotencyKey: `key-${w.id}-${i}`, finalArgs: { orderId: "SO-1002" } }, 2000),
      ),
    );
    const winners = results.filter((result) => result !== undefined);
    expect(winners).toHaveLength(1);
    const stored = await store.getWrite(w.id);
    expect(stored?.state).toBe("confirmed");
    expect(stored?.idempotencyKey).toBe(winners[0]!.idempotencyKey);
    const history = await store.listTransitions(w.id);
    expect(history.map((t) => `${t.from}->${t.to}`)).toEqual(["proposed->proposed", "proposed->confirmed"]);
  });

  it("a transition from the wrong state changes nothing", async () => {
    const c = await conversation();
    const w = await store.insertWrite(newWrite(c.id));
    await store.transitionWrite(w.id, { states: ["proposed"] }, { state: "declined" }, 2);
    expect(await store.transitionWrite(w.id, { states: ["proposed"] }, { state: "confirmed", idempotencyKey: uid("k") }, 3)).toBeUndefined();
    const stored = await store.getWrite(w.id);
    expect(stored?.state).toBe("declined");
    expect(stored?.idempotencyKey).toBeNull();
  });

  it("an idempotency key cannot be used by two writes", async () => {
    const c = await conversation();
    const a = await store.insertWrite(newWrite(c.id));
    const b = await store.insertWrite(newWrite((await conversation()).id));
    const key = uid("key");
    await store.transitionWrite(a.id, { states: ["proposed"] }, { state: "confirmed", idempotencyKey: key }, 2);
    await expect(store.transitionWrite(b.id, { states: ["proposed"] }, { state: "confirmed", idempotencyKey: key }, 2)).rejects.toThrow();
    expect((await store.getWrite(b.id))?.state).toBe("proposed");
  });

  it("a conversation holds one unresolved write: of two proposals stored at once by two store instances one is kept, the other refused with write_blocked; once it is resolved the next may be stored", async () => {
    const c = await conversation();
    const attempts = await Promise.allSettled([store.insertWrite(newWrite(c.id)), second.insertWrite(newWrite(c.id))]);
    const kept = attempts.flatMap((attempt) => (attempt.status === "fulfilled" ? [attempt.value] : []));
    const refused = attempts.flatMap((attempt) => (attempt.status === "rejected" ? [attempt.reason as unknown] : []));
    expect(kept).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(WriteBlockedError);
    expect(refused[0]).toMatchObject({ code: "write_blocked", conversationId: c.id });
    expect((await store.listWrites(c.id)).map((write) => write.id)).toEqual([kept[0]!.id]);
    // Every unresolved state blocks; a resolved write does not.
    const unresolved = ["confirmed", "running", "pending", "unknown", "step_up_required"] as const;
    let current = kept[0]!;
    for (const state of unresolved) {
      const moved = await store.transitionWrite(current.id, { states: [current.state] }, { state }, 2);
      current = moved!;
      await expect(second.insertWrite(newWrite(c.id))).rejects.toBeInstanceOf(WriteBlockedError);
    }
    await store.transitionWrite(current.id, { states: ["step_up_required"] }, { state: "not_applied" }, 3);
    const next = await second.insertWrite(newWrite(c.id));
    expect(next.state).toBe("proposed");
    // Another conversation was never blocked.
    await expect(store.insertWrite(newWrite((await conversation()).id))).resolves.toMatchObject({ state: "proposed" });
  });

  it("a proposal and its batch are one transaction: stored together with the next seqs, or, refused with write_blocked as a value, neither", async () => {
    const c = await conversation();
    const batch = { events: [text("Please review."), text("card")], transcript: [{ role: "assistant" as const, content: "Please review." }, { role: "tool" as const, toolCallId: "call_1", name: "orders__cancel_order", content: "proposed" }] };
    const first = await store.proposeWrite(newWrite(c.id), batch);
    if (!first.ok) throw new Error("refused");
    expect(first.write).toMatchObject({ conversationId: c.id, state: "proposed" });
    expect(first.appended!.events.map((event) => event.seq)).toEqual([1, 2]);
    expect(first.appended!.transcript.map((entry) => entry.seq)).toEqual([1, 2]);
    expect(first.appended!.conversation).toMatchObject({ id: c.id, lastSeq: 2, lastTranscriptSeq: 2 });
    expect((await store.listTransitions(first.write.id)).map((t) => [t.from, t.to, t.note])).toEqual([["proposed", "proposed", "created"]]);
    const refused = await second.proposeWrite(newWrite(c.id), batch);
    expect(refused).toEqual({ ok: false, code: "write_blocked", conversationId: c.id });
    expect((await store.listEvents(c.id, 0)).map((event) => event.seq)).toEqual([1, 2]);
    expect((await store.listTranscript(c.id)).map((entry) => entry.seq)).toEqual([1, 2]);
    expect(await store.listWrites(c.id)).toHaveLength(1);
  });

  it("a ledger change and what announces it are one transaction: appended only when the compare-and-set lands, with its transition recorded", async () => {
    const c = await conversation();
    const w = await store.insertWrite(newWrite(c.id));
    const announce = { events: [text("Done.")], transcript: [{ role: "system" as const, content: "outcome: applied" }] };
    // Two nodes record the same change at once: one lands (and appends), the other changes and appends nothing.
    const results = await Promise.all([
      store.changeWrite(w.id, { states: ["proposed"] }, { state: "declined", note: "declined by the customer" }, 5, announce),
      second.changeWrite(w.id, { states: ["proposed"] }, { state: "declined", note: "declined by the customer" }, 5, announce),
    ]);
    const landed = results.filter((result) => result !== undefined);
    expect(landed).toHaveLength(1);
    expect(landed[0]!.write).toMatchObject({ id: w.id, state: "declined", updatedAt: 5 });
    expect(landed[0]!.appended!.events.map((event) => event.seq)).toEqual([1]);
    expect(landed[0]!.appended!.conversation.lastTranscriptSeq).toBe(1);
    expect((await store.listEvents(c.id, 0)).map((event) => event.seq)).toEqual([1]);
    expect((await store.listTranscript(c.id)).map((entry) => entry.message)).toEqual([{ role: "system", content: "outcome: applied" }]);
    expect((await store.listTransitions(w.id)).map((t) => [t.from, t.to, t.note])).toEqual([
      ["proposed", "proposed", "created"],
      ["proposed", "declined", "declined by the customer"],
    ]);
    // The check count is part of the condition when given.
    const checked = await store.insertWrite(newWrite((await conversation()).id));
    await store.transitionWrite(checked.id, { states: ["proposed"] }, { state: "unknown", idempotencyKey: uid("k") }, 6);
    expect(await store.changeWrite(checked.id, { states: ["unknown"], checkCount: 1 }, { state: "applied" }, 7, announce)).toBeUndefined();
    expect(await store.listEvents(checked.conversationId, 0)).toEqual([]);
    expect((await store.changeWrite(checked.id, { states: ["unknown"], checkCount: 0 }, { state: "applied", checkCount: 1 }, 7))?.write).toMatchObject({ state: "applied", checkCount: 1 });
  });

  it("a change's audit entry lands with it, in its conversation's workspace: none when the compare-and-set is refused, no change when the entry cannot be stored", async () => {
    await store.ensureWorkspace("acme", 1);
    const c = await conversation({ workspaceId: "acme" });
    const w = await store.insertWrite(newWrite(c.id));
    await store.transitionWrite(w.id, { states: ["proposed"] }, { state: "unknown", followUp: true }, 6);
    const audit = { actor: "ana", action: "follow_up.resolved", detail: { state: "applied", note: "checked" } };
    const announce = { events: [text("Applied.")] };
    const auditOf = async () => (await store.listAudit("acme", { limit: 100_000 })).filter((entry) => entry.target === w.id);
    // The database refuses the audit entry: the change and its announcement are not made either.
    await harness.sql(harness.name === "sqlite" ? "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events BEGIN SELECT RAISE(ABORT, 'audit refused'); END" : "CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$; CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()");
    try {
      await expect(store.changeWrite(w.id, { states: ["unknown"] }, { state: "applied", followUp: false }, 7, announce, audit)).rejects.toThrow(/audit refused/);
    } finally {
      await harness.sql(harness.name === "sqlite" ? "DROP TRIGGER refuse_audit" : "DROP TRIGGER refuse_audit ON audit_events; DROP FUNCTION refuse_audit()");
    }
    expect(await store.getWrite(w.id)).toMatchObject({ state: "unknown", followUp: true });
    expect(await store.listEvents(c.id, 0)).toEqual([]);
    expect((await store.listTransitions(w.id)).map((t) => t.to)).toEqual(["proposed", "unknown"]);
    expect(await auditOf()).toEqual([]);
    // Refused by its compare-and-set: no entry.
    expect(await store.changeWrite(w.id, { states: ["pending"] }, { state: "applied", followUp: false }, 7, announce, audit)).toBeUndefined();
    expect(await auditOf()).toEqual([]);
    // Landed: the entry is the conversation's workspace's, at the change's time, naming the write; none in another workspace.
    expect((await second.changeWrite(w.id, { states: ["unknown"] }, { state: "applied", followUp: false }, 8, announce, audit))?.write.state).toBe("applied");
    expect(await auditOf()).toEqual([{ id: expect.any(Number), workspaceId: "acme", at: 8, actor: "ana", action: "follow_up.resolved", target: w.id, detail: { state: "applied", note: "checked" } }]);
    expect((await store.listAudit("default", { limit: 100_000 })).filter((entry) => entry.target === w.id)).toEqual([]);
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

  it("a write's result, operationRef, check schedule and follow-up flag are kept", async () => {
    const c = await conversation();
    const w = await store.insertWrite(newWrite(c.id));
    await store.transitionWrite(w.id, { states: ["proposed"] }, { state: "running", idempotencyKey: uid("k"), nodeId: "n1" }, 2);
    const pending = await store.transitionWrite(
      w.id,
      { states: ["running"] },
      { state: "pending", operationRef: "op_123", result: { outcome: "pending", message: "processing" }, nextCheckAt: 50, checkCount: 0 },
      3,
    );
    expect(pending).toMatchObject({ state: "pending", operationRef: "op_123", nextCheckAt: 50, checkCount: 0, result: { outcome: "pending" } });
    const exhausted = await store.transitionWrite(w.id, { states: ["pending"], checkCount: 0 }, { state: "unknown", checkCount: 8, followUp: true, nextCheckAt: null }, 4);
    expect(exhausted?.followUp).toBe(true);
    expect((await store.listFollowUps()).map((row) => row.id)).toContain(w.id);
    expect(await store.transitionWrite(w.id, { states: ["unknown"], checkCount: 0 }, { state: "applied" }, 5)).toBeUndefined();
  });

  it("due status checks are claimed once: a second claim before the lease ends gets nothing", async () => {
    const c = await conversation();
    const due = await store.insertWrite(newWrite(c.id));
    const later = await store.insertWrite(newWrite((await conversation()).id));
    const done = await store.insertWrite(newWrite((await conversation()).id));
    const now = 10_000_000_000_000 + counter;
    await store.transitionWrite(due.id, { states: ["proposed"] }, { state: "unknown", idempotencyKey: uid("k"), nextCheckAt: now - 5 }, 1);
    await store.transitionWrite(later.id, { states: ["proposed"] }, { state: "pending", idempotencyKey: uid("k"), nextCheckAt: now + 60_000 }, 1);
    await store.transitionWrite(done.id, { states: ["proposed"] }, { state: "applied", idempotencyKey: uid("k"), nextCheckAt: now - 5 }, 1);
    const [first, again] = await Promise.all([store.claimDueChecks(now, now + 30_000, 50), second.claimDueChecks(now, now + 30_000, 50)]);
    const claimed = [...first!, ...again!].map((row) => row.id).filter((id) => [due.id, later.id, done.id].includes(id));
    expect(claimed).toEqual([due.id]);
    const afterLease = await store.claimDueChecks(now + 30_001, now + 60_000, 50);
    expect(afterLease.map((row) => row.id)).toContain(due.id);
    expect(await store.nextCheckAt()).not.toBeNull();
  });

  it("startup recovery turns this node's running writes into unknown with a check due, and leaves other nodes' alone", async () => {
    const c = await conversation();
    const mine = await store.insertWrite(newWrite(c.id));
    const theirs = await store.insertWrite(newWrite((await conversation()).id));
    const confirmed = await store.insertWrite(newWrite((await conversation()).id));
    const node = uid("node");
    await store.transitionWrite(mine.id, { states: ["proposed"] }, { state: "running", idempotencyKey: uid("k"), nodeId: node }, 1);
    await store.transitionWrite(theirs.id, { states: ["proposed"] }, { state: "running", idempotencyKey: uid("k"), nodeId: uid("other") }, 1);
    await store.transitionWrite(confirmed.id, { states: ["proposed"] }, { state: "confirmed", idempotencyKey: uid("k"), nodeId: node }, 1);
    await store.close();
    store = await harness.open();
    const recovered = await store.recoverRunning(node, 100, 200);
    expect(recovered.map((row) => [row.id, row.state]).sort()).toEqual(
      [
        [mine.id, "unknown"],
        [confirmed.id, "not_applied"],
      ].sort(),
    );
    const stored = await store.getWrite(mine.id);
    expect(stored).toMatchObject({ state: "unknown", nextCheckAt: 200, checkCount: 0, result: { outcome: "unknown" } });
    expect(stored?.idempotencyKey).toBe((await second.getWrite(mine.id))?.idempotencyKey);
    expect((await store.getWrite(theirs.id))?.state).toBe("running");
    expect((await store.listTransitions(mine.id)).at(-1)).toMatchObject({ from: "running", to: "unknown", note: "recovered at startup" });
  });

  it("a file's bytes come back exactly, by its id only", async () => {
    const c = await conversation();
    const bytes = new Uint8Array([0x25, 0x50, 0x44, 0x46, 0x2d, 0x00, 0xff, 0x10]);
    const id = uid("f");
    await store.putFile({ id, conversationId: c.id, name: "invoice.pdf", mimeType: "application/pdf", size: bytes.length, bytes, createdAt: 5 });
    const file = await second.getFile(id);
    expect(file).toMatchObject({ id, conversationId: c.id, name: "invoice.pdf", mimeType: "application/pdf", size: 8, createdAt: 5 });
    expect([...file!.bytes]).toEqual([...bytes]);
    expect(await store.getFile("f_missing")).toBeUndefined();
  });

  it("an inbound source id is accepted once, even by two store instances at the same moment, and pruned only before the cutoff", async () => {
    const c = await conversation();
    const id = uid("whatsapp:SM");
    const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? store : second).claimInboundSource(id, c.id, 5000)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await store.claimInboundSource(id, c.id, 9000)).toBe(false);
    const later = uid("messenger:m_");
    expect(await store.claimInboundSource(later, c.id, 6000)).toBe(true);
    // The boundary: a source accepted exactly at the cutoff is kept; only older ones are forgotten.
    expect(await store.pruneInboundSources(5000)).toBe(0);
    expect(await store.pruneInboundSources(5001)).toBeGreaterThanOrEqual(1);
    expect(await store.claimInboundSource(id, c.id, 9000)).toBe(true);
    expect(await store.claimInboundSource(later, c.id, 9000)).toBe(false);
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

  it("the sweep lists writes waiting for step-up since at or before the cutoff (by when they began to wait), oldest first, and no other state", async () => {
    const base = 60_000_000;
    const waitingSince = async (at: number, state: "step_up_required" | "proposed" = "step_up_required") => {
      const write = await store.insertWrite(newWrite((await conversation()).id, { createdAt: 1 }));
      if (state === "proposed") return write;
      await store.transitionWrite(write.id, { states: ["proposed"] }, { state: "confirmed" }, at - 10);
      return (await store.transitionWrite(write.id, { states: ["confirmed"] }, { state: "step_up_required", stepUp: { level: "high" } }, at))!;
    };
    const later = await waitingSince(base + 1);
    const earliest = await waitingSince(base);
    const atCutoff = await waitingSince(base + 2);
    const fresh = await waitingSince(base + 3);
    const proposal = await waitingSince(base, "proposed");
    const mine = new Set([later.id, earliest.id, atCutoff.id, fresh.id, proposal.id]);
    const listed = (await second.listExpiredStepUps(base + 2, 1000)).filter((write) => mine.has(write.id)).map((write) => write.id);
    expect(listed).toEqual([earliest.id, later.id, atCutoff.id]);
    expect((await store.listExpiredStepUps(base + 3, 2)).length).toBe(2);
    // Expired by compare-and-set from step_up_required: a second expiry finds nothing to change.
    expect(await store.transitionWrite(earliest.id, { states: ["step_up_required"] }, { state: "expired" }, base + 5)).toMatchObject({ state: "expired" });
    expect(await second.transitionWrite(earliest.id, { states: ["step_up_required"] }, { state: "expired" }, base + 5)).toBeUndefined();
    expect((await store.listExpiredStepUps(base + 2, 1000)).map((write) => write.id)).not.toContain(earliest.id);
  });

  it("the proposal sweep lists open proposals made at or before the cutoff, oldest first, and nothing decided", async () => {
    const base = 50_000_000;
    // One open write per conversation: each proposal in a conversation of its own.
    const propose = async (createdAt: number) => store.insertWrite(newWrite((await conversation()).id, { createdAt }));
    const old = await propose(base + 1);
    const older = await propose(base);
    const atCutoff = await propose(base + 2);
    const fresh = await propose(base + 3);
    const decided = await propose(base);
    await store.transitionWrite(decided.id, { states: ["proposed"] }, { state: "declined" }, base + 1);
    const mine = new Set([old.id, older.id, atCutoff.id, fresh.id, decided.id]);
    const listed = (await second.listExpiredProposals(base + 2, 1000)).filter((write) => mine.has(write.id)).map((write) => write.id);
    expect(listed).toEqual([older.id, old.id, atCutoff.id]);
    expect(listed).not.toContain(fresh.id);
    expect((await store.listExpiredProposals(base + 3, 2)).length).toBe(2);
  });

  it("purging files drops their bytes after the cutoff only, keeps the row marked purged, and is idempotent", async () => {
    const c = await conversation();
    const base = 60_000_000;
    const bytes = new Uint8Array([1, 2, 3, 4]);
    const oldId = uid("f");
    const newId = uid("f");
    await store.putFile({ id: oldId, conversationId: c.id, name: "old.pdf", mimeType: "application/pdf", size: 4, bytes, createdAt: base });
    await store.putFile({ id: newId, conversationId: c.id, name: "new.pdf", mimeType: "application/pdf", size: 4, bytes, createdAt: base + 1 });
    expect((await store.getFile(oldId))?.purgedAt).toBeNull();
    expect(await store.purgeFiles(base, base + 99, 1000)).toBeGreaterThanOrEqual(1);
    const purged = await second.getFile(oldId);
    expect(purged).toMatchObject({ id: oldId, name: "old.pdf", size: 4, purgedAt: base + 99 });
    expect(purged!.bytes.length).toBe(0);
    const kept = await second.getFile(newId);
    expect(kept?.purgedAt).toBeNull();
    expect([...kept!.bytes]).toEqual([1, 2, 3, 4]);
    expect(await store.purgeFiles(base, base + 100, 1000)).toBe(0);
    expect((await store.getFile(oldId))?.purgedAt).toBe(base + 99);
  });

  it("a handoff notice is claimed by one store instance per lease, and an attempt is recorded once (compare-and-set on attempts)", async () => {
    const c = await conversation();
    const id = uid("hn");
    const notice = await store.insertHandoffNotice({ id, conversationId: c.id, queue: "support", body: '{"a":1}', createdAt: 70_000_000 });
    expect(notice).toMatchObject({ id, state: "pending", attempts: 0, nextAttemptAt: 70_000_000, leaseUntil: null, lastStatus: null, lastError: null });
    const claims = await Promise.all([store.claimDueHandoffNotices(70_000_000, 70_000_500, 100), second.claimDueHandoffNotices(70_000_000, 70_000_500, 100)]);
    expect(claims.flat().filter((claimed) => claimed.id === id)).toHaveLength(1);
    expect((await store.claimDueHandoffNotices(70_000_100, 70_000_600, 100)).filter((claimed) => claimed.id === id)).toEqual([]);
    const attempt = { state: "pending" as const, attempts: 1, nextAttemptAt: 70_001_000, lastStatus: 503, lastError: "the webhook answered HTTP 503" };
    const [first, late] = await Promise.all([store.recordHandoffAttempt(id, 0, attempt, 70_000_200), second.recordHandoffAttempt(id, 0, attempt, 70_000_200)]);
    expect([first, late].filter(Boolean)).toHaveLength(1);
    // Not due before its next attempt; due (and not leased any more) after it.
    expect((await store.claimDueHandoffNotices(70_000_999, 70_002_000, 100)).filter((claimed) => claimed.id === id)).toEqual([]);
    expect((await second.claimDueHandoffNotices(70_001_000, 70_002_000, 100)).filter((claimed) => claimed.id === id)).toHaveLength(1);
    const done = await store.recordHandoffAttempt(id, 1, { state: "delivered", attempts: 2, nextAttemptAt: null, lastStatus: 204, lastError: null }, 70_001_100);
    expect(done).toMatchObject({ state: "delivered", attempts: 2, lastStatus: 204, lastError: null, leaseUntil: null, body: '{"a":1}' });
    expect(await store.recordHandoffAttempt(id, 2, { state: "failed", attempts: 3, nextAttemptAt: null, lastStatus: null, lastError: "x" }, 70_001_200)).toBeUndefined();
    expect((await second.listHandoffNotices(c.id)).map((listed) => [listed.id, listed.state])).toEqual([[id, "delivered"]]);
  });

  it("everything stored survives closing and reopening the store", async () => {
    const c = await conversation();
    await store.appendEvent(c.id, text("kept"), 1);
    const w = await store.insertWrite(newWrite(c.id));
    await store.close();
    store = await harness.open();
    expect((await store.listEvents(c.id, 0))[0]?.message).toMatchObject({ type: "text", text: "kept" });
    expect((await store.getWrite(w.id))?.args).toEqual({ orderId: "SO-1002" });
    expect((await store.listWrites(c.id)).map((row) => row.id)).toEqual([w.id]);
  });
});

describe("postgres migrations", () => {
  it("five nodes migrating a schema that does not exist yet all succeed, and each migration applies once", async () => {
    const schema = `caplo_test_${process.pid}_${randomBytes(4).toString("hex")}`;
    const settings = { ...testPg(), schema };
    const nodes = Array.from({ length: 5 }, () => new PostgresStore(settings));
    try {
      const results = await Promise.allSettled(nodes.map((node) => node.migrate()));
      expect(results.filter((result) => result.status === "rejected")).toEqual([]);
      expect(await nodes[0]!.ping()).toBe(true);
    } finally {
      await nodes[0]!.dropSchema();
      await Promise.all(nodes.map((node) => node.close()));
    }
  });
});

describe("sqlite store: durability setting and group commit", () => {
  const dir = mkdtempSync(join(tmpdir(), "caplo-store-sync-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const conversationIn = (store: Store) =>
    store.createConversation({ id: uid("c"), workspaceId: "default", agent: "shop", releaseId: "r", channel: "web", externalId: null, resumeHash: null, ownerId: "o", capabilities, createdAt: 1 });

  it("synchronous is normal by default and full when asked (option or CAPLO_SQLITE_SYNCHRONOUS); another value is refused clearly", async () => {
    const path = join(dir, "sync.db");
    // The store takes the setting as an option; the server reads CAPLO_SQLITE_SYNCHRONOUS once and passes it.
    const stores = [new SqliteStore(path), new SqliteStore(path, { synchronous: "full" })];
    try {
      stores.push(new SqliteStore(path, { synchronous: sqliteSynchronous({ CAPLO_SQLITE_SYNCHRONOUS: "full" }) }));
      expect(stores.map((store) => store.synchronous)).toEqual(["normal", "full", "full"]);
      expect(() => new SqliteStore(path, { synchronous: sqliteSynchronous({ CAPLO_SQLITE_SYNCHRONOUS: "off" }) })).toThrow("CAPLO_SQLITE_SYNCHRONOUS must be normal or full, not 'off'");
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it("a burst of appends is committed in bounded groups, each answered with contiguous seqs", async () => {
    const store = new SqliteStore(join(dir, "burst.db"));
    await store.migrate();
    try {
      const conversations = await Promise.all(Array.from({ length: 3 }, () => conversationIn(store)));
      const stored = await Promise.all(Array.from({ length: 700 }, (_, i) => store.append(conversations[i % 3]!.id, { events: [text(`e${i}`)] }, i)));
      for (const c of conversations) {
        const seqs = stored.flatMap((batch) => batch.events).filter((event) => event.conversationId === c.id).map((event) => event.seq);
        expect(seqs.sort((a, b) => a - b)).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
        expect((await store.listEvents(c.id, 0, 1000)).length).toBe(seqs.length);
      }
    } finally {
      await store.close();
    }
  });

  it("appends still waiting for their group commit are committed by close, and answered", async () => {
    const path = join(dir, "close.db");
    const store = new SqliteStore(path, { synchronous: "full" });
    await store.migrate();
    const c = await conversationIn(store);
    const pending = store.append(c.id, { events: [text("last words")], transcript: [{ role: "user", content: "bye" }] }, 5);
    const more = Array.from({ length: 300 }, (_, i) => store.append(c.id, { events: [text(`more ${i}`)] }, 6)); // beyond one group
    await store.close();
    await expect(pending).resolves.toMatchObject({ events: [{ seq: 1 }], transcript: [{ seq: 1 }] });
    expect((await Promise.all(more)).map((batch) => batch.events[0]!.seq)).toEqual(Array.from({ length: 300 }, (_, i) => i + 2));
    const reopened = new SqliteStore(path);
    try {
      expect((await reopened.listEvents(c.id, 0, 1000)).map((event) => event.seq)).toEqual(Array.from({ length: 301 }, (_, i) => i + 1));
      expect((await reopened.listTranscript(c.id)).map((entry) => entry.message.content)).toEqual(["bye"]);
    } finally {
      await reopened.close();
    }
  });
});
