// The proposal sweep on two engine nodes sharing one PostgreSQL store (a schema of its own, dropped
// afterwards): sweeping at the same moment, each expired proposal is expired, told to its review card and
// noted for the model exactly once.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryBus, MemoryHub } from "../../server/src/bus/memoryBus.ts";
import { Engine } from "../../server/src/engine/engine.ts";
import { PROPOSAL_TTL_DEFAULT_MS } from "../../server/src/engine/proposalSweep.ts";
import { releaseFromVersions, StaticReleases } from "../../server/src/engine/release.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import { PostgresStore } from "../../server/src/store/postgresStore.ts";
import { CANCEL, WEB } from "./support/harness.ts";
import { ORDERS, ShopBackend, shopRunner, shopVersion } from "./support/shopTools.ts";
import type { CaploToolRunner } from "../../server/src/runner/index.ts";
import { testPg } from "../support/services.ts";

const schema = `caplo_sweep_${process.pid}_${randomBytes(4).toString("hex")}`;
const settings = { ...testPg(), schema };
const clock = { now: Date.parse("2026-03-01T10:00:00Z") };
const hub = new MemoryHub();
type Node = { store: PostgresStore; runner: CaploToolRunner; engine: Engine };
const nodes: Node[] = [];

beforeAll(async () => {
  const release = releaseFromVersions({ agent: "shop-agent", instructions: "Help.", origins: ["https://shop.example"], versions: [shopVersion()] });
  const model = new ScriptedModel([{ when: /cancel (SO-\d{4})/, replies: [{ toolCalls: [{ ...CANCEL(ORDERS.applied), args: { ...CANCEL(ORDERS.applied).args, orderId: "$1" } }] }] }]);
  const backend = new ShopBackend();
  for (const nodeId of ["node-a", "node-b"]) {
    const store = new PostgresStore(settings);
    await store.migrate();
    const runner = shopRunner(backend).runner;
    const engine = new Engine({ store, runner, model, releases: new StaticReleases([release]), bus: new MemoryBus({ hub }), nodeId, now: () => clock.now });
    await engine.start({ scheduler: false });
    nodes.push({ store, runner, engine });
  }
});

afterAll(async () => {
  for (const node of nodes) {
    await node.engine.stop();
    await node.runner.close();
  }
  await nodes[0]?.store.dropSchema();
  for (const node of nodes) await node.store.close();
});

describe("the proposal sweep on two nodes, one PostgreSQL store", () => {
  it("each expired proposal is expired and told exactly once, whichever node wins it", async () => {
    const [a, b] = nodes as [Node, Node];
    const proposals: { conversationId: string; proposalId: string }[] = [];
    for (let i = 0; i < 8; i++) {
      const node = i % 2 ? a : b;
      const conversation = await node.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: `owner-${i}` });
      await node.engine.handle(conversation.id, `owner-${i}`, { type: "message", text: `cancel SO-700${i}` });
      const review = (await node.store.listEvents(conversation.id, 0)).map((event) => event.message).find((message) => message.type === "review");
      if (review?.type !== "review") throw new Error("no review card");
      proposals.push({ conversationId: conversation.id, proposalId: review.proposalId });
    }
    // One proposal is still young: it must be left open.
    clock.now += PROPOSAL_TTL_DEFAULT_MS / 2;
    const young = await a.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "owner-young" });
    await a.engine.handle(young.id, "owner-young", { type: "message", text: "cancel SO-7100" });
    clock.now += PROPOSAL_TTL_DEFAULT_MS / 2 + 1;
    const [fromA, fromB] = await Promise.all([a.engine.expireDueProposals(), b.engine.expireDueProposals()]);
    expect(fromA + fromB).toBe(8);
    for (const { conversationId, proposalId } of proposals) {
      expect((await b.store.getWrite(proposalId))?.state).toBe("expired");
      const outcomes = (await a.store.listEvents(conversationId, 0)).map((event) => event.message).filter((message) => message.type === "outcome");
      expect(outcomes).toEqual([expect.objectContaining({ proposalId, state: "expired" })]);
      const notes = (await a.store.listTranscript(conversationId)).filter((entry) => entry.message.role === "system" && /expired before the customer confirmed/.test(entry.message.content));
      expect(notes).toHaveLength(1);
    }
    expect((await a.store.listWrites(young.id)).map((write) => write.state)).toEqual(["proposed"]);
  });
});
