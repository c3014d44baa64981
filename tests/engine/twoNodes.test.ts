// Two engine nodes on one PostgreSQL store (a schema of its own, dropped afterwards): confirms arriving
// at both nodes at once run the write once, two writes proposed on both nodes at once leave one proposal,
// a due status check is run by one node only, and events a
// node stores reach a subscriber on the other node through the shared bus.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryBus, MemoryHub } from "../../server/src/bus/memoryBus.ts";
import { Engine } from "../../server/src/engine/engine.ts";
import { releaseFromVersions, StaticReleases } from "../../server/src/engine/release.ts";
import type { Model } from "../../server/src/model/model.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import { PostgresStore } from "../../server/src/store/postgresStore.ts";
import { CANCEL, WEB } from "./support/harness.ts";
import { ORDERS, ShopBackend, shopRunner, shopVersion } from "./support/shopTools.ts";
import type { CaploToolRunner, MemoryRequest } from "../../server/src/runner/index.ts";
import { testPg } from "../support/services.ts";

const schema = `caplo_nodes_${process.pid}_${randomBytes(4).toString("hex")}`;
const settings = { ...testPg(), schema };
const backend = new ShopBackend();
const hub = new MemoryHub();
const clock = { now: Date.parse("2026-03-01T10:00:00Z") };
type Node = { store: PostgresStore; runner: CaploToolRunner; requests: MemoryRequest[]; engine: Engine };
const nodes: Node[] = [];
let modelOverride: Model | undefined;

/**
 * A model for two turns at once: the first step of each turn (the customer's message last) waits until
 * `turns` first steps have been asked, then calls cancel_order; any later step answers "ok". So both turns
 * decide to propose before either has stored anything.
 */
function proposingTogether(turns: number): Model {
  const waiting: (() => void)[] = [];
  let calls = 0;
  return {
    id: "test:together",
    async *stream(request) {
      if (request.messages.at(-1)?.role !== "user") {
        yield { type: "text-delta", text: "ok" };
        yield { type: "finish", reason: "stop" };
        return;
      }
      const call = ++calls;
      await new Promise<void>((resolve) => {
        waiting.push(resolve);
        if (waiting.length === turns) for (const release of waiting.splice(0)) release();
      });
      yield { type: "tool-call", call: { id: `call_together_${call}`, name: "shop__cancel_order", arguments: JSON.stringify({ ...CANCEL(`SO-810${call}`).args }) } };
      yield { type: "finish", reason: "tool-calls" };
    },
  };
}

