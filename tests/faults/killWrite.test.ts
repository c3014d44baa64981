// kill -9 of the node running a write: the write is unknown, a surviving node takes the lost node over
// and its status check records the real outcome, the customer (reconnected to a survivor) is told, and
// nothing runs twice. Three real `caplo serve` processes share one PostgreSQL database.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { TestClient } from "../gateway/support/client.ts";
import { AGENT, CaploNode, createDatabase, ORIGIN, publishAgent, scratch, Shop, stopAll, until } from "./support/cluster.ts";

const work = scratch();
let db: Awaited<ReturnType<typeof createDatabase>>;
let shop: Shop;
let nodes: CaploNode[] = [];

beforeAll(async () => {
  db = await createDatabase();
  shop = await Shop.start();
  const published = await publishAgent(work.dir);
  // All three start together: the schema is migrated once, under the lock.
  nodes = await Promise.all(["a", "b", "c"].map((name) => CaploNode.start({ name, databaseUrl: db.url, shop, ...published })));
});

afterAll(async () => {
  await stopAll();
  await shop?.close();
  await db?.drop();
  work.remove();
});

const outcome = (state: string) => (frame: ServerFrame) => frame.t === "event" && frame.message.type === "outcome" && frame.message.state === state;

describe("kill -9 of the node running a write", () => {
  it("leaves the write unknown; a survivor's status check records that it applied, the customer is told on another node, and it ran once", async () => {
    const [a, b, c] = nodes as [CaploNode, CaploNode, CaploNode];
    const customer = await TestClient.open(a.wsUrl, ORIGIN);
    const welcome = await customer.hello(AGENT);
    customer.send({ t: "in", ref: "m1", event: { type: "message", text: "please change HOLD-1" } });
    const review = await customer.waitFor((frame) => frame.t === "event" && frame.message.type === "review", 20_000);
    const proposalId = (review as { message: { proposalId: string } }).message.proposalId;
    customer.send({ t: "in", ref: "c1", event: { type: "confirm", proposalId } });
    // The shop applied the change; its answer is held, so node a is still inside the write.
    await until("the shop to apply HOLD-1", () => shop.keysFor("HOLD-1").length === 1, 30_000);
    const lastSeen = customer.events().at(-1)!.seq;

    // Meanwhile another customer on node c is served as usual.
    const other = await TestClient.open(c.wsUrl, ORIGIN);
    await other.hello(AGENT);

    await a.kill9();
    await customer.waitFor(() => false, 5_000).catch(() => undefined); // the socket closes with its node
    expect(customer.closed).toBeDefined();

    const look = new pg.Client({ connectionString: db.url });
    await look.connect();
    try {
      const atCrash = await look.query("SELECT state FROM writes WHERE id = $1", [proposalId]);
      expect(["running", "unknown"]).toContain(atCrash.rows[0].state);

      // The customer comes back through the load balancer, to node b.
      const resumed = await TestClient.open(b.wsUrl, ORIGIN);
      await resumed.hello(AGENT, { token: welcome.resumeToken, after: lastSeen });
      await resumed.waitFor(outcome("unknown"), 30_000);
      await resumed.waitFor(outcome("applied"), 30_000);
      const events = resumed.events();
      expect(events.map((frame) => frame.seq)).toEqual(events.map((_, index) => lastSeen + 1 + index));
      expect(events.filter((frame) => frame.message.type === "outcome").map((frame) => (frame.message as { state: string }).state)).toEqual(["unknown", "applied"]);

      other.send({ t: "in", ref: "o1", event: { type: "message", text: "say hello" } });
      await other.waitFor((frame) => frame.t === "event" && frame.message.type === "text" && frame.message.text === "You said: say hello", 20_000);

      // Nothing ran twice: one request, one application, under the write's one key.
      const [key] = shop.keysFor("HOLD-1");
      expect(shop.requests.get(key!)).toBe(1);
      // One status check, by one survivor, found it applied: the check was claimed by exactly one node.
      expect(shop.lookups.get(key!)).toBe(1);
      const write = await look.query("SELECT state, idempotency_key, node_id FROM writes WHERE id = $1", [proposalId]);
      expect(write.rows[0]).toMatchObject({ state: "applied", idempotency_key: key });
      const transitions = await look.query("SELECT from_state, to_state FROM write_transitions WHERE write_id = $1 ORDER BY id", [proposalId]);
      expect(transitions.rows.map((row) => `${row.from_state}>${row.to_state}`)).toEqual(["proposed>proposed", "proposed>confirmed", "confirmed>running", "running>unknown", "unknown>applied"]);
      // Exactly one survivor took node a over; it no longer holds a lease.
      const takeovers = [b, c].filter((node) => node.lines.some((line) => line.includes("took over a lost node")));
      expect(takeovers).toHaveLength(1);
      const leases = await look.query("SELECT node_id FROM cluster_nodes ORDER BY node_id");
      expect(leases.rows).toHaveLength(2);
      await resumed.close();
      await other.close();
    } finally {
      await look.end();
    }
  });
});
