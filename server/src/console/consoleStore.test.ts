// The team console's part of the store on SQLite and PostgreSQL, with two store instances on one database as
// two nodes have: sign-in attempts counted once each even when both nodes count at the same moment, a window
// that ends, and pruning; the inbox's summaries kept by every kind of append (one event, a batch, a proposal's
// card, a write's outcome), members' read marks, the workspace and id filters, and the search's candidates.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChannelCapabilities, Outbound } from "@caplo/shared";
import type { InboxEntry, Store } from "../store/index.ts";
import { eachStore } from "../store/testing/storeHarness.ts";

describe.each(eachStore())("console store ($name)", (harness) => {
  let node: Store;
  let otherNode: Store;
  beforeAll(async () => {
    node = await harness.open();
    otherNode = await harness.open();
  });
  afterAll(async () => {
    await node?.close();
    await otherNode?.close();
    await harness.cleanup();
  });

  const capabilities: ChannelCapabilities = { editableFields: true, forms: true, questions: true, files: false, pages: false, richText: true };
  let clock = 1_000_000;
  async function conversation(workspaceId = "default", externalId: string | null = null) {
    return node.createConversation({ id: `c_${randomBytes(5).toString("hex")}`, workspaceId, agent: "shop", releaseId: "shop@sha256:" + "1".repeat(64), channel: "web", externalId, resumeHash: null, ownerId: "owner", capabilities, createdAt: ++clock });
  }
  const said = (from: "customer" | "agent" | "team", text: string): Outbound => ({ type: "text", id: `m_${randomBytes(4).toString("hex")}`, from, text });
  const entryOf = async (id: string, member = "ana", on: Store = node): Promise<InboxEntry> => (await on.listInbox({ workspaceId: "default", member, limit: 500, ids: [id] }))[0]!;

  it("the inbox summary follows every kind of append, read by the other node", async () => {
    const c = await conversation();
    expect(await entryOf(c.id)).toMatchObject({ lastMessage: null, waitingSince: null, unresolvedWrites: 0, followUps: 0, readSeq: 0 });
    await node.appendEvent(c.id, said("customer", "Where is SO-1001?"), 2000);
    expect(await entryOf(c.id, "ana", otherNode)).toMatchObject({ lastMessage: { seq: 1, at: 2000, message: { text: "Where is SO-1001?" } }, waitingSince: 2000 });
    await otherNode.append(c.id, { events: [{ type: "progress", id: "p1", callId: "call_1", state: "start" }, said("customer", "Hello?")] }, 2100);
    expect(await entryOf(c.id)).toMatchObject({ lastMessage: { seq: 3, message: { text: "Hello?" } }, waitingSince: 2000 });
    await node.append(c.id, { events: [said("agent", "It ships today.")], transcript: [{ role: "assistant", content: "It ships today." }] }, 2200);
    expect(await entryOf(c.id)).toMatchObject({ lastMessage: { seq: 4 }, waitingSince: null });
    // A proposal's review card answers; the write is then counted while unresolved and on follow-up.
    await node.appendEvent(c.id, said("customer", "Cancel it"), 2300);
    const write = { id: `w_${randomBytes(4).toString("hex")}`, conversationId: c.id, turnId: "t", callId: "call", toolRef: "shop/cancel_order", modelName: "shop__cancel_order", packageVersionId: "shop@sha256:" + "0".repeat(64), tool: "cancel_order", args: { orderId: "SO-1001" }, state: "proposed" as const, confirmation: "required" as const, ownerId: "owner", subjectId: null, createdAt: 2400 };
    const review = { type: "review", id: "r1", proposalId: write.id, title: "Cancel SO-1001", fields: [{ label: "Order", value: "SO-1001" }], expiresAt: "2030-01-01T00:00:00Z" } as unknown as Outbound;
    expect((await node.proposeWrite(write, { events: [review] })).ok).toBe(true);
    expect(await entryOf(c.id)).toMatchObject({ lastMessage: { seq: 5 }, waitingSince: null, unresolvedWrites: 0 });
    await node.changeWrite(write.id, { states: ["proposed"] }, { state: "unknown", followUp: true }, 2500, { events: [{ type: "outcome", id: "o1", proposalId: write.id, state: "unknown", message: "We could not confirm it." } as unknown as Outbound] });
    expect(await entryOf(c.id, "ana", otherNode)).toMatchObject({ lastMessage: { seq: 7, message: { type: "outcome" } }, unresolvedWrites: 1, followUps: 1 });
  });

  it("read marks are per member, only move forward, and are seen by the other node", async () => {
    const c = await conversation();
    await node.append(c.id, { events: [said("customer", "a"), said("agent", "b"), said("customer", "c")] }, 3000);
    await node.markRead(c.id, "ana", 2, 3001);
    await otherNode.markRead(c.id, "ana", 1, 3002);
    expect((await entryOf(c.id, "ana", otherNode)).readSeq).toBe(2);
    expect((await entryOf(c.id, "acme/ana")).readSeq).toBe(0);
    await otherNode.markRead(c.id, "ana", 3, 3003);
    expect((await entryOf(c.id)).readSeq).toBe(3);
  });

  it("the inbox lists only its workspace, newest first, at most the limit, and only the ids asked for", async () => {
    await node.ensureWorkspace("acme", 1);
    const elsewhere = await conversation("acme");
    const [older, newer] = [await conversation(), await conversation()];
    const listed = await node.listInbox({ workspaceId: "default", member: "ana", limit: 2 });
    expect(listed.map((entry) => entry.conversation.id)).toEqual([newer.id, older.id]);
    expect((await node.listInbox({ workspaceId: "default", member: "ana", limit: 50, ids: [older.id, elsewhere.id] })).map((entry) => entry.conversation.id)).toEqual([older.id]);
    expect((await node.listInbox({ workspaceId: "acme", member: "ana", limit: 50 })).map((entry) => entry.conversation.id)).toEqual([elsewhere.id]);
  });

  it("search candidates: the conversation's own fields and its writes' arguments, events whose JSON holds the text (%, _ and quotes literal), within the workspace", async () => {
    const byPhone = await conversation("default", "whatsapp:+15550100");
    const byText = await conversation();
    await node.appendEvent(byText.id, said("customer", 'My "blue" order 100% _late_'), 4000);
    const other = await conversation("acme");
    await node.appendEvent(other.id, said("customer", "whatsapp:+15550100 My \"blue\" order"), 4001);
    expect((await otherNode.searchConversations("default", "+15550100", 10)).map((hit) => hit.conversationId)).toEqual([byPhone.id]);
    for (const text of ['"blue"', "100%", "_late_", "MY \"BLUE"]) {
      const hits = await node.searchConversations("default", text, 10);
      expect(hits.map((hit) => [hit.conversationId, hit.event?.seq])).toEqual([[byText.id, 1]]);
    }
    expect(await node.searchConversations("default", "1000%", 10)).toEqual([]);
    expect(await node.searchConversations("default", "10_%", 10)).toEqual([]);
  });

  it("sign-in attempts from one address are counted once each across nodes, even at the same moment", async () => {
    const at = 5_000_000;
    const counts = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? node : otherNode).countSignInAttempt("addr-1", at + i, 60_000)));
    expect(counts.map((c) => c.count).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(new Set(counts.map((c) => c.since)).size).toBe(1);
    expect(await node.countSignInAttempt("addr-2", at, 60_000)).toEqual({ count: 1, since: at });
  });

  it("a window ends windowMs after it began: the next attempt starts a new one; pruning forgets ended windows only", async () => {
    const at = 9_000_000;
    await node.countSignInAttempt("addr-3", at, 60_000);
    expect(await otherNode.countSignInAttempt("addr-3", at + 59_999, 60_000)).toEqual({ count: 2, since: at });
    expect(await otherNode.countSignInAttempt("addr-3", at + 60_000, 60_000)).toEqual({ count: 1, since: at + 60_000 });
    await node.countSignInAttempt("addr-4", at + 1, 60_000);
    expect(await node.pruneSignInAttempts(at + 1)).toBe(2); // addr-1 and addr-2 of the test before
    expect(await node.countSignInAttempt("addr-4", at + 2, 60_000)).toEqual({ count: 2, since: at + 1 });
    expect(await node.pruneSignInAttempts(at + 60_001)).toBe(2); // addr-3 and addr-4
    expect(await node.countSignInAttempt("addr-3", at + 60_002, 60_000)).toEqual({ count: 1, since: at + 60_002 });
  });
});
