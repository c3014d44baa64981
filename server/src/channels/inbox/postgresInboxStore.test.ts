// What only the PostgreSQL inbox does, with several nodes on the machine's PostgreSQL (a schema of this run's
// own; the rest is inboxStore.contract.test.ts): each received webhook event claimed by exactly one of three
// nodes, a claim held only as long as its node's lease, each outbound part sent by exactly one node, and a
// customer bound to one conversation whichever node hears from them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NodeLeases } from "../../cluster/nodeLeases.ts";
import { TEST_DATABASE_URL, TestSchema } from "../../cluster/testSchema.ts";
import type { Platform } from "../ports.ts";
import { PostgresInboxStore } from "./postgresInboxStore.ts";

const schema = new TestSchema();
const stores: PostgresInboxStore[] = [];
const leases = new Map<string, NodeLeases>();
/** A node: its channel state, and its liveness lease (a minute, renewed here only when a test says so). */
const node = async (nodeId: string, claims: { inboundClaimMs?: number; outboxClaimMs?: number } = {}) => {
  const store = await PostgresInboxStore.open({ connectionString: TEST_DATABASE_URL, schema: schema.name, nodeId, max: 2, ...claims });
  stores.push(store);
  const lease = new NodeLeases({ pool: schema.pool(1), schema: schema.name, nodeId, leaseMs: 60_000 });
  await lease.heartbeat();
  leases.set(nodeId, lease);
  return store;
};
let a: PostgresInboxStore;
let b: PostgresInboxStore;
let c: PostgresInboxStore;

beforeAll(async () => {
  // Three nodes starting together migrate the tables once.
  [a, b, c] = await Promise.all([node("node-a"), node("node-b"), node("node-c")]);
});
afterAll(async () => {
  for (const store of stores) store.close();
  await schema.drop();
});

const whatsapp: Platform = "whatsapp";

