// A status check survives the loss of the node running it. Three real `caplo serve` processes on one
// PostgreSQL database: node a is killed inside a write the shop applied; a survivor takes a over and its
// status check asks the shop, which holds that first answer; the node running the check is killed too.
// Once the lost checker's claim on the check runs out (60 s), the last node claims it, asks again, and
// records the real outcome; the customer, back on the last node, is told; the write ran once.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { TestClient } from "../gateway/support/client.ts";
import { AGENT, CaploNode, createDatabase, nodeOwningPort, ORIGIN, publishAgent, scratch, Shop, stopAll, until } from "./support/cluster.ts";

const work = scratch();
let db: Awaited<ReturnType<typeof createDatabase>>;
let shop: Shop;
let nodes: CaploNode[] = [];

beforeAll(async () => {
  db = await createDatabase();
  shop = await Shop.start();
  const published = await publishAgent(work.dir);
  nodes = await Promise.all(["a", "b", "c"].map((name) => CaploNode.start({ name, databaseUrl: db.url, shop, ...published })));
});

afterAll(async () => {
  await stopAll();
  await shop?.close();
  await db?.drop();
  work.remove();
});

const outcome = (state: string) => (frame: ServerFrame) => frame.t === "event" && frame.message.type === "outcome" && frame.message.state === state;

describe("the node running a status check is lost", () => {
  it("leaves the check claimed until its claim runs out; then the last node runs it and records the real outcome, once", { timeout: 240_000 }, async () => {
    const [a, b, c] = nodes as [CaploNode, CaploNode, CaploNode];
    const customer = await TestClient.open(a.wsUrl, ORIGIN);
    const welcome = await customer.hello(AGENT);
    customer.send({ t: "in", ref: "m1", event: { type: "message", text: "please change HOLDCHECK-1" } });
    const review = await customer.waitFor((frame) => frame.t === "event" && frame.message.type === "review", 30_000);
    const proposalId = (review as { message: { proposalId: string } }).message.proposalId;
    customer.send({ t: "in", ref: "c1", event: { type: "confirm", proposalId } });
    await until("the shop to apply HOLDCHECK-1", () => shop.keysFor("HOLDCHECK-1").length === 1, 30_000);
    const [key] = shop.keysFor("HOLDCHECK-1");
    const lastSeen = customer.events().at(-1)!.seq;
    await a.kill9();

    // A survivor takes a over; a status check (on whichever survivor claimed it) asks the shop, which holds it.
    const held = await until("a survivor's status check to ask the shop", () => shop.heldLookups.find((lookup) => lookup.key === key), 30_000);
    const checker = nodeOwningPort(held.port, [b, c]);
    expect(checker, `no node owns the connection from port ${held.port}`).toBeDefined();
    const last = checker === b ? c : b;
    await checker!.kill9();

    const look = new pg.Client({ connectionString: db.url });
    await look.connect();
    try {
      const during = await look.query("SELECT state, check_lease_until FROM writes WHERE id = $1", [proposalId]);
      expect(during.rows[0].state).toBe("unknown");
      expect(Number(during.rows[0].check_lease_until)).toBeGreaterThan(Date.now()); // still claimed by the lost checker

      // The customer comes back, to the last node, and sees the write unknown, then applied.
      const resumed = await TestClient.open(last.wsUrl, ORIGIN);
      await resumed.hello(AGENT, { token: welcome.resumeToken, after: lastSeen });
      await resumed.waitFor(outcome("unknown"), 30_000);
      await resumed.waitFor(outcome("applied"), 150_000);
      const events = resumed.events();
      expect(events.map((frame) => frame.seq)).toEqual(events.map((_, index) => lastSeen + 1 + index));
      expect(events.filter((frame) => frame.message.type === "outcome").map((frame) => (frame.message as { state: string }).state)).toEqual(["unknown", "applied"]);

      // Applied once, under its one key; asked about twice: the lost checker's lookup and the last node's.
      expect(shop.requests.get(key!)).toBe(1);
      expect(shop.lookups.get(key!)).toBe(2);
      const write = await look.query("SELECT state, idempotency_key FROM writes WHERE id = $1", [proposalId]);
      expect(write.rows[0]).toMatchObject({ state: "applied", idempotency_key: key });
      const transitions = await look.query("SELECT from_state, to_state FROM write_transitions WHERE write_id = $1 ORDER BY id", [proposalId]);
      expect(transitions.rows.map((row) => `${row.from_state}>${row.to_state}`)).toEqual(["proposed>proposed", "proposed>confirmed", "confirmed>running", "running>unknown", "unknown>applied"]);
      // Only the last node is left in the cluster.
      await until("the last node to take the checker over", async () => (await look.query("SELECT node_id FROM cluster_nodes")).rows.length === 1, 30_000);
      await resumed.close();
    } finally {
      await look.end();
    }
  });
});
