// The proposal sweep: undecided proposals past their lifetime expire in the background (not only when
// someone touches them), the review card and the model are told once, and of several nodes sweeping the
// same store only one acts on each proposal (SQLite file shared by two engines; PostgreSQL in
// proposalSweep.postgres.test.ts). Over a real WebSocket the customer's card hears "expired".
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { Engine } from "../../server/src/engine/engine.ts";
import { PROPOSAL_TTL_DEFAULT_MS, readProposalTtl } from "../../server/src/engine/proposalSweep.ts";
import { releaseFromVersions, StaticReleases } from "../../server/src/engine/release.ts";
import { Gateway } from "../../server/src/gateway/gateway.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import { SqliteStore } from "../../server/src/store/sqliteStore.ts";
import { TestClient } from "../gateway/support/client.ts";
import { CANCEL, engineHarness, type Harness } from "./support/harness.ts";
import { ORDERS, ShopBackend, shopRunner, shopVersion } from "./support/shopTools.ts";

const rules = [
  { when: /cancel (SO-\d{4})/i, replies: [{ text: "Please review.", toolCalls: [{ ...CANCEL(ORDERS.applied), args: { ...CANCEL(ORDERS.applied).args, orderId: "$1" } }] }] },
  { whenNote: /expired/, replies: [{ text: "SHOULD NOT BE SAID: nobody asked" }] },
];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function harness(): Promise<Harness> {
  const h = await engineHarness({ rules });
  cleanups.push(() => h.close());
  return h;
}

