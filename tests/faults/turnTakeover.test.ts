// A turn cut short by the loss of its node is run again once, by a survivor, across real processes. Three
// `caplo serve` nodes on one PostgreSQL database with Redis: a widget customer on node a asks for a read
// that never answers (the `fault-hang` tool); while the read is held, node a and its sandboxes are killed
// (kill -9). The customer comes back to node b with its resume token; once a's lease runs out, exactly one
// survivor takes a over and runs the turn it owed: the cut read is recorded as interrupted (its progress
// ended) and the agent answers. The customer gets that answer once, in order, right after what it had
// seen; the message is stored once, and no second turn runs. Then the same with a read that answered at once:
// its step is held (not stored) while the model writes the answer, node d is killed then, and the survivor
// runs the turn again from the customer's message, read included: the customer gets the read and one answer.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { INTERRUPTED_NOTE } from "../../server/src/engine/engine.ts";
import { RedisServer } from "../cluster/redisServer.ts";
import { TestClient } from "../gateway/support/client.ts";
import { AGENT, CaploNode, createDatabase, ORIGIN, publishAgent, scratch, stopAll, until } from "./support/cluster.ts";

const work = scratch();
let db: Awaited<ReturnType<typeof createDatabase>>;
let redis: RedisServer;
let nodes: CaploNode[] = [];
let published: Awaited<ReturnType<typeof publishAgent>>;

beforeAll(async () => {
  db = await createDatabase();
  redis = await RedisServer.start();
  published = await publishAgent(work.dir);
  // CAPLO_NODE_LEASE_MS is 2 s (the cluster support's default): a lost node is taken over within seconds.
  nodes = await Promise.all(["a", "b", "c"].map((name) => CaploNode.start({ name, databaseUrl: db.url, redisUrl: redis.url, ...published })));
});

afterAll(async () => {
  await stopAll();
  await redis?.kill();
  await db?.drop();
  work.remove();
});

const progress = (state: "start" | "end") => (frame: ServerFrame) => frame.t === "event" && frame.message.type === "progress" && frame.message.state === state;
const agentText = (frame: ServerFrame) => frame.t === "event" && frame.message.type === "text" && frame.message.from === "agent";
const REPLY = `The lookup gave no answer: ${INTERRUPTED_NOTE}`;

