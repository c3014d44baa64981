// The inbox's contract, on SQLite and on PostgreSQL: a webhook event is stored once per (platform, message
// id), claimed once and oldest first, given back when the node holding it is lost, and pruned only when
// processed and older than the cutoff; a customer is bound to one conversation; references, numbered
// replies, failures and content ids are every node's; a delivery status is kept once per part and
// status (even before the part's record, even when two nodes hear the same callback) and listed per conversation.
import { expect, it } from "vitest";
import { describeEachInbox } from "./testing/eachInbox.ts";

describeEachInbox("Inbox contract", ({ store, second, restart }) => {
  it("stores a repeat of the same (platform, message id) once, and the same id on another platform separately", async () => {
    const row = { platform: "whatsapp" as const, messageId: "SM1", event: "{}", receivedAt: 1 };
    expect(await store.insertInbound(row)).toBe(true);
    expect(await store.insertInbound(row)).toBe(false);
    expect(await second.insertInbound(row)).toBe(false);
    expect(await store.insertInbound({ ...row, platform: "messenger" })).toBe(true);
    expect(await store.listInbound()).toHaveLength(2);
  });

  it("claims received rows once, oldest first, and the processing rows of a node that was lost go back to received", async () => {
    for (const [id, at] of [["b", 2], ["a", 1], ["c", 3]] as const) await store.insertInbound({ platform: "instagram", messageId: id, event: "{}", receivedAt: at });
    const first = await store.claimInbound(2);
    expect(first.map((r) => r.messageId)).toEqual(["a", "b"]);
    expect((await store.claimInbound(5)).map((r) => r.messageId)).toEqual(["c"]);
    expect(await store.claimInbound(5)).toEqual([]);
    expect(await second.claimInbound(5)).toEqual([]);
    await store.finishInbound("instagram", "a", "done");
    await restart();
    expect(await store.requeueProcessing()).toBe(2);
    expect((await store.claimInbound(5)).map((r) => r.messageId)).toEqual(["b", "c"]);
    await store.finishInbound("instagram", "b", "failed", "engine refused");
    await store.finishInbound("instagram", "b", "done");
    expect((await store.listInbound("failed"))[0]).toMatchObject({ messageId: "b", error: "engine refused" });
  });

  it("binds a customer to one conversation even when bound twice, and keeps state across a restart", async () => {
    const u1 = { platform: "messenger" as const, account: "105000000000001", externalId: "u1" };
    expect((await store.bind(u1, "conv-1", 10)).conversationId).toBe("conv-1");
    expect((await second.bind(u1, "conv-2", 11)).conversationId).toBe("conv-1");
    await store.touchInbound(u1, 50);
    await store.touchInbound(u1, 40);
    await store.setCursor(u1, 7);
    await second.setCursor(u1, 5);
    await store.putRefs([{ token: "c1.x", platform: "messenger", conversationId: "conv-1", kind: "confirm", targetId: "p1" }]);
    await store.recordOutbox({ platform: "messenger", conversationId: "conv-1", seq: 3, part: 0, state: "failed", attempts: 5, code: "platform_unavailable", message: "503", at: 99 });
    await restart();
    expect(await store.findBinding(u1)).toMatchObject({ conversationId: "conv-1", lastInboundAt: 50, disclosed: false, cursor: 7 });
    await store.setDisclosed(u1);
    expect(await store.findBinding(u1)).toMatchObject({ lastInboundAt: 50, disclosed: true, cursor: 7 });
    expect(await store.findBinding({ ...u1, externalId: "u2" })).toBeUndefined();
    expect(await store.findBindingByConversation("conv-1")).toMatchObject({ externalId: "u1", account: "105000000000001" });
    expect(await store.getRef("c1.x")).toEqual({ token: "c1.x", platform: "messenger", conversationId: "conv-1", kind: "confirm", targetId: "p1" });
    expect(await store.listFailures()).toEqual([expect.objectContaining({ seq: 3, code: "platform_unavailable", attempts: 5 })]);
  });

  it("prunes processed rows received before the cutoff, keeps the boundary and every row still waiting; sent records too, never failures", async () => {
    const row = (messageId: string, receivedAt: number) => store.insertInbound({ platform: "messenger", messageId, event: "{}", receivedAt });
    await row("old-done", 99);
    await row("edge-done", 100);
    await row("old-failed", 50);
    await row("old-waiting", 1);
    await row("old-processing", 2);
    expect(await store.claimInbound(5)).toHaveLength(5);
    await store.finishInbound("messenger", "old-done", "done");
    await store.finishInbound("messenger", "edge-done", "done");
    await store.finishInbound("messenger", "old-failed", "failed", "x");
    await restart();
    expect(await store.requeueProcessing()).toBe(2);
    await store.claimInbound(1); // old-waiting back to processing; old-processing stays received
    const out = { platform: "messenger" as const, conversationId: "c", part: 0, attempts: 1 };
    await store.recordOutbox({ ...out, seq: 1, state: "sent", platformId: "mid.1", at: 99 });
    await store.recordOutbox({ ...out, seq: 2, state: "sent", platformId: "mid.2", at: 100 });
    await store.recordOutbox({ ...out, seq: 3, state: "failed", code: "platform_refused", at: 10 });
    expect(await store.prune(100)).toEqual({ inbox: 2, outbox: 1 });
    expect((await store.listInbound()).map((r) => r.messageId).sort()).toEqual(["edge-done", "old-processing", "old-waiting"]);
    expect(await store.getOutbox("messenger", "c", 2, 0)).toMatchObject({ state: "sent" });
    expect(await store.listFailures()).toHaveLength(1);
    // A pruned id is new again (past the redelivery window); a kept one is still a repeat.
    expect(await row("old-done", 200)).toBe(true);
    expect(await row("edge-done", 200)).toBe(false);
  });

  it("keeps refs, numbered replies, failures and content ids for every node", async () => {
    await store.putRefs([{ token: "c1.tokentokentokentokenAA", platform: "whatsapp", conversationId: "c_2", kind: "confirm", targetId: "p_1" }]);
    expect(await second.getRef("c1.tokentokentokentokenAA")).toEqual({ token: "c1.tokentokentokentokenAA", platform: "whatsapp", conversationId: "c_2", kind: "confirm", targetId: "p_1" });
    expect(await second.getRef("c1.never-issued")).toBeUndefined();
    const replies = [{ value: "I pick Store 1", label: "Store 1" }, { value: 'say "two" \\ ünï', label: "Store 2" }];
    await second.setNumberedReplies("c_2", replies);
    expect(await store.getNumberedReplies("c_2")).toEqual(replies);
    await store.setNumberedReplies("c_2", [replies[1]!]);
    expect(await second.getNumberedReplies("c_2")).toEqual([replies[1]]);
    expect(await second.getNumberedReplies("c_3")).toBeUndefined();
    await store.setNumberedReplies("c_2", null);
    expect(await second.getNumberedReplies("c_2")).toBeUndefined();
    await store.recordOutbox({ platform: "whatsapp", conversationId: "c_2", seq: 1, part: 0, state: "sent", attempts: 1, platformId: "SMx", at: 20 });
    expect(await second.markFailedByPlatformId("SMx", "undelivered", "Not delivered.")).toMatchObject({ state: "failed", code: "undelivered" });
    expect((await store.listFailures()).map((failure) => failure.platformId)).toContain("SMx");
    await store.putContentSid("h1", "HX1");
    await second.putContentSid("h1", "HX2");
    expect(await store.getContentSid("h1")).toBe("HX1");
  });

  it("a delivery status is kept once per part and status (even before the part's record, even when two nodes hear the same callback), listed per conversation by seq and part with its error code", async () => {
    const conversationId = "conv-status";
    const other = `${conversationId}-other`;
    const sent = { platform: "whatsapp" as const, state: "sent" as const, attempts: 1 };
    expect(await store.recordStatus("whatsapp", `${conversationId}-early`, { status: "sent", at: 5 })).toBe(true);
    await store.recordOutbox({ ...sent, conversationId, seq: 2, part: 0, platformId: `${conversationId}-early`, at: 4 });
    await store.recordOutbox({ ...sent, conversationId, seq: 1, part: 1, platformId: `${conversationId}-b`, at: 3 });
    await store.recordOutbox({ ...sent, conversationId, seq: 1, part: 0, platformId: `${conversationId}-a`, at: 2 });
    await store.recordOutbox({ ...sent, conversationId: other, seq: 1, part: 0, platformId: `${conversationId}-z`, at: 2 });
    expect(await store.recordStatus("whatsapp", `${conversationId}-a`, { status: "delivered", at: 7 })).toBe(true);
    // A repeated callback is kept once, with its first time.
    expect(await store.recordStatus("whatsapp", `${conversationId}-a`, { status: "delivered", at: 8 })).toBe(false);
    expect(await store.recordStatus("whatsapp", `${conversationId}-a`, { status: "sent", at: 6 })).toBe(true);
    expect(await store.recordStatus("whatsapp", `${conversationId}-b`, { status: "undelivered", at: 9, errorCode: 63016 })).toBe(true);
    expect(await store.recordStatus("messenger", `${conversationId}-a`, { status: "read", at: 10 })).toBe(true);
    expect(await store.recordStatus("whatsapp", `${conversationId}-z`, { status: "read", at: 11 })).toBe(true);

    const parts = await store.listOutbox(conversationId);
    expect(parts.map((part) => [part.seq, part.part, part.platformId])).toEqual([
      [1, 0, `${conversationId}-a`],
      [1, 1, `${conversationId}-b`],
      [2, 0, `${conversationId}-early`],
    ]);
    expect(parts[0]!.statuses).toEqual([
      { status: "sent", at: 6 },
      { status: "delivered", at: 7 },
    ]);
    expect(parts[1]!.statuses).toEqual([{ status: "undelivered", at: 9, errorCode: 63016 }]);
    expect(parts[2]!.statuses).toEqual([{ status: "sent", at: 5 }]);
    expect((await store.listOutbox(other))[0]!.statuses).toEqual([{ status: "read", at: 11 }]);
    expect(await store.listOutbox(`${conversationId}-none`)).toEqual([]);

    // Two nodes hearing the same callback keep it once; the other node lists it.
    const twice = await Promise.all([store, second].map((node) => node.recordStatus("whatsapp", `${conversationId}-a`, { status: "read", at: 12 })));
    expect(twice.filter(Boolean)).toHaveLength(1);
    expect((await second.listOutbox(conversationId))[0]!.statuses!.map((status) => status.status)).toEqual(["sent", "delivered", "read"]);
  });
});
