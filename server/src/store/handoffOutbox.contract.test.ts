// The handoff outbox's contract (HandoffOutboxPort), on SQLite and on PostgreSQL: a notice for the team's
// webhook is claimed by one node per lease, and each delivery attempt is recorded once (compare-and-set).
import { expect, it } from "vitest";
import { describeEachStore, uid } from "./testing/storeHarness.ts";

describeEachStore("Handoff outbox contract", ({ store, second, conversation }) => {
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
});
