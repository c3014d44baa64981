// The team API on two nodes sharing one PostgreSQL store (tests/attacks/README.md): two members taking one
// conversation over at the same moment, each through another node, and one member handing it back while
// another takes it. One node orders its own requests per conversation; across nodes only the store can, so
// what is checked is what the store holds: one holder, the one who was told so, and one "taken" event.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryBus, MemoryHub } from "../../server/src/bus/memoryBus.ts";
import { PostgresStore } from "../../server/src/store/postgresStore.ts";
import { TestClient } from "../gateway/support/client.ts";
import { HANDOFF_TOOL } from "../../server/src/engine/index.ts";
import type { Model } from "../../server/src/model/model.ts";
import { ORIGIN, shopRelease, startStack, type Stack } from "../gateway/support/stack.ts";
import { testPg } from "../support/services.ts";

const ANA = "team-secret-token";
const BEN = "ben-secret-token";
const settings = { ...testPg(), schema: `caplo_team2_${process.pid}_${randomBytes(4).toString("hex")}` };
let a: Stack;
let b: Stack;

/** Held when the customer asks for a person: the model asks to hand off only once the test lets it. */
let asked: () => void = () => undefined;
let letGo: Promise<void> = Promise.resolve();
const model: Model = {
  id: "test:handoff",
  async *stream(request) {
    const last = request.messages.at(-1);
    if (last?.role === "user" && JSON.stringify(last.content).includes("a person please")) {
      asked();
      await letGo;
      yield { type: "tool-call", call: { id: "call_handoff", name: HANDOFF_TOOL, arguments: JSON.stringify({ reason: "asked for a person" }) } };
      yield { type: "finish", reason: "tool-calls" };
      return;
    }
    yield { type: "text-delta", text: "ok" };
    yield { type: "finish", reason: "stop" };
  },
};

beforeAll(async () => {
  const hub = new MemoryHub();
  const releases = (version: Parameters<typeof shopRelease>[0]) => [shopRelease(version, { channels: { web: { handoff: { queue: "help" } } } })];
  a = await startStack({ nodeId: "node-a", store: () => new PostgresStore(settings), bus: new MemoryBus({ hub }), releases, model });
  b = await startStack({ nodeId: "node-b", store: () => new PostgresStore(settings), bus: new MemoryBus({ hub }), releases, model });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  const store = new PostgresStore(settings);
  await store.dropSchema();
  await store.close();
});

const post = (node: Stack, token: string, path: string) =>
  fetch(`${node.base}/v1/team/conversations${path}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" }).then(async (answer) => ({
    status: answer.status,
    body: (await answer.json()) as { ok?: boolean; error?: { code: string } },
  }));

async function conversation(): Promise<string> {
  const customer = await TestClient.open(a.wsUrl, ORIGIN);
  const welcome = await customer.hello("shop-agent");
  await customer.close();
  return welcome.conversationId;
}

const handoffEvents = async (id: string) => (await a.store.listEvents(id, 0)).filter((event) => event.message.type === "handoff").map((event) => (event.message as { state: string }).state);

describe("two members, two nodes, one conversation", () => {
  it("taking it over at the same moment: one is told it holds it and does; the other is told another member holds it; one 'taken' event", async () => {
    for (let round = 0; round < 8; round++) {
      const id = await conversation();
      const [ana, ben] = await Promise.all([post(a, ANA, `/${id}/takeover`), post(b, BEN, `/${id}/takeover`)]);
      const answers = [ana, ben].map((answer) => answer.status).sort();
      expect(answers, `round ${round}`).toEqual([200, 409]);
      const loser = ana.status === 409 ? ana : ben;
      expect(loser.body.error?.code).toBe("conversation_held");
      const holder = ana.status === 200 ? "ana" : "ben";
      expect((await a.store.getConversation(id))?.handoff).toMatchObject({ state: "taken", member: holder });
      expect(await handoffEvents(id)).toEqual(["taken"]);
      // The one who was refused cannot write in it, and the holder can.
      const [holderNode, holderToken, otherNode, otherToken] = holder === "ana" ? [a, ANA, b, BEN] : [b, BEN, a, ANA];
      expect((await fetch(`${otherNode.base}/v1/team/conversations/${id}/messages`, { method: "POST", headers: { authorization: `Bearer ${otherToken}`, "content-type": "application/json" }, body: JSON.stringify({ text: "mine" }) })).status).toBe(409);
      expect((await fetch(`${holderNode.base}/v1/team/conversations/${id}/messages`, { method: "POST", headers: { authorization: `Bearer ${holderToken}`, "content-type": "application/json" }, body: JSON.stringify({ text: "mine" }) })).status).toBe(200);
    }
  });

  it("one member handing it back on one node while another takes it over on the other: the store ends as one of them was told", async () => {
    for (let round = 0; round < 8; round++) {
      const id = await conversation();
      expect((await post(a, ANA, `/${id}/takeover`)).status).toBe(200);
      // Ana hands back on node A while Ben takes over on node B: either Ben takes it after the hand-back, or Ben is refused.
      const [back, take] = await Promise.all([post(a, ANA, `/${id}/release`), post(b, BEN, `/${id}/takeover`)]);
      expect(back.status, `round ${round}`).toBe(200);
      const handoff = (await a.store.getConversation(id))?.handoff ?? null;
      if (take.status === 200) expect(handoff, `round ${round}`).toMatchObject({ state: "taken", member: "ben" });
      else {
        expect(take.body.error?.code).toBe("conversation_held");
        expect(handoff, `round ${round}`).toBeNull();
      }
    }
  });

  it("a member taking it over on node B while the agent's turn on node A hands it to the team: the member keeps it, and no handoff request follows", async () => {
    const customer = await TestClient.open(a.wsUrl, ORIGIN);
    const id = (await customer.hello("shop-agent")).conversationId;
    const modelAsked = new Promise<void>((resolve) => (asked = resolve));
    let release: () => void = () => undefined;
    letGo = new Promise<void>((resolve) => (release = resolve));
    customer.send({ t: "in", ref: "r1", event: { type: "message", text: "a person please" } });
    await modelAsked;
    expect((await post(b, BEN, `/${id}/takeover`)).status).toBe(200);
    release();
    await customer.waitFor((frame) => frame.t === "event" && frame.message.type === "handoff" && (frame.message as { state: string }).state === "taken");
    await a.engine.idle();
    await customer.close();
    expect((await a.store.getConversation(id))?.handoff).toMatchObject({ state: "taken", member: "ben" });
    expect(await handoffEvents(id)).toEqual(["taken"]);
    // Ben still holds it: he writes in it.
    expect((await fetch(`${b.base}/v1/team/conversations/${id}/messages`, { method: "POST", headers: { authorization: `Bearer ${BEN}`, "content-type": "application/json" }, body: JSON.stringify({ text: "Ben here." }) })).status).toBe(200);
  });
});