describe("the proposal sweep", () => {
  it("expires an undecided proposal past its lifetime: ledger expired, review card told, model told, and the next write may start", async () => {
    const h = await harness();
    await h.say("please cancel SO-1001");
    const review = await h.lastReview();
    h.clock.now += PROPOSAL_TTL_DEFAULT_MS + 1;
    expect(await h.engine.expireDueProposals()).toBe(1);
    expect((await h.store.getWrite(review.proposalId))?.state).toBe("expired");
    const transitions = (await h.store.listTransitions(review.proposalId)).map((t) => `${t.from}->${t.to}:${t.note}`);
    expect(transitions).toEqual(["proposed->proposed:created", "proposed->expired:expired: not decided in time"]);
    const outcomes = await h.ofType("outcome");
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toMatchObject({ proposalId: review.proposalId, state: "expired", message: "Cancel order expired before it was confirmed. Nothing was changed." });
    expect((await h.modelNotes()).at(-1)).toMatch(/proposal .* expired before the customer confirmed it\. Nothing ran\./);
    // Nobody is in the conversation: the sweep starts no turn.
    expect((await h.ofType("text")).map((m) => m.text)).not.toContain("SHOULD NOT BE SAID: nobody asked");
    // A second pass finds nothing; a confirm afterwards is refused and runs nothing.
    expect(await h.engine.expireDueProposals()).toBe(0);
    expect((await h.confirm(review.proposalId)).ok).toBe(false);
    expect(h.backend.invocations).toEqual([]);
    // The expired proposal no longer blocks the conversation's next write.
    await h.say("please cancel SO-1002");
    expect((await h.lastReview()).proposalId).not.toBe(review.proposalId);
    expect((await h.store.listWrites(h.conversation.id)).map((write) => write.state)).toEqual(["expired", "proposed"]);
  });

  it("a write waiting for step-up that the customer never does expires after the lifetime, counted from when it began to wait: nothing ran, both told, the next write may start", async () => {
    const h = await engineHarness({ rules: [{ when: /close/i, replies: [{ toolCalls: [{ name: "shop__close_account", args: { reason: "moving" } }] }] }, ...rules] });
    cleanups.push(() => h.close());
    await h.engine.verify(h.conversation.id, { id: "cust-a", level: "low", authTime: new Date(h.clock.now).toISOString() });
    await h.say("please close my account");
    const proposalId = (await h.lastReview()).proposalId;
    // Confirmed late in the proposal's life: the step-up's own lifetime starts when it begins to wait.
    h.clock.now += PROPOSAL_TTL_DEFAULT_MS - 1000;
    await h.confirm(proposalId);
    const waiting = (await h.store.getWrite(proposalId))!;
    expect(waiting.state).toBe("step_up_required");
    expect(await h.engine.expireDueProposals()).toBe(0);
    h.clock.now = waiting.updatedAt + PROPOSAL_TTL_DEFAULT_MS;
    expect(await h.engine.expireDueProposals()).toBe(0);
    expect((await h.store.getWrite(proposalId))?.state).toBe("step_up_required");
    h.clock.now += 1;
    expect(await h.engine.expireDueProposals()).toBe(1);
    expect(await h.engine.expireDueProposals()).toBe(0);
    expect((await h.store.getWrite(proposalId))?.state).toBe("expired");
    expect((await h.store.listTransitions(proposalId)).at(-1)).toMatchObject({ from: "step_up_required", to: "expired", note: "expired: the customer did not verify again in time" });
    expect((await h.ofType("outcome")).at(-1)).toMatchObject({ proposalId, state: "expired", message: "Close account was not done: you did not verify your identity again in time. Nothing was changed." });
    expect((await h.modelNotes()).at(-1)).toMatch(/expired: the customer did not verify again in time\. .*nothing was applied/);
    // Verifying now runs nothing: the tool was called once, when it asked for the step-up.
    await h.engine.verify(h.conversation.id, { id: "cust-a", level: "high", authTime: new Date(h.clock.now).toISOString() });
    expect((await h.store.getWrite(proposalId))?.state).toBe("expired");
    expect(h.backend.invocations.filter((call) => call.tool === "close_account")).toHaveLength(1);
    // The conversation's next write may start.
    await h.say("please cancel SO-1001");
    expect((await h.store.listWrites(h.conversation.id)).map((write) => write.state)).toEqual(["expired", "proposed"]);
  });

  it("a customer verifying after the step-up's lifetime does not run it: it expires instead", async () => {
    const h = await engineHarness({ rules: [{ when: /close/i, replies: [{ toolCalls: [{ name: "shop__close_account", args: { reason: "moving" } }] }] }] });
    cleanups.push(() => h.close());
    await h.engine.verify(h.conversation.id, { id: "cust-a", level: "low", authTime: new Date(h.clock.now).toISOString() });
    await h.say("please close my account");
    const proposalId = (await h.lastReview()).proposalId;
    await h.confirm(proposalId);
    h.clock.now += PROPOSAL_TTL_DEFAULT_MS + 1;
    await h.engine.verify(h.conversation.id, { id: "cust-a", level: "high", authTime: new Date(h.clock.now).toISOString() });
    expect((await h.store.getWrite(proposalId))?.state).toBe("expired");
    expect(h.backend.invocations.filter((call) => call.tool === "close_account")).toHaveLength(1);
    expect((await h.ofType("outcome")).at(-1)).toMatchObject({ proposalId, state: "expired" });
  });

  it("at exactly its lifetime a proposal stays open; one millisecond later the sweep expires it", async () => {
    const h = await harness();
    await h.say("please cancel SO-1001");
    const review = await h.lastReview();
    const write = (await h.store.getWrite(review.proposalId))!;
    h.clock.now = write.createdAt + PROPOSAL_TTL_DEFAULT_MS;
    expect(await h.engine.expireDueProposals()).toBe(0);
    expect((await h.store.getWrite(review.proposalId))?.state).toBe("proposed");
    expect(await h.ofType("outcome")).toEqual([]);
    h.clock.now += 1;
    expect(await h.engine.expireDueProposals()).toBe(1);
    expect((await h.store.getWrite(review.proposalId))?.state).toBe("expired");
  });

  it("leaves decided proposals and other states alone", async () => {
    const h = await harness();
    await h.say("please cancel SO-1001");
    const declined = await h.lastReview();
    await h.decline(declined.proposalId);
    await h.say("please cancel SO-1001");
    const confirmed = await h.lastReview();
    await h.confirm(confirmed.proposalId);
    h.clock.now += PROPOSAL_TTL_DEFAULT_MS * 3;
    expect(await h.engine.expireDueProposals()).toBe(0);
    expect((await h.store.listWrites(h.conversation.id)).map((write) => write.state).sort()).toEqual(["applied", "declined"]);
  });

  it("two nodes sweeping one SQLite file at once: each proposal is expired and told exactly once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "caplo-sweep-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const clock = { now: Date.parse("2026-03-01T10:00:00Z") };
    const release = releaseFromVersions({ agent: "shop-agent", instructions: "Help.", origins: ["https://shop.example"], versions: [shopVersion()] });
    const backend = new ShopBackend();
    const engines: Engine[] = [];
    const stores: SqliteStore[] = [];
    for (const nodeId of ["node-a", "node-b"]) {
      const store = new SqliteStore(join(dir, "caplo.db"));
      await store.migrate();
      const runner = shopRunner(backend).runner;
      const engine = new Engine({ store, runner, model: new ScriptedModel(rules), releases: new StaticReleases([release]), nodeId, now: () => clock.now });
      await engine.start({ scheduler: false });
      engines.push(engine);
      stores.push(store);
      cleanups.push(async () => {
        await engine.stop();
        await runner.close();
        await store.close();
      });
    }
    const [a, b] = engines as [Engine, Engine];
    const [storeA, storeB] = stores as [SqliteStore, SqliteStore];
    const proposals: { conversationId: string; proposalId: string }[] = [];
    for (let i = 0; i < 6; i++) {
      const conversation = await (i % 2 ? a : b).openConversation({ agent: "shop-agent", channel: "web", capabilities: { editableFields: true, forms: true, questions: true, files: true, pages: true, richText: true }, ownerId: `owner-${i}` });
      await a.handle(conversation.id, `owner-${i}`, { type: "message", text: `cancel SO-100${i}` });
      const review = (await storeA.listEvents(conversation.id, 0)).map((event) => event.message).find((message) => message.type === "review");
      if (review?.type !== "review") throw new Error("no review card");
      proposals.push({ conversationId: conversation.id, proposalId: review.proposalId });
    }
    clock.now += PROPOSAL_TTL_DEFAULT_MS + 1;
    const counts = await Promise.all([a.expireDueProposals(), b.expireDueProposals()]);
    expect(counts[0] + counts[1]).toBe(6);
    for (const { conversationId, proposalId } of proposals) {
      expect((await storeA.getWrite(proposalId))?.state).toBe("expired");
      const outcomes = (await storeB.listEvents(conversationId, 0)).filter((event) => event.message.type === "outcome");
      expect(outcomes.map((event) => event.message)).toEqual([expect.objectContaining({ proposalId, state: "expired" })]);
      expect((await storeA.listTransitions(proposalId)).filter((t) => t.to === "expired")).toHaveLength(1);
    }
  });
});

