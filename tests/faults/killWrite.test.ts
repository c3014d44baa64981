// Three real `caplo serve` processes started together on one empty PostgreSQL database, without Redis:
// every schema (the store's, the liveness leases', the channels') is migrated once and completely; events
// travel between nodes over PostgreSQL LISTEN/NOTIFY. Then kill -9 of the node running a write: the write
// is unknown, a surviving node takes the lost node over and its status check records the real outcome,
// the customer (reconnected to a survivor) is told, and nothing runs twice.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { CHANNEL_MIGRATIONS_TABLE, CHANNEL_POSTGRES_MIGRATIONS } from "../../server/src/channels/inbox/index.ts";
import { NODE_LEASE_MIGRATIONS, NODE_MIGRATIONS_TABLE } from "../../server/src/cluster/nodeLeases.ts";
import { POSTGRES_MIGRATIONS } from "../../server/src/store/migrations.ts";
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
  // All three start together: each schema is migrated once, under its lock. WhatsApp is switched on (made-up
  // credentials, nothing is sent) so the channels' tables are migrated by three nodes at once too.
  const whatsapp = {
    CAPLO_TWILIO_ACCOUNT_SID: `AC${"0".repeat(32)}`,
    CAPLO_TWILIO_AUTH_TOKEN: "1".repeat(32),
    CAPLO_WHATSAPP_FROM: "whatsapp:+15550001111",
    CAPLO_PUBLIC_URL: "https://faults.example",
    CAPLO_TWILIO_API_BASE: "http://127.0.0.1:9",
  };
  nodes = await Promise.all(["a", "b", "c"].map((name) => CaploNode.start({ name, databaseUrl: db.url, shop, ...published, env: whatsapp })));
});

afterAll(async () => {
  await stopAll();
  await shop?.close();
  await db?.drop();
  work.remove();
});

const outcome = (state: string) => (frame: ServerFrame) => frame.t === "event" && frame.message.type === "outcome" && frame.message.state === state;

const said = (text: string) => (frame: ServerFrame) => frame.t === "event" && frame.message.type === "text" && frame.message.from === "agent" && frame.message.text === `You said: ${text}`;

describe("three nodes started together, without Redis", () => {
  it("migrated every schema once and completely, and every node listens on PostgreSQL for the others' events", async () => {
    const look = new pg.Client({ connectionString: db.url });
    await look.connect();
    try {
      for (const [table, migrations] of [
        ["schema_migrations", POSTGRES_MIGRATIONS],
        [NODE_MIGRATIONS_TABLE, NODE_LEASE_MIGRATIONS],
        [CHANNEL_MIGRATIONS_TABLE, CHANNEL_POSTGRES_MIGRATIONS],
      ] as const) {
        const applied = await look.query(`SELECT version FROM ${table} ORDER BY version`);
        expect(applied.rows.map((row) => Number(row.version)), table).toEqual(migrations.map((migration) => migration.version));
      }
      const leases = await look.query("SELECT count(*)::int AS n FROM cluster_nodes");
      expect(leases.rows[0].n).toBe(3);
      // One LISTEN connection per node: the bus is PostgreSQL's, as no Redis is configured.
      const listening = await look.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'caplo-bus-listen'", [db.name]);
      expect(listening.rows[0].n).toBe(3);
    } finally {
      await look.end();
    }
    for (const node of nodes) {
      expect(await node.ready()).toEqual({ ready: true, store: "ok", bus: "healthy" });
      expect(node.lines.filter((line) => /migrat|error/i.test(line))).toEqual([]);
    }
  });

  it("delivers a conversation's events to its tab on another node over LISTEN/NOTIFY, both ways, each once and in order", async () => {
    const [, b, c] = nodes as [CaploNode, CaploNode, CaploNode];
    const tab1 = await TestClient.open(b.wsUrl, ORIGIN);
    const welcome = await tab1.hello(AGENT);
    const tab2 = await TestClient.open(c.wsUrl, ORIGIN);
    await tab2.hello(AGENT, { token: welcome.resumeToken, after: 0 });
    for (const word of ["one", "two", "three"]) {
      tab1.send({ t: "in", ref: word, event: { type: "message", text: `say ${word}` } });
      await tab2.waitFor(said(`say ${word}`), 20_000); // produced on node b, delivered by node c
    }
    tab2.send({ t: "in", ref: "four", event: { type: "message", text: "say four" } });
    await tab1.waitFor(said("say four"), 20_000); // produced on node c, delivered by node b
    await tab2.waitFor(said("say four"), 20_000);
    const seqs = tab2.events().map((frame) => frame.seq);
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    expect(tab1.events().map((frame) => frame.message)).toEqual(tab2.events().map((frame) => frame.message));
    // The bus stayed healthy: nothing came by the degraded path's polling.
    for (const node of [b, c]) expect(node.lines.some((line) => /event bus degraded/.test(line))).toBe(false);
    await tab1.close();
    await tab2.close();
  });
});

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