beforeAll(async () => {
  const release = releaseFromVersions({ agent: "shop-agent", instructions: "Help.", origins: ["https://shop.example"], versions: [shopVersion()] });
  const scripted = new ScriptedModel([{ when: /cancel (SO-\d{4})/, replies: [{ toolCalls: [{ ...CANCEL(ORDERS.applied), args: { ...CANCEL(ORDERS.applied).args, orderId: "$1" } }] }] }]);
  // Both nodes ask this model; a test may put another behind it.
  const model: Model = { id: "test:nodes", stream: (request) => (modelOverride ?? scripted).stream(request) };
  for (const name of ["node-a", "node-b"]) {
    const store = new PostgresStore(settings);
    await store.migrate();
    const { runner, requests } = shopRunner(backend);
    const engine = new Engine({ store, runner, model, releases: new StaticReleases([release]), bus: new MemoryBus({ hub }), nodeId: name, now: () => clock.now, statusCheckBaseMs: 1000 });
    await engine.start({ scheduler: false });
    nodes.push({ store, runner, requests, engine });
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

describe("two nodes, one PostgreSQL store", () => {
  it("confirms of one proposal arriving at both nodes at once run the write once", async () => {
    const [a, b] = nodes as [Node, Node];
    const conversation = await a.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "owner" });
    const seenOnB: number[] = [];
    const unsubscribe = b.engine.subscribe(conversation.id, (seq) => seenOnB.push(seq));
    await a.engine.handle(conversation.id, "owner", { type: "message", text: "cancel SO-8001" });
    const review = (await a.store.listEvents(conversation.id, 0)).map((event) => event.message).find((message) => message.type === "review");
    if (review?.type !== "review") throw new Error("no review");
    const results = await Promise.all([
      a.engine.handle(conversation.id, "owner", { type: "confirm", proposalId: review.proposalId }),
      b.engine.handle(conversation.id, "owner", { type: "confirm", proposalId: review.proposalId }),
      a.engine.handle(conversation.id, "owner", { type: "confirm", proposalId: review.proposalId }),
      b.engine.handle(conversation.id, "owner", { type: "confirm", proposalId: review.proposalId }),
    ]);
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    expect(backend.invocations.filter((call) => call.args.orderId === "SO-8001")).toHaveLength(1);
    expect((await b.store.getWrite(review.proposalId))?.state).toBe("applied");
    // Node B's subscriber heard of the events node A stored.
    expect(seenOnB.length).toBeGreaterThan(0);
    expect(Math.max(...seenOnB)).toBe((await b.store.getConversation(conversation.id))?.lastSeq);
    unsubscribe();
  });

  it("two turns of one conversation on both nodes at once, each proposing a write: one proposal is stored, the other model is told write_blocked", async () => {
    const [a, b] = nodes as [Node, Node];
    const conversation = await a.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "owner" });
    modelOverride = proposingTogether(2);
    try {
      await Promise.all([
        a.engine.handle(conversation.id, "owner", { type: "message", text: "cancel SO-8101" }),
        b.engine.handle(conversation.id, "owner", { type: "message", text: "cancel SO-8102" }),
      ]);
    } finally {
      modelOverride = undefined;
    }
    const writes = await a.store.listWrites(conversation.id);
    expect(writes).toHaveLength(1);
    expect(writes[0]?.state).toBe("proposed");
    const reviews = (await a.store.listEvents(conversation.id, 0)).map((event) => event.message).filter((message) => message.type === "review");
    expect(reviews.map((review) => review.type === "review" && review.proposalId)).toEqual([writes[0]!.id]);
    const notes = (await a.store.listTranscript(conversation.id)).map((entry) => entry.message).filter((message) => message.role === "tool").map((message) => message.content);
    expect(notes).toHaveLength(2);
    expect(notes.filter((note) => note.startsWith("write_blocked: an earlier write (shop/cancel_order) still waits for the customer's decision"))).toHaveLength(1);
    expect(backend.invocations.filter((call) => call.tool === "cancel_order" && ["SO-8101", "SO-8102"].includes(String(call.args.orderId)))).toEqual([]);
  });

  it("both nodes taking over a lost node at once run each turn it owed once", async () => {
    const [a, b] = nodes as [Node, Node];
    const lost = `node-lost-${randomBytes(3).toString("hex")}`;
    const conversations = [];
    // The lost node stored each customer's message (owing its turn) and died before its model answered.
    for (let index = 0; index < 4; index++) {
      const conversation = await a.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "owner" });
      await a.store.append(conversation.id, { events: [{ type: "text", id: `m_lost_${index}`, from: "customer", text: "hello?" }], transcript: [{ role: "user", content: "hello?" }], owedBy: lost }, clock.now);
      conversations.push(conversation);
    }
    modelOverride = {
      id: "test:answer",
      async *stream() {
        yield { type: "text-delta", text: "Hello again." };
        yield { type: "finish", reason: "stop" };
      },
    };
    try {
      const claimed = await Promise.all([a.engine.recoverTurns(lost), b.engine.recoverTurns(lost), a.engine.recoverTurns(lost), b.engine.recoverTurns(lost)]);
      expect(claimed.reduce((sum, count) => sum + count, 0)).toBe(4);
      await Promise.all([a.engine.idle(), b.engine.idle()]);
    } finally {
      modelOverride = undefined;
    }
    for (const conversation of conversations) {
      const replies = (await a.store.listEvents(conversation.id, 0)).map((event) => event.message).filter((message) => message.type === "text" && message.from === "agent");
      expect(replies.map((reply) => reply.type === "text" && reply.text)).toEqual(["Hello again."]);
      expect((await a.store.listTranscript(conversation.id)).map((entry) => entry.message.role)).toEqual(["user", "assistant"]);
    }
    for (const node of ["node-a", "node-b", lost]) expect(await a.store.listOwedTurns(node, 10)).toEqual([]);
  });

  it("a due status check is run by one node only", async () => {
    const [a, b] = nodes as [Node, Node];
    const conversation = await a.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "owner" });
    await a.engine.handle(conversation.id, "owner", { type: "message", text: `cancel ${ORDERS.pendingForever}` });
    const review = (await a.store.listEvents(conversation.id, 0)).map((event) => event.message).find((message) => message.type === "review");
    if (review?.type !== "review") throw new Error("no review");
    await a.engine.handle(conversation.id, "owner", { type: "confirm", proposalId: review.proposalId });
    clock.now += 1000;
    const before = a.requests.length + b.requests.length;
    const counts = await Promise.all([a.engine.runDueChecks(), b.engine.runDueChecks(), a.engine.runDueChecks(), b.engine.runDueChecks()]);
    expect(counts.reduce((sum, count) => sum + count, 0)).toBe(1);
    expect(a.requests.length + b.requests.length - before).toBe(1);
    expect((await a.store.getWrite(review.proposalId))?.checkCount).toBe(1);
  });
});