describe("kill -9 of the node inside a customer's turn", () => {
  it("a survivor takes the lost node over and runs the owed turn once: one reply, after the interrupted read, to the customer back on another node", async () => {
    const [a, b, c] = nodes as [CaploNode, CaploNode, CaploNode];
    const customer = await TestClient.open(a.wsUrl, ORIGIN);
    const welcome = await customer.hello(AGENT);
    customer.send({ t: "in", ref: "m1", event: { type: "message", text: "please hang" } });
    // The read's progress start is stored before the tool is called; the tool never answers (its 2 s
    // timeout has not run out: node a is killed at once).
    const start = await customer.waitFor(progress("start"), 20_000);
    const callId = (start as { message: { callId: string } }).message.callId;
    const lastSeen = customer.events().at(-1)!.seq;

    const look = new pg.Client({ connectionString: db.url });
    await look.connect();
    try {
      // The customer's message recorded the turn node a owes.
      const owed = await look.query("SELECT turn_node, turn_seq FROM conversations WHERE id = $1", [welcome.conversationId]);
      const lostNode = owed.rows[0].turn_node as string | null;
      expect(lostNode).not.toBeNull();
      expect((await look.query("SELECT node_id FROM cluster_nodes WHERE node_id = $1", [lostNode])).rows).toHaveLength(1);

      await a.kill9();
      await customer.waitFor(() => false, 5_000).catch(() => undefined); // the socket closes with its node
      expect(customer.closed).toBeDefined();

      // The customer comes back through the load balancer, to node b, at once (within a's lease).
      const resumed = await TestClient.open(b.wsUrl, ORIGIN);
      await resumed.hello(AGENT, { token: welcome.resumeToken, after: lastSeen });
      const reply = await resumed.waitFor(agentText, 30_000);
      expect(reply).toMatchObject({ message: { from: "agent", text: REPLY } });

      // The turn is no longer owed, and node a has left the cluster.
      await until("the owed turn to be cleared", async () => (await look.query("SELECT turn_node FROM conversations WHERE id = $1", [welcome.conversationId])).rows[0].turn_node === null, 20_000);
      await until("node a's lease to be removed", async () => (await look.query("SELECT node_id FROM cluster_nodes WHERE node_id = $1", [lostNode])).rows.length === 0, 20_000);

      // Exactly one survivor took a over and resumed its turn.
      const takeovers = [b, c].filter((node) => node.lines.some((line) => line.includes("took over a lost node")));
      expect(takeovers).toHaveLength(1);
      const resumers = [b, c].filter((node) => node.lines.some((line) => line.includes("resuming a turn that was interrupted")));
      expect(resumers).toEqual(takeovers);
      expect(resumers[0]!.lines.filter((line) => line.includes("resuming a turn that was interrupted"))).toHaveLength(1);

      // Everything after the crash, received in order with no gap: the interrupted read's progress ends, then one answer.
      const received = resumed.events();
      expect(received.map((frame) => frame.seq)).toEqual(received.map((_, index) => lastSeen + 1 + index));
      expect(received.map((frame) => frame.message.type)).toEqual(["progress", "text"]);
      expect(received[0]!.message).toMatchObject({ type: "progress", callId, state: "end" });
      expect(received.filter(agentText)).toHaveLength(1);

      // The store: the customer's message once, the agent's answer once, every event in order.
      const events = await look.query("SELECT seq, message FROM events WHERE conversation_id = $1 ORDER BY seq", [welcome.conversationId]);
      const messages = events.rows.map((row) => (typeof row.message === "string" ? JSON.parse(row.message) : row.message) as { type: string; from?: string; text?: string; callId?: string; state?: string });
      expect(events.rows.map((row) => Number(row.seq))).toEqual(events.rows.map((_, index) => index + 1));
      expect(messages.filter((message) => message.type === "text" && message.from === "customer").map((message) => message.text)).toEqual(["please hang"]);
      expect(messages.filter((message) => message.type === "text" && message.from === "agent").map((message) => message.text)).toEqual([REPLY]);
      expect(messages.filter((message) => message.type === "progress").map((message) => `${message.callId}:${message.state}`)).toEqual([`${callId}:start`, `${callId}:end`]);
      // The transcript: the message, the step that called the read, the read's interrupted result, the answer (no second turn).
      const transcript = await look.query("SELECT message FROM transcript WHERE conversation_id = $1 ORDER BY seq", [welcome.conversationId]);
      const entries = transcript.rows.map((row) => (typeof row.message === "string" ? JSON.parse(row.message) : row.message) as { role: string; toolCallId?: string; content?: string });
      expect(entries.map((entry) => entry.role)).toEqual(["user", "assistant", "tool", "assistant"]);
      expect(entries[2]).toMatchObject({ role: "tool", toolCallId: callId, content: INTERRUPTED_NOTE });

      // The conversation goes on, on node b: the next message gets its answer after the resumed one.
      resumed.send({ t: "in", ref: "m2", event: { type: "message", text: "say again" } });
      await resumed.waitFor((frame) => frame.t === "event" && frame.message.type === "text" && frame.message.text === "You said: say again", 20_000);
      const texts = resumed.events().filter((frame) => frame.message.type === "text").map((frame) => (frame.message as { text: string }).text);
      expect(texts).toEqual([REPLY, "say again", "You said: say again"]);
      await resumed.close();
    } finally {
      await look.end();
    }
  });

  it("kill -9 while a read that answered at once is held with its step (the model writing): a survivor runs the turn again from the message; the read and one answer reach the customer once", async () => {
    const d = await CaploNode.start({ name: "d", databaseUrl: db.url, redisUrl: redis.url, ...published });
    const survivors = nodes.filter((node) => node.alive);
    // A first read on d starts the echo package's sandbox, so the measured read answers at once (within 250 ms).
    const warm = await TestClient.open(d.wsUrl, ORIGIN);
    await warm.hello(AGENT);
    warm.send({ t: "in", ref: "w1", event: { type: "message", text: "echo warm" } });
    await warm.waitFor(agentText, 30_000);
    await warm.close();
    const customer = await TestClient.open(d.wsUrl, ORIGIN);
    const welcome = await customer.hello(AGENT);
    customer.send({ t: "in", ref: "s1", event: { type: "message", text: "slowly echo ping" } });
    // The read has answered and the model is writing: its first word streams as a preview, nothing of the step is stored.
    await customer.waitFor((frame) => frame.t === "delta", 20_000);
    const lastSeen = customer.events().at(-1)!.seq;
    expect(customer.events().map((frame) => frame.message.type)).toEqual(["text"]);

    const look = new pg.Client({ connectionString: db.url });
    await look.connect();
    try {
      const types = async () => (await look.query("SELECT message FROM events WHERE conversation_id = $1 ORDER BY seq", [welcome.conversationId])).rows.map((row) => (typeof row.message === "string" ? JSON.parse(row.message) : row.message) as { type: string; from?: string; text?: string });
      const roles = async () => (await look.query("SELECT message FROM transcript WHERE conversation_id = $1 ORDER BY seq", [welcome.conversationId])).rows.map((row) => ((typeof row.message === "string" ? JSON.parse(row.message) : row.message) as { role: string }).role);
      expect((await types()).map((message) => message.type)).toEqual(["text"]);
      expect(await roles()).toEqual(["user"]);

      const resumedBefore = survivors.reduce((sum, node) => sum + node.lines.filter((line) => line.includes("resuming a turn that was interrupted")).length, 0);
      await d.kill9();
      // The customer comes back to a survivor at once (within d's lease).
      const back = await TestClient.open(survivors[0]!.wsUrl, ORIGIN);
      await back.hello(AGENT, { token: welcome.resumeToken, after: lastSeen });
      const reply = await back.waitFor(agentText, 30_000);
      expect(reply).toMatchObject({ message: { from: "agent", text: 'Slow echo: {"word":"ping"}' } });
      await until("the owed turn to be cleared", async () => (await look.query("SELECT turn_node FROM conversations WHERE id = $1", [welcome.conversationId])).rows[0].turn_node === null, 20_000);

      // One survivor resumed it once; the customer got the read's progress and one answer, in order, no gap.
      const resumed = survivors.reduce((sum, node) => sum + node.lines.filter((line) => line.includes("resuming a turn that was interrupted")).length, 0);
      expect(resumed - resumedBefore).toBe(1);
      const received = back.events();
      expect(received.map((frame) => frame.seq)).toEqual(received.map((_, index) => lastSeen + 1 + index));
      expect(received.map((frame) => frame.message.type)).toEqual(["progress", "progress", "text"]);
      expect(received.filter(agentText)).toHaveLength(1);
      expect((await types()).map((message) => message.type)).toEqual(["text", "progress", "progress", "text"]);
      expect(await roles()).toEqual(["user", "assistant", "tool", "assistant"]);
      await back.close();
    } finally {
      await look.end();
    }
  });
});
