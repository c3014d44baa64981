// An agent per WhatsApp number, Messenger page or Instagram account (CAPLO_<PLATFORM>_AGENTS): each of
// our accounts opens conversations with its own agent and replies come from that number; the same customer
// on two numbers has two conversations; an account nobody answers is logged, answered 200, not processed.
import { afterEach, describe, expect, it } from "vitest";
import { readChannelSettings, routeAgent } from "../../server/src/channels/channelSetup.ts";
import type { AgentRelease, StaticReleases } from "../../server/src/engine/release.ts";
import { createWhatsAppAdapter } from "@caplo/adapters/whatsapp/index";
import { startFakeTwilio } from "./fakeTwilio.ts";
import { BUSINESS_NUMBER, channelBench, type Bench } from "./support.ts";

const SHOP_NUMBER = BUSINESS_NUMBER;
const HELP_NUMBER = "whatsapp:+14155230000";
const rules = [{ when: /hello/i, replies: [{ text: "Hello there." }] }];

let b: Bench | undefined;
afterEach(async () => {
  await b?.close();
  b = undefined;
});

/** A second real release on the bench's engine: the help desk, which greets first so its answers are told apart. */
function publishHelpDesk(bench: Bench): void {
  const releases = (bench.h.engine as unknown as { options: { releases: StaticReleases } }).options.releases;
  const help: AgentRelease = { ...bench.h.release, agent: "help-desk", id: `${bench.h.release.id}-help`, config: { ...bench.h.release.config, greeting: "Help desk here." } };
  releases.set(help);
}

describe("agent per number, page or account", () => {
  it("WhatsApp: each number opens conversations with its mapped agent, replies come from that number, one customer on two numbers has two conversations", async () => {
    const routes = readChannelSettings({
      CAPLO_PUBLIC_URL: "https://shop.example",
      CAPLO_TWILIO_ACCOUNT_SID: `AC${"a".repeat(32)}`,
      CAPLO_TWILIO_AUTH_TOKEN: "b".repeat(32),
      CAPLO_WHATSAPP_FROM: SHOP_NUMBER,
      CAPLO_WHATSAPP_AGENTS: `${SHOP_NUMBER}=shop-agent, ${HELP_NUMBER}=help-desk`,
    });
    if (!routes.ok) throw new Error(JSON.stringify(routes.errors));
    b = await channelBench({ platform: "whatsapp", rules, agentFor: (platform, account) => routeAgent(routes.settings.routes, platform, account, () => "shop-agent") });
    const bench = b;
    publishHelpDesk(bench);
    expect((await bench.post(bench.body({ text: "hello", to: HELP_NUMBER }))).status).toBe(200);
    await bench.waitFor(() => bench.twilio!.sent.filter((m) => m.body === "Hello there.").length === 1, "the help desk's reply");
    await bench.say("hello");
    await bench.waitFor(() => bench.twilio!.sent.filter((m) => m.body === "Hello there.").length === 2, "the shop's reply");
    await bench.service.idle();
    const bindings = await bench.store.listBindings();
    expect(bindings.map((x) => x.account).sort()).toEqual([SHOP_NUMBER, HELP_NUMBER].sort());
    const agentOf = async (account: string) => (await bench.h.store.getConversation(bindings.find((x) => x.account === account)!.conversationId))!.agent;
    expect(await agentOf(HELP_NUMBER)).toBe("help-desk");
    expect(await agentOf(SHOP_NUMBER)).toBe("shop-agent");
    const sent = bench.twilio!.sent.filter((m) => m.to === bench.customer);
    expect(sent.filter((m) => m.body === "Help desk here.").map((m) => m.from)).toEqual([HELP_NUMBER]);
    expect(sent.filter((m) => m.body === "Hello there.").map((m) => m.from)).toEqual([HELP_NUMBER, SHOP_NUMBER]);
  });

  it("Messenger: two pages with their own tokens and agents; each page's customer is answered by its agent, sent with its page's token", async () => {
    const read = readChannelSettings({
      CAPLO_META_APP_SECRET: "c".repeat(32),
      CAPLO_META_VERIFY_TOKEN: "a-long-verify-token-123",
      CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "x"),
      CAPLO_MESSENGER_PAGE_TOKENS: `205000000000002=${"EAAH".padEnd(40, "z")}`,
      CAPLO_MESSENGER_AGENTS: "105000000000001=shop-agent,205000000000002=help-desk",
    });
    expect(read).toMatchObject({ ok: true, settings: { messenger: { accountTokens: { "205000000000002": "EAAH".padEnd(40, "z") } } } });
    const routes = read.ok ? read.settings.routes : undefined;
    b = await channelBench({ platform: "messenger", rules, extraPages: ["205000000000002"], agentFor: (platform, account) => routeAgent(routes, platform, account, () => undefined) });
    const bench = b;
    publishHelpDesk(bench);
    expect((await bench.post(bench.body({ text: "hello", to: "205000000000002" }))).status).toBe(200);
    await bench.waitFor(() => bench.received().some((m) => m.text === "Hello there."), "the help desk's reply");
    await bench.say("hello");
    await bench.waitFor(() => bench.received().filter((m) => m.text === "Hello there.").length === 2, "the shop's reply");
    await bench.service.idle();
    const pages = (text: string) => bench.graph!.sent.filter((s) => s.message?.text === text).map((s) => bench.graph!.pageOf(s));
    expect(pages("Help desk here.")).toEqual(["205000000000002"]);
    expect(pages("Hello there.")).toEqual(["205000000000002", "105000000000001"]);
    expect(bench.violations()).toEqual([]);
  });

  it("Messenger: a page the map does not name, without CAPLO_MESSENGER_AGENT, is answered 200, logged and not processed", async () => {
    const byAccount = { "105000000000001": "shop-agent" };
    b = await channelBench({ platform: "messenger", rules, agentFor: (platform, account) => routeAgent({ messenger: { byAccount } }, platform, account, () => "shop-agent") });
    const bench = b;
    const answer = await bench.post(bench.body({ text: "hello", to: "999000000000009", id: "unmapped" }));
    expect(answer).toEqual({ status: 200, body: "EVENT_RECEIVED" });
    await bench.waitFor(async () => (await bench.store.listInbound("failed")).length === 1, "the unrouted row");
    expect((await bench.store.listInbound("failed"))[0]).toMatchObject({ messageId: "m_unmapped", error: expect.stringContaining("no agent is configured for messenger account 999000000000009") });
    expect(bench.logs).toEqual([expect.stringContaining("no agent is configured for messenger account 999000000000009")]);
    expect(bench.logs.join("\n")).not.toContain(bench.customer);
    expect(await bench.store.listBindings()).toEqual([]);
    expect(bench.graph!.sent).toEqual([]);
    // The mapped page is answered as before.
    await bench.say("hello");
    await bench.waitFor(() => bench.received().some((m) => m.text === "Hello there."), "the mapped page's reply");
  });
});