describe("the proposal sweep in the engine's lifecycle, over a real WebSocket", () => {
  it("a started engine expires a forgotten proposal by itself and the customer's review card gets the expired outcome", async () => {
    const dir = mkdtempSync(join(tmpdir(), "caplo-sweep-ws-"));
    const store = new SqliteStore(join(dir, "caplo.db"));
    await store.migrate();
    const runner = shopRunner(new ShopBackend()).runner;
    const releases = new StaticReleases([releaseFromVersions({ agent: "shop-agent", instructions: "Help.", origins: ["https://shop.example"], versions: [shopVersion()] })]);
    // A short lifetime and sweep period so the test waits a moment, not an hour; the clock is real.
    const engine = new Engine({ store, runner, model: new ScriptedModel(rules), releases, proposalTtlMs: 300, proposalSweepMs: 50 });
    await engine.start();
    const gateway = new Gateway({ engine, releases });
    const address = await gateway.listen(0, "127.0.0.1");
    const client = await TestClient.open(`ws://127.0.0.1:${address.port}/v1/ws`, "https://shop.example");
    cleanups.push(async () => {
      await client.close();
      await gateway.close();
      await engine.stop();
      await runner.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await client.hello("shop-agent");
    client.send({ t: "in", ref: "m1", event: { type: "message", text: "cancel SO-1001" } });
    const review = await client.waitFor((frame): frame is Extract<ServerFrame, { t: "event" }> => frame.t === "event" && frame.message.type === "review");
    if (review.message.type !== "review") throw new Error("not a review");
    const outcome = await client.waitFor((frame) => frame.t === "event" && frame.message.type === "outcome", 10_000);
    expect(outcome).toMatchObject({ t: "event", message: { type: "outcome", proposalId: review.message.proposalId, state: "expired" } });
    expect((await store.getWrite(review.message.proposalId))?.state).toBe("expired");
    // The card's confirm now is refused with a clear error, and nothing ran.
    client.send({ t: "in", ref: "late", event: { type: "confirm", proposalId: review.message.proposalId } });
    const refused = await client.waitFor((frame) => frame.t === "error" && frame.ref === "late");
    expect(refused).toMatchObject({ t: "error", code: "proposal_not_open" });
  });
});

describe("the proposal lifetime setting", () => {
  it("CAPLO_PROPOSAL_TTL_SECONDS: one hour by default, whole seconds from 60 to 86400, anything else refused by name", () => {
    expect(readProposalTtl({})).toEqual({ ok: true, ttlMs: 3_600_000 });
    expect(readProposalTtl({ CAPLO_PROPOSAL_TTL_SECONDS: "60" })).toEqual({ ok: true, ttlMs: 60_000 });
    expect(readProposalTtl({ CAPLO_PROPOSAL_TTL_SECONDS: "86400" })).toEqual({ ok: true, ttlMs: 86_400_000 });
    for (const bad of ["59", "86401", "1h", "-60", "3600.5"]) {
      expect(readProposalTtl({ CAPLO_PROPOSAL_TTL_SECONDS: bad })).toMatchObject({ ok: false, error: { code: "proposal_ttl_invalid", path: "CAPLO_PROPOSAL_TTL_SECONDS" } });
    }
  });
});
