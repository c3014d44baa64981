// WhatsApp webhooks spread over two real `caplo serve` nodes by the load balancer, with the channels'
// state in the shared PostgreSQL: the customer keeps one conversation whichever node their messages
// reach, each webhook event is processed by one node (a redelivery to the other node changes nothing),
// and each reply is sent to Twilio once, although both nodes follow the conversation. Then a node is
// killed while it holds the claim of a webhook event: once its lease has run out, the other node claims the
// event again and processes it, and the customer gets that reply once.
import pg from "pg";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { twilioSignature } from "@caplo/adapters/testkit";
import { startFakeTwilio, type FakeTwilio } from "../channels/fakeTwilio.ts";
import { CaploNode, createDatabase, publishAgent, scratch, stopAll, until } from "./support/cluster.ts";

const BUSINESS = "whatsapp:+14155238886";
const CUSTOMER = "whatsapp:+38640111222";
const PUBLIC_URL = "https://faults.example";
const work = scratch();
let db: Awaited<ReturnType<typeof createDatabase>>;
let twilio: FakeTwilio;
let nodes: CaploNode[] = [];

beforeAll(async () => {
  db = await createDatabase();
  twilio = await startFakeTwilio();
  const published = await publishAgent(work.dir);
  const env = {
    CAPLO_TWILIO_ACCOUNT_SID: twilio.accountSid,
    CAPLO_TWILIO_AUTH_TOKEN: twilio.authToken,
    CAPLO_WHATSAPP_FROM: BUSINESS,
    CAPLO_PUBLIC_URL: PUBLIC_URL,
    CAPLO_TWILIO_API_BASE: twilio.url,
  };
  nodes = await Promise.all(["a", "b"].map((name) => CaploNode.start({ name, databaseUrl: db.url, ...published, env })));
});

afterAll(async () => {
  await stopAll();
  await twilio?.close();
  await db?.drop();
  work.remove();
});

/** A signed Twilio webhook for one customer message, posted to one node. */
async function deliver(node: CaploNode, messageSid: string, text: string): Promise<number> {
  const raw = new URLSearchParams({
    SmsMessageSid: messageSid,
    NumMedia: "0",
    ProfileName: "Ana",
    MessageType: "text",
    WaId: "38640111222",
    Body: text,
    To: BUSINESS,
    MessageSid: messageSid,
    AccountSid: twilio.accountSid,
    From: CUSTOMER,
    ApiVersion: "2010-04-01",
  }).toString();
  const response = await fetch(`${node.url}/webhooks/whatsapp`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": twilioSignature(Buffer.from(raw), `${PUBLIC_URL}/webhooks/whatsapp`, twilio.authToken) },
    body: raw,
  });
  await response.text();
  return response.status;
}

const sid = () => `SM${randomBytes(16).toString("hex")}`;
const replies = () => twilio.sent.filter((message) => message.to === CUSTOMER).map((message) => message.body ?? message.content?.body ?? "");

describe("WhatsApp over two nodes", () => {
  it("keeps one conversation across nodes, processes each event once and sends each reply once", async () => {
    const [a, b] = nodes as [CaploNode, CaploNode];
    const first = sid();
    expect(await deliver(a, first, "say one")).toBe(200);
    await until("the first reply", () => replies().includes("You said: say one"), 30_000);
    expect(await deliver(b, sid(), "say two")).toBe(200);
    await until("the second reply", () => replies().includes("You said: say two"), 30_000);
    const third = sid();
    expect(await deliver(a, third, "say three")).toBe(200);
    // Twilio retries the same event, and the load balancer sends the retries to the other node.
    expect(await deliver(b, third, "say three")).toBe(200);
    expect(await deliver(b, first, "say one")).toBe(200);
    await until("the third reply", () => replies().includes("You said: say three"), 30_000);
    // Both nodes follow the conversation; give a second node's duplicate send time to show up.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const texts = replies().filter((text) => text.startsWith("You said:"));
    expect(texts).toEqual(["You said: say one", "You said: say two", "You said: say three"]);
    expect(twilio.violations).toEqual([]);

    const look = new pg.Client({ connectionString: db.url });
    await look.connect();
    try {
      const conversations = await look.query("SELECT id FROM conversations WHERE external_id = $1", [CUSTOMER]);
      expect(conversations.rows).toHaveLength(1);
      const inbox = await look.query("SELECT message_id, state, claimed_by FROM channel_inbox ORDER BY received_at");
      expect(inbox.rows.map((row) => row.state)).toEqual(["done", "done", "done"]);
      expect(new Set(inbox.rows.map((row) => row.claimed_by)).size).toBe(2); // processed where received
      const customerTurns = await look.query("SELECT count(*)::int AS n FROM events WHERE conversation_id = $1 AND message->>'from' = 'customer'", [conversations.rows[0].id]);
      expect(customerTurns.rows[0].n).toBe(3);
    } finally {
      await look.end();
    }
  });

  it("has the other node process a webhook event whose claim a killed node held, once its lease ran out; one reply", async () => {
    const [a, b] = nodes as [CaploNode, CaploNode];
    const nodeId = (node: CaploNode) => /cluster: node (\S+),/.exec(node.lines.find((line) => line.includes("cluster: node ")) ?? "")?.[1];
    const look = new pg.Client({ connectionString: db.url });
    const blocker = new pg.Client({ connectionString: db.url });
    await Promise.all([look.connect(), blocker.connect()]);
    try {
      // Node a will claim the next event and then wait on the customer's binding row, locked here: it is
      // killed while it holds the claim, before the event reaches the engine.
      await blocker.query("BEGIN");
      await blocker.query("SELECT * FROM channel_binding WHERE external_id = $1 FOR UPDATE", [CUSTOMER]);
      const held = sid();
      expect(await deliver(a, held, "say four")).toBe(200);
      const claim = await until("node a to claim the event", async () => {
        const rows = await look.query("SELECT state, claimed_by FROM channel_inbox WHERE message_id = $1", [held]);
        return rows.rows[0]?.state === "processing" ? rows.rows[0] : undefined;
      });
      expect(claim.claimed_by).toBe(nodeId(a));
      await a.kill9();
      await blocker.query("ROLLBACK");
      expect(replies()).not.toContain("You said: say four");

      // Node b takes a over when its lease runs out; the next webhook it receives drains the inbox, the
      // lost node's event included, oldest first.
      await until("node b to take node a over", () => b.lines.some((line) => line.includes("took over a lost node")), 30_000);
      expect(await deliver(b, sid(), "say five")).toBe(200);
      await until("the replies to both messages", () => replies().includes("You said: say five") && replies().includes("You said: say four"), 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(replies().filter((text) => text.startsWith("You said:"))).toEqual(["You said: say one", "You said: say two", "You said: say three", "You said: say four", "You said: say five"]);
      const row = await look.query("SELECT state, claimed_by FROM channel_inbox WHERE message_id = $1", [held]);
      expect(row.rows[0]).toEqual({ state: "done", claimed_by: nodeId(b) });
      expect(twilio.violations).toEqual([]);
    } finally {
      await blocker.end().catch(() => undefined);
      await look.end();
    }
  });
});
