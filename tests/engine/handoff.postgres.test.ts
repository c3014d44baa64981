// Handoff notices on two nodes sharing one PostgreSQL store (a schema of its own, dropped afterwards): the
// agent hands off on node A; both nodes deliver at once and the team's endpoint gets one signed POST per
// attempt; a failed attempt recorded by one node is retried by the other, and the outcome is the same on both.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryBus, MemoryHub } from "../../server/src/bus/memoryBus.ts";
import { Engine } from "../../server/src/engine/engine.ts";
import { HandoffDelivery } from "../../server/src/engine/handoff.ts";
import { releaseFromVersions, StaticReleases } from "../../server/src/engine/release.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import { PostgresStore } from "../../server/src/store/postgresStore.ts";
import { WEB } from "./support/harness.ts";
import { ShopBackend, shopRunner, shopVersion } from "./support/shopTools.ts";
import type { CaploToolRunner } from "../../server/src/runner/index.ts";
import { teamEndpoint } from "./support/teamEndpoint.ts";
import { testPg } from "../support/services.ts";

const SECRET = "handoff-webhook-secret-of-32-chars-or-more!";
const schema = `caplo_handoff_${process.pid}_${randomBytes(4).toString("hex")}`;
const settings = { ...testPg(), schema };
const clock = { now: Date.parse("2026-03-01T10:00:00Z") };
const hub = new MemoryHub();
type Node = { store: PostgresStore; runner: CaploToolRunner; engine: Engine; delivery: HandoffDelivery };
const nodes: Node[] = [];
let endpoint: Awaited<ReturnType<typeof teamEndpoint>>;

beforeAll(async () => {
  endpoint = await teamEndpoint(SECRET, [503]);
  const release = releaseFromVersions({
    agent: "shop-agent",
    instructions: "Help.",
    origins: ["https://shop.example"],
    versions: [shopVersion()],
    channels: { web: { handoff: { queue: "support" } } },
  });
  const model = new ScriptedModel([{ when: /person/, replies: [{ toolCalls: [{ name: "handoff_to_team", args: { reason: "asked for a person" } }] }] }]);
  for (const nodeId of ["node-a", "node-b"]) {
    const store = new PostgresStore(settings);
    await store.migrate();
    const runner = shopRunner(new ShopBackend()).runner;
    const delivery = new HandoffDelivery({ store, webhooks: { defaultUrl: endpoint.url, byQueue: {}, secret: SECRET }, now: () => clock.now, retryBaseMs: 1000 });
    const engine = new Engine({ store, runner, model, releases: new StaticReleases([release]), bus: new MemoryBus({ hub }), nodeId, now: () => clock.now, handoffNotifier: delivery });
    await engine.start({ scheduler: false });
    nodes.push({ store, runner, engine, delivery });
  }
});

afterAll(async () => {
  for (const node of nodes) {
    await node.delivery.stop();
    await node.engine.stop();
    await node.runner.close();
  }
  await nodes[0]?.store.dropSchema();
  for (const node of nodes) await node.store.close();
  await endpoint?.close();
});

describe("handoff notices on two nodes, one PostgreSQL store", () => {
  it("each attempt is made by one node; a retry after a failure may be the other node's, with the same body", async () => {
    const [a, b] = nodes as [Node, Node];
    const conversation = await a.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "owner" });
    await a.engine.handle(conversation.id, "owner", { type: "message", text: "a person please" });
    expect((await b.store.listHandoffNotices(conversation.id)).map((notice) => notice.state)).toEqual(["pending"]);
    const first = await Promise.all([a.delivery.deliverDue(), b.delivery.deliverDue()]);
    expect(first[0] + first[1]).toBe(1);
    expect(endpoint.received).toHaveLength(1);
    expect((await a.store.listHandoffNotices(conversation.id))[0]).toMatchObject({ state: "pending", attempts: 1, lastStatus: 503 });
    clock.now += 1000;
    const second = await Promise.all([b.delivery.deliverDue(), a.delivery.deliverDue()]);
    expect(second[0] + second[1]).toBe(1);
    expect(endpoint.received).toHaveLength(2);
    expect(endpoint.received.every((request) => request.signatureValid)).toBe(true);
    expect(endpoint.received[0]!.body).toBe(endpoint.received[1]!.body);
    for (const node of nodes) expect((await node.store.listHandoffNotices(conversation.id))[0]).toMatchObject({ state: "delivered", attempts: 2, lastStatus: 204 });
  });
});
