// The channel webhooks mounted on the real gateway: a signed Messenger webhook is answered 200 and the
// customer gets the agent's reply; the handshake works over GET; an oversized body is refused with 413.
import { afterEach, describe, expect, it } from "vitest";
import { metaSigned } from "@caplo/adapters/testkit";
import { StaticReleases } from "../../server/src/engine/release.ts";
import { Gateway } from "../../server/src/gateway/gateway.ts";
import { registerChannelRoutes, WEBHOOK_BODY_MAX } from "../../server/src/channels/routes.ts";
import { mountChannels, readChannelSettings } from "../../server/src/channels/channelSetup.ts";
import { SqliteInboxStore } from "../../server/src/channels/inbox/index.ts";
import { engineHarness } from "../engine/support/harness.ts";
import { startFakeGraph } from "./fakeGraph.ts";
import { INSTAGRAM_RULES } from "./platformRules.ts";
import { ALL_CHANNELS, agentConfigOf, channelBench, mountedMessenger, type Bench } from "./support.ts";

let b: Bench | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  await b?.close();
  gateway = undefined;
  b = undefined;
});

describe("channel webhooks on the gateway", () => {
  it("routes /webhooks/messenger to the glue: handshake, signed message, size limit", async () => {
    b = await channelBench({ platform: "messenger", rules: [{ when: /hello/i, replies: [{ text: "Hello from the gateway." }] }] });
    const bench = b;
    gateway = new Gateway({ engine: bench.h.engine, releases: new StaticReleases([bench.h.release]) });
    registerChannelRoutes(gateway, bench.service, ["messenger"]);
    const { port } = await gateway.listen(0, "127.0.0.1");
    const base = `http://127.0.0.1:${port}`;
    const shake = await fetch(`${base}/webhooks/messenger?hub.mode=subscribe&hub.verify_token=verify-token-for-tests&hub.challenge=4242`);
    expect([shake.status, await shake.text()]).toEqual([200, "4242"]);
    const signed = metaSigned(bench.body({ text: "hello" }));
    const posted = await fetch(`${base}/webhooks/messenger`, { method: "POST", headers: signed.headers as Record<string, string>, body: new Uint8Array(signed.rawBody) });
    expect(posted.status).toBe(200);
    await bench.waitFor(() => bench.received().some((m) => m.text === "Hello from the gateway."), "the reply");
    const huge = Buffer.alloc(WEBHOOK_BODY_MAX + 1, 32);
    const refused = await fetch(`${base}/webhooks/messenger`, { method: "POST", headers: { "content-type": "application/json" }, body: huge });
    expect(refused.status).toBe(413);
  });

  it("Instagram through Business Login, from the environment: webhooks checked with the Instagram app secret, replies sent with the IG token to the Instagram API base", async () => {
    const h = await engineHarness({ rules: [{ when: /hello/i, replies: [{ text: "Hello on Instagram." }] }], channels: ALL_CHANNELS });
    const graph = await startFakeGraph(INSTAGRAM_RULES);
    const account = "17841400000000001";
    const token = graph.addPage(account, `IGAA${"q".repeat(40)}`);
    const instagramSecret = "e".repeat(32);
    const read = readChannelSettings({ CAPLO_INSTAGRAM_TOKEN: token, CAPLO_INSTAGRAM_APP_SECRET: instagramSecret, CAPLO_META_VERIFY_TOKEN: "verify-token-for-tests", CAPLO_INSTAGRAM_API_BASE: graph.url });
    if (!read.ok) throw new Error(JSON.stringify(read.errors));
    const gw = new Gateway({ engine: h.engine, releases: new StaticReleases([h.release]) });
    const mounted = await mountChannels({ settings: read.settings, engine: h.engine, gateway: gw, agentFor: () => "shop-agent", agentConfig: agentConfigOf(h), file: `${h.dir}/channels.db` });
    try {
      const { port } = await gw.listen(0, "127.0.0.1");
      const raw = Buffer.from(JSON.stringify({ object: "instagram", entry: [{ id: account, time: 1, messaging: [{ sender: { id: "1780000000000042" }, recipient: { id: account }, timestamp: 1, message: { mid: "m_ig_login_1", text: "hello" } }] }] }));
      const post = (secret: string) => fetch(`http://127.0.0.1:${port}/webhooks/instagram`, { method: "POST", headers: metaSigned(raw, "/", secret).headers as Record<string, string>, body: new Uint8Array(raw) });
      // Signed with the Meta app secret of the tests, not the Instagram app secret: refused, nothing stored.
      expect((await post("meta-app-secret-for-tests")).status).toBe(403);
      expect(await mounted.store.listInbound()).toEqual([]);
      expect((await post(instagramSecret)).status).toBe(200);
      for (let i = 0; i < 400 && !graph.sent.some((s) => s.message?.text === "Hello on Instagram."); i++) await new Promise((r) => setTimeout(r, 10));
      const reply = graph.sent.find((s) => s.message?.text === "Hello on Instagram.");
      expect(reply && graph.pageOf(reply)).toBe(account);
      expect(graph.violations).toEqual([]);
    } finally {
      await gw.close();
      await mounted.close();
      await graph.close();
      await h.close();
    }
  });

  it("mountChannels builds the configured adapters, mounts their webhooks and answers through the engine", async () => {
    const m = await mountedMessenger({ rules: [{ when: /hello/i, replies: [{ text: "Mounted and answering." }] }] });
    try {
      expect(m.mounted.platforms).toEqual(["messenger"]);
      expect((await m.say("m_mount_1", "hello")).status).toBe(200);
      expect(await m.sent("Mounted and answering.")).toContain("Mounted and answering.");
      expect((await fetch(`${m.base}/webhooks/whatsapp`, { method: "POST" })).status).toBe(404);
    } finally {
      await m.close();
    }
  });

  it("stopping the channels waits for a reply still being sent, so it is recorded as sent before the channel state closes", async () => {
    const lines: string[] = [];
    const m = await mountedMessenger({ rules: [{ when: /hello/i, replies: [{ text: "Sent while stopping." }] }], log: (line) => lines.push(line) });
    try {
      const release = m.graph.hold();
      expect((await m.say("m_stop_1", "hello")).status).toBe(200);
      for (let i = 0; i < 400 && m.graph.waiting === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(m.graph.waiting).toBeGreaterThan(0);
      const [binding] = await m.mounted.store.listBindings();
      const conversationId = binding!.conversationId;
      // The stop begins while the Send API has not answered: it waits for the answer.
      let stopped = false;
      const stopping = m.mounted.close().then(() => (stopped = true));
      await new Promise((r) => setTimeout(r, 200));
      expect(stopped).toBe(false);
      release();
      await stopping;
      expect(m.graph.sent.map((s) => s.message?.text)).toContain("Sent while stopping.");
      expect(lines.filter((line) => /failed/.test(line))).toEqual([]);
      const reopened = new SqliteInboxStore(m.file);
      try {
        const records = await reopened.listOutbox(conversationId);
        expect(records).not.toEqual([]);
        expect(records.filter((record) => record.state !== "sent")).toEqual([]);
      } finally {
        reopened.close();
      }
    } finally {
      await m.close();
    }
  });
});
