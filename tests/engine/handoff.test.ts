// Handoff notices: when the agent hands a conversation to its channel's handoff destination (a team queue),
// the queue's webhook gets a signed POST (HMAC-SHA256 over "<timestamp>.<body>" with the operator's secret),
// stored first, retried with growing gaps, and its outcome recorded and shown in the team API. A local HTTP
// server plays the team's endpoint and checks every signature and body itself; the store is a real SQLite
// file, the clock manual.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Engine } from "../../server/src/engine/engine.ts";
import { HANDOFF_ATTEMPTS_MAX, HandoffDelivery, readHandoffWebhooks, type HandoffWebhooks } from "../../server/src/engine/handoff.ts";
import { releaseFromVersions, StaticReleases } from "../../server/src/engine/release.ts";
import { Gateway } from "../../server/src/gateway/gateway.ts";
import { teamMember } from "../../server/src/gateway/teamMembers.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import { SqliteStore } from "../../server/src/store/sqliteStore.ts";
import { WEB } from "./support/harness.ts";
import { teamEndpoint } from "./support/teamEndpoint.ts";
import { ShopBackend, shopRunner, shopVersion } from "./support/shopTools.ts";

const SECRET = "handoff-webhook-secret-of-32-chars-or-more!";
const BASE_MS = 1000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(webhooks: (url: string) => HandoffWebhooks, statuses: number[] = [], queue = "support") {
  const endpoint = await teamEndpoint(SECRET, statuses);
  cleanups.push(endpoint.close);
  const dir = mkdtempSync(join(tmpdir(), "caplo-handoff-"));
  const clock = { now: Date.parse("2026-03-01T10:00:00.000Z") };
  const store = new SqliteStore(join(dir, "caplo.db"));
  await store.migrate();
  const runner = shopRunner(new ShopBackend()).runner;
  const release = releaseFromVersions({
    agent: "shop-agent",
    instructions: "Help.",
    origins: ["https://shop.example"],
    versions: [shopVersion()],
    channels: { web: { handoff: { queue, message: "Passing you to our team." } } },
  });
  const logs: { level: string; message: string; data?: Record<string, unknown> }[] = [];
  const delivery = new HandoffDelivery({ store, webhooks: webhooks(endpoint.url), now: () => clock.now, retryBaseMs: BASE_MS, timeoutMs: 2000, log: (level, message, data) => logs.push({ level, message, ...(data && { data }) }) });
  const model = new ScriptedModel([{ when: /person/, replies: [{ text: "One moment.", toolCalls: [{ name: "handoff_to_team", args: { reason: "The customer asked for a person about a refund." } }] }] }]);
  const engine = new Engine({ store, runner, model, releases: new StaticReleases([release]), now: () => clock.now, handoffNotifier: delivery });
  await engine.start({ scheduler: false });
  cleanups.push(async () => {
    await delivery.stop();
    await engine.stop();
    await runner.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const conversation = await engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "owner" });
  const handOff = async () => {
    await engine.handle(conversation.id, "owner", { type: "message", text: "can I talk to a person?" });
    return store.listHandoffNotices(conversation.id);
  };
  return { endpoint, store, engine, delivery, clock, conversation, release, logs, handOff, dir };
}

