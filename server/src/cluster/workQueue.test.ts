// Claiming work exactly once across nodes, and taking over a lost node's work when its lease runs out,
// on the machine's PostgreSQL in a schema of this run's own.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestSchema } from "./testSchema.ts";
import { LEASE_MS_MIN, WORK_KEY_MAX, WORK_PAYLOAD_MAX_BYTES, WorkQueue } from "./workQueue.ts";

const schema = new TestSchema();
beforeAll(async () => {
  const migrated = await WorkQueue.migrate(schema.pool(1), schema.name);
  expect(migrated).toEqual({ ok: true, applied: [1] });
});
afterAll(() => schema.drop());

const node = (nodeId: string, leaseMs?: number) => new WorkQueue({ pool: schema.pool(2), schema: schema.name, nodeId, ...(leaseMs ? { leaseMs } : {}) });
const kindOf = () => `test.${randomUUID().slice(0, 8)}`;

async function waitFor<T>(what: string, attempt: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const value = await attempt();
    if (value !== undefined) return value;
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("WorkQueue", () => {
  it("migrates once: a second migrate applies nothing", async () => {
    expect(await WorkQueue.migrate(schema.pool(1), schema.name)).toEqual({ ok: true, applied: [] });
  });

  it("hands every due item to exactly one of three nodes claiming at the same time", async () => {
    const kind = kindOf();
    const scheduler = node("scheduler");
    const total = 150;
    for (let start = 0; start < total; start += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, i) => scheduler.schedule(kind, `item-${start + i}`, { payload: { n: start + i } })));
    }
    const nodes = [node("node-a"), node("node-b"), node("node-c")];
    const claimedBy = new Map<string, string[]>();
    await Promise.all(
      nodes.map(async (queue) => {
        for (;;) {
          const claims = await queue.claimDue(kind, 7);
          if (claims.length === 0) return;
          for (const claim of claims) {
            claimedBy.set(claim.key, [...(claimedBy.get(claim.key) ?? []), queue.nodeId]);
            expect(await queue.complete(claim)).toBe(true);
          }
        }
      }),
    );
    expect(claimedBy.size).toBe(total);
    expect([...claimedBy.values()].filter((holders) => holders.length !== 1)).toEqual([]);
    expect(await scheduler.countOpen(kind)).toBe(0);
  });

  it("lets another node take over a lost node's claim once its lease runs out, and refuses the lost node's late result", async () => {
    const kind = kindOf();
    const lost = node("node-lost", LEASE_MS_MIN);
    const survivor = node("node-survivor", LEASE_MS_MIN);
    expect(await lost.schedule(kind, "status-check-w1", { payload: { writeId: "w1" } })).toEqual({ ok: true, created: true });
    const [first] = await lost.claimDue(kind, 10);
    expect(first).toMatchObject({ key: "status-check-w1", claimedBy: "node-lost", token: 1, payload: { writeId: "w1" } });
    // While the lease lives, nobody else gets it.
    expect(await survivor.claimDue(kind, 10)).toEqual([]);
    // The lost node never renews; the survivor keeps looking until the lease has run out.
    const [taken] = await waitFor("the lease to run out", async () => {
      const claims = await survivor.claimDue(kind, 10);
      return claims.length > 0 ? claims : undefined;
    });
    expect(taken).toMatchObject({ key: "status-check-w1", claimedBy: "node-survivor", token: 2 });
    // The lost node comes back late: its claim no longer counts.
    expect(await lost.complete(first!)).toBe(false);
    expect(await lost.renew(first!)).toBeUndefined();
    expect(await lost.retry(first!, 0)).toBe(false);
    expect(await survivor.complete(taken!)).toBe(true);
    expect(await survivor.countOpen(kind)).toBe(0);
  });

  it("does not hand out an item before it is due", async () => {
    const kind = kindOf();
    const queue = node("node-a");
    await queue.schedule(kind, "later", { delayMs: 60_000 });
    expect(await queue.claimDue(kind, 10)).toEqual([]);
    expect(await queue.countOpen(kind)).toBe(1);
  });

  it("keeps one item when the same kind and key is scheduled twice (a webhook delivered twice)", async () => {
    const kind = kindOf();
    const a = node("node-a");
    const b = node("node-b");
    const results = await Promise.all([a.schedule(kind, "wamid.HBgL", { payload: { from: "a" } }), b.schedule(kind, "wamid.HBgL", { payload: { from: "b" } })]);
    expect(results.map((result) => result.ok && result.created).sort()).toEqual([false, true]);
    expect(await a.countOpen(kind)).toBe(1);
  });

  it("renews only a claim still held, and a retried item comes back after its delay with a new token", async () => {
    const kind = kindOf();
    const queue = node("node-a", 5_000);
    await queue.schedule(kind, "check");
    const [claim] = await queue.claimDue(kind, 1);
    const renewed = await queue.renew(claim!);
    expect(renewed?.leaseUntil.getTime()).toBeGreaterThanOrEqual(claim!.leaseUntil.getTime());
    expect(await queue.retry(renewed!, 60_000)).toBe(true);
    expect(await queue.renew(renewed!)).toBeUndefined(); // given back: no longer ours
    expect(await queue.claimDue(kind, 1)).toEqual([]); // due in a minute
    expect(await queue.complete(renewed!)).toBe(false);

    const other = kindOf();
    await queue.schedule(other, "check");
    const [once] = await queue.claimDue(other, 1);
    expect(await queue.retry(once!, 0)).toBe(true);
    const [again] = await queue.claimDue(other, 1);
    expect(again).toMatchObject({ key: "check", token: 2 });
    expect(await queue.complete(once!)).toBe(false); // the older claim does not decide
    expect(await queue.complete(again!)).toBe(true);
  });

  it("refuses a bad kind, key, delay or payload with a code and path, at the limits", async () => {
    const queue = node("node-a");
    const kind = kindOf();
    expect(await queue.schedule(kind, "k".repeat(WORK_KEY_MAX))).toEqual({ ok: true, created: true });
    expect(await queue.schedule(kind, "k".repeat(WORK_KEY_MAX + 1))).toMatchObject({ ok: false, error: { code: "work_key_invalid", path: "key" } });
    expect(await queue.schedule(kind, "")).toMatchObject({ ok: false, error: { code: "work_key_invalid", path: "key" } });
    expect(await queue.schedule("Not A Kind", "k")).toMatchObject({ ok: false, error: { code: "work_kind_invalid", path: "kind" } });
    expect(await queue.schedule(kind, "negative", { delayMs: -1 })).toMatchObject({ ok: false, error: { code: "work_delay_invalid", path: "delayMs" } });
    // A JSON string is its characters plus two quotes.
    const atLimit = "a".repeat(WORK_PAYLOAD_MAX_BYTES - 2);
    expect(await queue.schedule(kind, "payload-at-limit", { payload: atLimit })).toEqual({ ok: true, created: true });
    expect(await queue.schedule(kind, "payload-over", { payload: `${atLimit}a` })).toMatchObject({ ok: false, error: { code: "work_payload_invalid", path: "payload" } });
    expect(await queue.schedule(kind, "payload-bigint", { payload: { n: 1n } })).toMatchObject({ ok: false, error: { code: "work_payload_invalid" } });
    expect(await queue.countOpen(kind)).toBe(2);
    await expect(queue.claimDue(kind, 0)).rejects.toThrow(/limit/);
    await expect(queue.claimDue(kind, 1_001)).rejects.toThrow(/limit/);
  });
});

