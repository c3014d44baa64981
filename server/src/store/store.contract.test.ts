// The contract of the Store as a whole, beyond its narrow ports (each has a suite of its own beside this
// one: conversationLog, writeLedger, files, handoffOutbox, inboundEvents .contract.test.ts), on SQLite and on
// PostgreSQL: migrating again changes nothing, ratings of events, workspaces, and everything surviving a reopen.
import { randomBytes } from "node:crypto";
import { expect, it } from "vitest";
import { describeEachStore, newWrite, text, uid } from "./testing/storeHarness.ts";

describeEachStore("Store contract", ({ store, second, conversation, reopen }) => {
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

  it("a NUL or a lone surrogate in an event, a transcript entry or a write's arguments is stored as U+FFFD (jsonb refuses both), and only it", async () => {
    const c = await conversation();
    // A lone high surrogate (text cut inside an emoji), a lone low one, a NUL; beside them what must stay as it is:
    // a whole emoji, a backslash before "u0000" (text, not an escape), an escaped backslash before a NUL, control characters.
    const sent = "cut \ud83d| low \udc00| nul \u0000| 🙂 \\u0000 \\\u0000 \u0001\t";
    const kept = "cut \ufffd| low \ufffd| nul \ufffd| 🙂 \\u0000 \\\ufffd \u0001\t";
    const batch = await store.append(c.id, { events: [text(sent)], transcript: [{ role: "user", content: sent }] }, 1);
    // The append returns what it stored (the engine sends and keeps that, not what it was given).
    expect(batch.events.map((event) => [event.seq, event.message.type === "text" ? event.message.text : ""])).toEqual([[1, kept]]);
    expect(batch.transcript.map((entry) => entry.message.content)).toEqual([kept]);
    expect((await second.listEvents(c.id, 0)).map((event) => (event.message.type === "text" ? event.message.text : ""))).toEqual([kept]);
    expect((await second.listTranscript(c.id)).map((entry) => entry.message.content)).toEqual([kept]);
    const write = await store.insertWrite(newWrite(c.id, { args: { orderId: "SO-1002", [`key\u0000`]: sent } }));
    expect((await second.getWrite(write.id))?.args).toEqual({ orderId: "SO-1002", "key\ufffd": kept });
    const confirmed = await store.transitionWrite(write.id, { states: ["proposed"] }, { state: "running", finalArgs: { orderId: "SO-1002", reason: sent } }, 2);
    // What a confirm runs is what was stored: the row the transition returns, as read back.
    expect(confirmed?.finalArgs).toEqual({ orderId: "SO-1002", reason: kept });
    expect((await second.getWrite(write.id))?.finalArgs).toEqual({ orderId: "SO-1002", reason: kept });
  });

  it("everything stored survives closing and reopening the store", async () => {
    const c = await conversation();
    await store.appendEvent(c.id, text("kept"), 1);
    const w = await store.insertWrite(newWrite(c.id));
    await reopen();
    expect((await store.listEvents(c.id, 0))[0]?.message).toMatchObject({ type: "text", text: "kept" });
    expect((await store.getWrite(w.id))?.args).toEqual({ orderId: "SO-1002" });
    expect((await store.listWrites(c.id)).map((row) => row.id)).toEqual([w.id]);
  });
});
