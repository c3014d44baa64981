// Redis stopped under two real `caplo serve` nodes: a conversation open on both nodes (two tabs, one per
// node) keeps receiving every event, through the store when the bus is degraded; the nodes report it on
// /readyz and in their logs, and return to healthy when Redis does. Nothing is lost, nothing repeated.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { RedisServer } from "../cluster/redisServer.ts";
import { TestClient } from "../gateway/support/client.ts";
import { AGENT, CaploNode, createDatabase, ORIGIN, publishAgent, scratch, stopAll, until } from "./support/cluster.ts";

const work = scratch();
let db: Awaited<ReturnType<typeof createDatabase>>;
let redis: RedisServer;
let nodes: CaploNode[] = [];

beforeAll(async () => {
  db = await createDatabase();
  redis = await RedisServer.start();
  const published = await publishAgent(work.dir);
  nodes = await Promise.all(["a", "b"].map((name) => CaploNode.start({ name, databaseUrl: db.url, redisUrl: redis.url, ...published })));
});

afterAll(async () => {
  await stopAll();
  await redis?.kill();
  await db?.drop();
  work.remove();
});

const said = (text: string) => (frame: ServerFrame) => frame.t === "event" && frame.message.type === "text" && frame.message.from === "agent" && frame.message.text === `You said: ${text}`;

describe("Redis stopped", () => {
  it("events still reach the other node's socket by polling the store, the bus reports degraded, and recovers when Redis returns", async () => {
    const [a, b] = nodes as [CaploNode, CaploNode];
    const tab1 = await TestClient.open(a.wsUrl, ORIGIN);
    const welcome = await tab1.hello(AGENT);
    const tab2 = await TestClient.open(b.wsUrl, ORIGIN);
    await tab2.hello(AGENT, { token: welcome.resumeToken, after: 0 });
    expect(await a.ready()).toEqual({ ready: true, store: "ok", bus: "healthy" });

    tab1.send({ t: "in", ref: "1", event: { type: "message", text: "say one" } });
    await tab2.waitFor(said("say one"), 20_000); // over Redis

    await redis.kill();
    await until("both nodes to report the bus degraded", async () => (await Promise.all(nodes.map((node) => node.ready()))).every((ready) => ready.bus === "degraded" && ready.ready));

    for (const word of ["two", "three", "four"]) tab1.send({ t: "in", ref: word, event: { type: "message", text: `say ${word}` } });
    await tab1.waitFor(said("say four"), 20_000);
    await tab2.waitFor(said("say four"), 20_000); // by polling the store
    expect(a.lines.some((line) => line.includes("event notice not published"))).toBe(true);

    await redis.start();
    await until("both nodes to report the bus healthy again", async () => (await Promise.all(nodes.map((node) => node.ready()))).every((ready) => ready.bus === "healthy"), 30_000);
    tab1.send({ t: "in", ref: "5", event: { type: "message", text: "say five" } });
    await tab2.waitFor(said("say five"), 20_000);
    await tab1.waitFor(said("say five"), 20_000);

    // Both tabs saw the same events, each once, in order.
    const seqs = tab2.events().map((frame) => frame.seq);
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    expect(tab2.events().map((frame) => frame.message)).toEqual(tab1.events().map((frame) => frame.message));
    for (const node of nodes) {
      expect(node.lines.some((line) => /event bus degraded/.test(line))).toBe(true);
      expect(node.lines.some((line) => /event bus healthy/.test(line))).toBe(true);
    }
    await tab1.close();
    await tab2.close();
  });
});
