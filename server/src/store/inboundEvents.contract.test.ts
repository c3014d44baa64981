// The inbound events' contract (InboundEventPort), on SQLite and on PostgreSQL: a platform event's source id
// is accepted once, even by two nodes at the same moment, and forgotten only when older than the cutoff.
import { expect, it } from "vitest";
import { describeEachStore, uid } from "./testing/storeHarness.ts";

describeEachStore("Inbound events contract", ({ store, second, conversation }) => {
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
});