describe("handoff notices", () => {
  it("the agent's handoff reaches the queue's webhook: stored, then one signed POST whose body names the queue, conversation and reason; delivered is recorded", async () => {
    const t = await setup((url) => ({ defaultUrl: url, byQueue: {}, secret: SECRET }));
    const [notice] = await t.handOff();
    expect(notice).toMatchObject({ queue: "support", state: "pending", attempts: 0 });
    expect((await t.store.getConversation(t.conversation.id))?.handoff).toMatchObject({ state: "requested", queue: "support" });
    expect(t.endpoint.received).toEqual([]); // stored before anything is sent
    expect(await t.delivery.deliverDue()).toBe(1);
    expect(t.endpoint.received).toHaveLength(1);
    const [request] = t.endpoint.received;
    expect(request!.signatureValid).toBe(true);
    expect(request!.timestamp).toBe(Math.floor(t.clock.now / 1000));
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(request!.headers["x-caplo-delivery"]).toBe(notice!.id);
    expect(JSON.parse(request!.body)).toEqual({
      type: "caplo.handoff",
      version: 1,
      id: notice!.id,
      queue: "support",
      agent: "shop-agent",
      channel: "web",
      conversationId: t.conversation.id,
      verified: false,
      reason: "The customer asked for a person about a refund.",
      requestedAt: new Date(t.clock.now).toISOString(),
      eventsPath: `/v1/team/conversations/${t.conversation.id}/events`,
    });
    expect(request!.body).not.toContain(SECRET);
    const [recorded] = await t.store.listHandoffNotices(t.conversation.id);
    expect(recorded).toMatchObject({ state: "delivered", attempts: 1, lastStatus: 204, lastError: null, nextAttemptAt: null });
    // Delivered means done: a later pass sends nothing more.
    t.clock.now += 60 * 60 * 1000;
    expect(await t.delivery.deliverDue()).toBe(0);
    expect(t.endpoint.received).toHaveLength(1);
  });

  it("a failed attempt is retried with growing gaps, the same body and delivery id each time, until delivered", async () => {
    const t = await setup((url) => ({ defaultUrl: url, byQueue: {}, secret: SECRET }), [503, 500]);
    const [notice] = await t.handOff();
    const start = t.clock.now;
    await t.delivery.deliverDue();
    expect((await t.store.listHandoffNotices(t.conversation.id))[0]).toMatchObject({ state: "pending", attempts: 1, lastStatus: 503, lastError: "the webhook answered HTTP 503", nextAttemptAt: start + BASE_MS });
    t.clock.now = start + BASE_MS - 1;
    expect(await t.delivery.deliverDue()).toBe(0);
    t.clock.now = start + BASE_MS;
    expect(await t.delivery.deliverDue()).toBe(1);
    expect((await t.store.listHandoffNotices(t.conversation.id))[0]).toMatchObject({ state: "pending", attempts: 2, lastStatus: 500, nextAttemptAt: start + 3 * BASE_MS });
    t.clock.now = start + 3 * BASE_MS;
    await t.delivery.deliverDue();
    expect((await t.store.listHandoffNotices(t.conversation.id))[0]).toMatchObject({ state: "delivered", attempts: 3, lastStatus: 204, lastError: null });
    expect(t.endpoint.received).toHaveLength(3);
    expect(new Set(t.endpoint.received.map((r) => r.body)).size).toBe(1);
    expect(t.endpoint.received.every((r) => r.signatureValid && r.headers["x-caplo-delivery"] === notice!.id)).toBe(true);
  });

  it("a refusal (HTTP 400) is not retried: the notice is failed with its status, and the failure is logged without the secret", async () => {
    const t = await setup((url) => ({ defaultUrl: url, byQueue: {}, secret: SECRET }), [400]);
    await t.handOff();
    await t.delivery.deliverDue();
    t.clock.now += 24 * 60 * 60 * 1000;
    await t.delivery.deliverDue();
    expect(t.endpoint.received).toHaveLength(1);
    expect((await t.store.listHandoffNotices(t.conversation.id))[0]).toMatchObject({ state: "failed", attempts: 1, lastStatus: 400, lastError: "the webhook answered HTTP 400" });
    expect(t.logs.find((entry) => entry.level === "error")?.message).toBe("handoff notice not delivered");
    expect(JSON.stringify(t.logs)).not.toContain(SECRET);
  });

  it("no answer at all is retried; after the last attempt the notice is failed, with the reason recorded", async () => {
    const t = await setup(() => ({ defaultUrl: "http://127.0.0.1:1/unreachable", byQueue: {}, secret: SECRET }));
    await t.handOff();
    for (let attempt = 1; attempt <= HANDOFF_ATTEMPTS_MAX; attempt++) {
      const [before] = await t.store.listHandoffNotices(t.conversation.id);
      if (before!.nextAttemptAt !== null) t.clock.now = before!.nextAttemptAt;
      expect(await t.delivery.deliverDue()).toBe(1);
    }
    const [notice] = await t.store.listHandoffNotices(t.conversation.id);
    expect(notice).toMatchObject({ state: "failed", attempts: HANDOFF_ATTEMPTS_MAX, lastStatus: null, nextAttemptAt: null });
    expect(notice!.lastError).toMatch(/^the request failed/);
    t.clock.now += 7 * 24 * 60 * 60 * 1000;
    expect(await t.delivery.deliverDue()).toBe(0);
  });

  it("a queue's own webhook wins over the default; a queue with neither gets no notice at all", async () => {
    const other = await teamEndpoint(SECRET);
    cleanups.push(other.close);
    const own = await setup((url) => ({ defaultUrl: other.url, byQueue: { support: url }, secret: SECRET }));
    await own.handOff();
    await own.delivery.deliverDue();
    expect(own.endpoint.received).toHaveLength(1);
    expect(other.received).toHaveLength(0);
    const none = await setup((url) => ({ byQueue: { billing: url }, secret: SECRET }));
    expect(await none.handOff()).toEqual([]);
    expect((await none.store.getConversation(none.conversation.id))?.handoff).toMatchObject({ state: "requested", queue: "support" });
    expect(await none.delivery.deliverDue()).toBe(0);
    expect(none.endpoint.received).toEqual([]);
  });

  it("two nodes delivering from one SQLite file at the same moment make one attempt, not two", async () => {
    const t = await setup((url) => ({ defaultUrl: url, byQueue: {}, secret: SECRET }));
    await t.handOff();
    const secondStore = new SqliteStore(join(t.dir, "caplo.db"));
    cleanups.push(() => secondStore.close());
    const second = new HandoffDelivery({ store: secondStore, webhooks: { defaultUrl: t.endpoint.url, byQueue: {}, secret: SECRET }, now: () => t.clock.now, retryBaseMs: BASE_MS });
    const counts = await Promise.all([t.delivery.deliverDue(), second.deliverDue()]);
    expect(counts[0] + counts[1]).toBe(1);
    expect(t.endpoint.received).toHaveLength(1);
    expect((await secondStore.listHandoffNotices(t.conversation.id))[0]).toMatchObject({ state: "delivered", attempts: 1 });
  });

  it("the team API shows the queue's conversations and each notice's outcome", async () => {
    const t = await setup((url) => ({ defaultUrl: url, byQueue: {}, secret: SECRET }), [503]);
    await t.handOff();
    await t.delivery.deliverDue();
    const gateway = new Gateway({ engine: t.engine, releases: new StaticReleases([t.release]), teamMembers: [teamMember("ana", "ana-token-for-the-handoff-test-0123456789")] });
    cleanups.push(() => gateway.close());
    const { port } = await gateway.listen(0, "127.0.0.1");
    const get = async (path: string) => (await fetch(`http://127.0.0.1:${port}/v1/team${path}`, { headers: { authorization: "Bearer ana-token-for-the-handoff-test-0123456789" } })).json();
    expect(((await get("/conversations?queue=support")) as { conversations: { id: string }[] }).conversations.map((c) => c.id)).toEqual([t.conversation.id]);
    expect(((await get("/conversations?queue=billing")) as { conversations: unknown[] }).conversations).toEqual([]);
    expect(await get("/conversations?queue=Bad_Queue")).toMatchObject({ error: { code: "queue_invalid" } });
    const notices = (await get(`/conversations/${t.conversation.id}/handoff-notices`)) as { notices: Record<string, unknown>[] };
    expect(notices.notices).toEqual([
      expect.objectContaining({ queue: "support", state: "pending", attempts: 1, lastStatus: 503, lastError: "the webhook answered HTTP 503", nextAttemptAt: new Date(t.clock.now + BASE_MS).toISOString() }),
    ]);
    expect(JSON.stringify(notices)).not.toContain(SECRET);
  });

  it("a started deliverer sends a new notice by itself", async () => {
    const t = await setup((url) => ({ defaultUrl: url, byQueue: {}, secret: SECRET }));
    t.delivery.start();
    await t.handOff();
    const deadline = Date.now() + 5000;
    while (t.endpoint.received.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(t.endpoint.received).toHaveLength(1);
    expect(t.endpoint.received[0]!.signatureValid).toBe(true);
  });
});

describe("the handoff webhook settings", () => {
  it("a URL for every queue or for one, and a secret of at least 32 characters", () => {
    expect(readHandoffWebhooks({})).toEqual({ ok: true });
    expect(readHandoffWebhooks({ CAPLO_HANDOFF_WEBHOOK_URL: "https://team.example/hook", CAPLO_HANDOFF_WEBHOOK_URL_VIP_SUPPORT: "http://127.0.0.1:9000/vip", CAPLO_HANDOFF_WEBHOOK_SECRET: SECRET })).toEqual({
      ok: true,
      webhooks: { defaultUrl: "https://team.example/hook", byQueue: { "vip-support": "http://127.0.0.1:9000/vip" }, secret: SECRET },
    });
  });

  it("refuses plain http off this machine, credentials in the URL, a short or missing secret, and a secret alone, each by name", () => {
    const bad: [Record<string, string>, string, string][] = [
      [{ CAPLO_HANDOFF_WEBHOOK_URL: "http://team.example/hook", CAPLO_HANDOFF_WEBHOOK_SECRET: SECRET }, "handoff_webhook_invalid", "CAPLO_HANDOFF_WEBHOOK_URL"],
      [{ CAPLO_HANDOFF_WEBHOOK_URL: "https://user:pw@team.example/hook", CAPLO_HANDOFF_WEBHOOK_SECRET: SECRET }, "handoff_webhook_invalid", "CAPLO_HANDOFF_WEBHOOK_URL"],
      [{ CAPLO_HANDOFF_WEBHOOK_URL: "not a url", CAPLO_HANDOFF_WEBHOOK_SECRET: SECRET }, "handoff_webhook_invalid", "CAPLO_HANDOFF_WEBHOOK_URL"],
      [{ CAPLO_HANDOFF_WEBHOOK_URL_SUPPORT: "ftp://team.example", CAPLO_HANDOFF_WEBHOOK_SECRET: SECRET }, "handoff_webhook_invalid", "CAPLO_HANDOFF_WEBHOOK_URL_SUPPORT"],
      [{ CAPLO_HANDOFF_WEBHOOK_URL: "https://team.example/hook" }, "handoff_secret_invalid", "CAPLO_HANDOFF_WEBHOOK_SECRET"],
      [{ CAPLO_HANDOFF_WEBHOOK_URL: "https://team.example/hook", CAPLO_HANDOFF_WEBHOOK_SECRET: "short" }, "handoff_secret_invalid", "CAPLO_HANDOFF_WEBHOOK_SECRET"],
      [{ CAPLO_HANDOFF_WEBHOOK_SECRET: SECRET }, "handoff_webhook_missing", "CAPLO_HANDOFF_WEBHOOK_SECRET"],
    ];
    for (const [env, code, path] of bad) {
      const read = readHandoffWebhooks(env);
      expect(read, JSON.stringify(env)).toMatchObject({ ok: false, error: { code, path } });
      expect(JSON.stringify(read)).not.toContain(SECRET);
    }
  });
});