describe("WhatsApp sender", () => {
  it("with a Messaging Service the reply stays in the service and comes from the number written to; without a known number the service picks", async () => {
    const twilio = await startFakeTwilio();
    try {
      const service = `MG${"c".repeat(32)}`;
      const adapter = createWhatsAppAdapter({ accountSid: twilio.accountSid, authToken: twilio.authToken, from: service, publicUrl: "https://shop.example/webhooks/whatsapp", apiBaseUrl: twilio.url });
      const to = "whatsapp:+38640111222";
      expect(await adapter.send(to, { kind: "text", body: "From the help number." }, { fromTeam: false, windowOpen: true, account: HELP_NUMBER })).toMatchObject({ ok: true });
      expect(await adapter.send(to, { kind: "text", body: "From the service." }, { fromTeam: false, windowOpen: true })).toMatchObject({ ok: true });
      expect(twilio.sent.map((m) => [m.body, m.from, m.messagingServiceSid])).toEqual([
        ["From the help number.", HELP_NUMBER, service],
        ["From the service.", service, service],
      ]);
      expect(twilio.violations).toEqual([]);
    } finally {
      await twilio.close();
    }
  });
});

describe("routeAgent and the CAPLO_<PLATFORM>_AGENTS variables", () => {
  const base = { CAPLO_META_APP_SECRET: "c".repeat(32), CAPLO_META_VERIFY_TOKEN: "a-long-verify-token-123", CAPLO_INSTAGRAM_TOKEN: "IGQV".padEnd(40, "y") };

  it("the map's agent first, then CAPLO_<PLATFORM>_AGENT; without a map the server's default", () => {
    const read = readChannelSettings({ ...base, CAPLO_INSTAGRAM_AGENTS: "1780000000000001=shop-agent,1780000000000002=help-desk", CAPLO_INSTAGRAM_AGENT: "front-desk" });
    expect(read).toMatchObject({ ok: true, settings: { routes: { instagram: { byAccount: { "1780000000000001": "shop-agent", "1780000000000002": "help-desk" }, fallback: "front-desk" } } } });
    const routes = read.ok ? read.settings.routes : undefined;
    expect(routeAgent(routes, "instagram", "1780000000000002", () => "first")).toBe("help-desk");
    expect(routeAgent(routes, "instagram", "1780000000000003", () => "first")).toBe("front-desk");
    expect(routeAgent(undefined, "instagram", "1780000000000003", () => "first")).toBe("first");
    expect(routeAgent({ instagram: { byAccount: {} } }, "instagram", "1780000000000003", () => "first")).toBeUndefined();
  });

  it("a malformed map is an error naming the variable and the entry", () => {
    const bad = (value: string) => readChannelSettings({ ...base, CAPLO_INSTAGRAM_AGENTS: value });
    expect(bad("1780000000000001")).toMatchObject({ ok: false, errors: [{ code: "channel_config_invalid", path: "CAPLO_INSTAGRAM_AGENTS", message: expect.stringContaining("is not account=agent") }] });
    expect(bad("whatsapp:+15551234567=shop")).toMatchObject({ ok: false, errors: [{ message: expect.stringContaining("an Instagram professional account id") }] });
    expect(bad("1780000000000001=Shop Agent")).toMatchObject({ ok: false, errors: [{ message: expect.stringContaining("is not an agent name") }] });
    expect(bad("1=shop,1=help")).toMatchObject({ ok: false, errors: [{ message: expect.stringContaining("names 1 twice") }] });
    expect(bad(" , ")).toMatchObject({ ok: false, errors: [{ message: expect.stringContaining("is empty") }] });
    const secret = "EAAH".padEnd(40, "s");
    const tokens = readChannelSettings({ ...base, CAPLO_INSTAGRAM_TOKENS: `1780000000000002:${secret}` });
    expect(tokens).toMatchObject({ ok: false, errors: [{ path: "CAPLO_INSTAGRAM_TOKENS", message: expect.stringContaining("entry 1 is not") }] });
    expect(JSON.stringify(tokens)).not.toContain(secret);
    expect(readChannelSettings({ CAPLO_WHATSAPP_AGENTS: "whatsapp:+15551234567=shop" })).toMatchObject({ ok: false, errors: [{ path: "CAPLO_WHATSAPP_AGENTS", message: expect.stringContaining("not configured") }] });
  });
});