describe("PostgresInboxStore", () => {
  it("stores a webhook event once however often and wherever it arrives, and hands each to exactly one of three nodes", async () => {
    const inserted = await Promise.all(
      Array.from({ length: 60 }, (_, i) => [a, b, c][i % 3]!.insertInbound({ platform: whatsapp, messageId: `SM${i % 30}`, event: "{}", receivedAt: 1_000 + (i % 30) })),
    );
    expect(inserted.filter(Boolean)).toHaveLength(30);
    const claimedBy = new Map<string, string[]>();
    await Promise.all(
      [a, b, c].map(async (store) => {
        for (;;) {
          const rows = await store.claimInbound(4);
          if (rows.length === 0) return;
          for (const row of rows) {
            claimedBy.set(row.messageId, [...(claimedBy.get(row.messageId) ?? []), store.nodeId]);
            await store.finishInbound(row.platform, row.messageId, "done");
          }
        }
      }),
    );
    expect(claimedBy.size).toBe(30);
    expect([...claimedBy.values()].filter((holders) => holders.length !== 1)).toEqual([]);
    expect(await a.listInbound("received")).toEqual([]);
  });

  it("gives an event claimed by a lost node to the next node that drains: its lease ran out, or it was taken over", async () => {
    const doomed = await node("node-doomed");
    await a.insertInbound({ platform: whatsapp, messageId: "SM-doomed-1", event: "{}", receivedAt: 6_000 });
    await a.insertInbound({ platform: whatsapp, messageId: "SM-doomed-2", event: "{}", receivedAt: 6_001 });
    expect((await doomed.claimInbound(2)).map((row) => row.messageId)).toEqual(["SM-doomed-1", "SM-doomed-2"]);
    // Its lease is alive: nobody else claims them, and a node starting now leaves them alone.
    expect(await b.claimInbound(5)).toEqual([]);
    expect(await c.requeueProcessing()).toBe(0);

    // The node stops renewing and its lease runs out (as a minute passing would do).
    const look = schema.pool(1);
    await look.query(`UPDATE "${schema.name}".cluster_nodes SET lease_until = now() - interval '1 second' WHERE node_id = 'node-doomed'`);
    const taken = await Promise.all([b.claimInbound(5), c.claimInbound(5)]);
    expect(taken.flat().map((row) => row.messageId).sort()).toEqual(["SM-doomed-1", "SM-doomed-2"]);
    // Each row once, to the node whose claim returned it (two drains at once may split them: SKIP LOCKED).
    const claims = await look.query(`SELECT message_id, claimed_by FROM "${schema.name}".channel_inbox WHERE message_id LIKE 'SM-doomed-%'`).then((result) => result.rows);
    for (const [index, holder] of [b, c].entries()) {
      for (const row of taken[index]!) {
        expect(claims.find((claim: { message_id: string }) => claim.message_id === row.messageId)?.claimed_by).toBe(holder.nodeId);
        await holder.finishInbound(whatsapp, row.messageId, "done");
      }
    }

    // A node taken over (its lease row removed by the survivor) holds nothing either; requeued at a start.
    const gone = await node("node-gone");
    await a.insertInbound({ platform: whatsapp, messageId: "SM-gone", event: "{}", receivedAt: 6_002 });
    expect((await gone.claimInbound(1)).map((claimed) => claimed.messageId)).toEqual(["SM-gone"]);
    expect(await a.requeueProcessing()).toBe(0);
    await leases.get("node-gone")!.leave();
    expect(await a.requeueProcessing()).toBe(1);
    expect((await b.claimInbound(5)).map((claimed) => claimed.messageId)).toEqual(["SM-gone"]);
    await b.finishInbound(whatsapp, "SM-gone", "done");
  });

  it("gives an event claimed by a node that went silent to another node once the claim is old, and never one a live node holds", async () => {
    const quick = await node("node-quick", { inboundClaimMs: 200 });
    await a.insertInbound({ platform: whatsapp, messageId: "SM-lost", event: "{}", receivedAt: 5_000 });
    const [held] = await a.claimInbound(1);
    expect(held?.messageId).toBe("SM-lost");
    expect(await quick.claimInbound(1)).toEqual([]); // just claimed: alive
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await quick.claimInbound(1)).map((row) => row.messageId)).toEqual(["SM-lost"]);
    expect(await b.requeueProcessing()).toBe(0); // b's default claim time: nothing is old enough
  });

  it("binds a customer to one conversation whichever node hears from them first", async () => {
    const key = { platform: whatsapp, account: "whatsapp:+15550001111", externalId: "whatsapp:+15550002222" };
    const bound = await Promise.all([a.bind(key, "c_from_a", 1), b.bind(key, "c_from_b", 2), c.bind(key, "c_from_c", 3)]);
    expect(new Set(bound.map((binding) => binding.conversationId)).size).toBe(1);
    expect((await b.findBinding(key))?.conversationId).toBe(bound[0]!.conversationId);
    await b.setCursor(key, 7);
    await c.setCursor(key, 5);
    expect((await a.findBinding(key))?.cursor).toBe(7);
  });

  it("lets exactly one of three nodes send an outbound part; the others see it as sent, and a silent sender's part is taken over", async () => {
    const answers = await Promise.all([a, b, c].map((store) => store.getOutbox(whatsapp, "c_1", 4, 0)));
    expect(answers.filter((answer) => answer === undefined)).toHaveLength(1);
    expect(answers.filter((answer) => answer?.state === "sent")).toHaveLength(2);
    const sender = [a, b, c][answers.indexOf(undefined)]!;
    await sender.recordOutbox({ platform: whatsapp, conversationId: "c_1", seq: 4, part: 0, state: "sent", attempts: 1, platformId: "SMout1", at: 10 });
    expect(await a.getOutbox(whatsapp, "c_1", 4, 0)).toMatchObject({ state: "sent", platformId: "SMout1" });

    const silent = await node("node-silent", { outboxClaimMs: 200 });
    const other = await node("node-other", { outboxClaimMs: 200 });
    expect(await silent.getOutbox(whatsapp, "c_1", 5, 0)).toBeUndefined(); // claimed, then the node dies
    expect(await other.getOutbox(whatsapp, "c_1", 5, 0)).toMatchObject({ state: "sent" });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await other.getOutbox(whatsapp, "c_1", 5, 0)).toBeUndefined();
  });
});
