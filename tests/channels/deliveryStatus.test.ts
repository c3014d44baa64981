// Delivery statuses (#18 item 5): Twilio's status callbacks, posted by the fake Twilio and signed by the real
// twilio library over exactly the StatusCallback URL the real client sent, and Meta's delivery and read
// receipts, signed with X-Hub-Signature-256, are kept on the outbound event with their times and error codes
// and shown on it in the team API; a send refused for the 24-hour window tells the team and, where the agent
// declares an approved template, sends that template instead, once.
import { afterEach, describe, expect, it } from "vitest";
import { metaSigned, twilioSignature } from "@caplo/adapters/testkit";
import { WHATSAPP_WINDOW_MS } from "@caplo/shared/channels";
import { mountChannels } from "../../server/src/channels/channelSetup.ts";
import { StaticReleases } from "../../server/src/engine/release.ts";
import { Gateway } from "../../server/src/gateway/gateway.ts";
import { teamMember } from "../../server/src/gateway/teamMembers.ts";
import { engineHarness } from "../engine/support/harness.ts";
import { startFakeTwilio } from "./fakeTwilio.ts";
import { ALL_CHANNELS, BUSINESS_NUMBER, agentConfigOf, channelBench, type Bench } from "./support.ts";

const rules = [
  { when: /hello/i, replies: [{ text: "Hello there." }] },
  { when: /more/i, replies: [{ text: "One more thing." }] },
];
const WEBHOOK_URL = "https://shop.example/caplo/webhooks/whatsapp";

let b: Bench | undefined;
afterEach(async () => {
  await b?.close();
  b = undefined;
});
const texts = (bench: Bench) => bench.received().map((m) => m.text);
const conversationOf = async (bench: Bench) => (await bench.store.listBindings())[0]!.conversationId;
const statusesOf = async (bench: Bench, platformId: string) =>
  ((await bench.store.listOutbox(await conversationOf(bench))).find((r) => r.platformId === platformId)?.statuses ?? []).map((s) => s.status);

describe("Twilio status callbacks", () => {
  it("sent, delivered and read callbacks for the exact StatusCallback URL are kept on the part, once each, with their times; the team API shows them on the event", async () => {
    const h = await engineHarness({ rules, channels: ALL_CHANNELS });
    const twilio = await startFakeTwilio();
    const gw = new Gateway({ engine: h.engine, releases: new StaticReleases([h.release]), teamMembers: [teamMember("ana", "team-token-for-tests")] });
    const mounted = await mountChannels({
      settings: { whatsapp: { accountSid: twilio.accountSid, authToken: twilio.authToken, from: BUSINESS_NUMBER, publicUrl: WEBHOOK_URL, apiBaseUrl: twilio.url } },
      engine: h.engine,
      gateway: gw,
      agentFor: () => "shop-agent",
      agentConfig: agentConfigOf(h),
      file: `${h.dir}/channels.db`,
      alerts: { alert: () => {} },
    });
    try {
      const { port } = await gw.listen(0, "127.0.0.1");
      const base = `http://127.0.0.1:${port}`;
      // Behind the proxy: Twilio calls the public URL, which reaches this gateway's webhook.
      twilio.routeCallbacks(WEBHOOK_URL, `${base}/webhooks/whatsapp`);
      const inbound = new URLSearchParams({ MessageSid: `SM${"1".repeat(32)}`, AccountSid: twilio.accountSid, From: "whatsapp:+38640111222", To: BUSINESS_NUMBER, Body: "hello" });
      const raw = Buffer.from(inbound.toString());
      const answer = await fetch(`${base}/webhooks/whatsapp`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": twilioSignature(raw, WEBHOOK_URL, twilio.authToken) },
        body: new Uint8Array(raw),
      });
      expect(answer.status).toBe(200);
      for (let i = 0; i < 1000 && twilio.callbacks.filter((c) => c.status === "read").length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      const sent = twilio.sent.find((m) => m.body === "Hello there.")!;
      // The real client sent the webhook URL as StatusCallback, and every callback signed over it was accepted.
      expect(sent.statusCallback).toBe(WEBHOOK_URL);
      expect(twilio.callbacks.filter((c) => c.sid === sent.sid)).toEqual([
        { sid: sent.sid, status: "sent", answer: 200 },
        { sid: sent.sid, status: "delivered", answer: 200 },
        { sid: sent.sid, status: "read", answer: 200 },
      ]);
      await mounted.service.idle();
      const conversationId = (await mounted.store.listBindings())[0]!.conversationId;
      // A repeated callback (Twilio may send one twice) is kept once.
      const repeat = new URLSearchParams({ MessageSid: sent.sid, AccountSid: twilio.accountSid, From: BUSINESS_NUMBER, To: "whatsapp:+38640111222", MessageStatus: "delivered" });
      const repeatRaw = Buffer.from(repeat.toString());
      const again = await fetch(`${base}/webhooks/whatsapp`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": twilioSignature(repeatRaw, WEBHOOK_URL, twilio.authToken) },
        body: new Uint8Array(repeatRaw),
      });
      expect(again.status).toBe(200);
      await mounted.service.idle();
      const team = { authorization: "Bearer team-token-for-tests" };
      const events = (await (await fetch(`${base}/v1/team/conversations/${conversationId}/events`, { headers: team })).json()) as {
        events: Array<{ message: { text?: string }; delivery?: { channel: string; status: string; parts: Array<{ part: number; state: string; status: string; platformId: string; statuses: Array<{ status: string; at: string }> }> } }>;
      };
      const reply = events.events.find((e) => e.message.text === "Hello there.")!;
      expect(reply.delivery).toMatchObject({ channel: "whatsapp", status: "read", parts: [{ part: 0, state: "sent", status: "read", platformId: sent.sid }] });
      expect(reply.delivery!.parts[0]!.statuses.map((s) => s.status)).toEqual(["queued", "sent", "delivered", "read"]);
      for (const s of reply.delivery!.parts[0]!.statuses) expect(s.at).toMatch(/^\d{4}-\d\d-\d\dT/);
      // The customer's own message has no delivery of ours.
      expect(events.events.find((e) => e.message.text === "hello")?.delivery).toBeUndefined();
    } finally {
      await gw.close();
      await mounted.close();
      await twilio.close();
      await h.close();
    }
  });

  it("a callback signed over another URL, with a forged signature or none, is refused 403 and changes nothing", async () => {
    b = await channelBench({ platform: "whatsapp", rules });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the reply");
    await bench.service.idle();
    const sent = bench.twilio!.sent.at(-1)!;
    const form = Buffer.from(new URLSearchParams({ MessageSid: sent.sid, AccountSid: bench.twilio!.accountSid, From: BUSINESS_NUMBER, To: bench.customer, MessageStatus: "failed", ErrorCode: "30008" }).toString());
    expect((await bench.post(form, { signature: twilioSignature(form, "https://shop.example/other", bench.twilio!.authToken) })).status).toBe(403);
    expect((await bench.post(form, { signature: twilioSignature(form, WEBHOOK_URL, "0".repeat(32)) })).status).toBe(403);
    expect((await bench.post(form, { signature: null })).status).toBe(403);
    await bench.service.idle();
    expect(await statusesOf(bench, sent.sid)).toEqual(["queued"]);
    expect(await bench.store.listFailures()).toEqual([]);
    expect(bench.alerts).toEqual([]);
  });

  it("failed and undelivered callbacks keep their error code on the part, mark it failed and tell the team", async () => {
    b = await channelBench({ platform: "whatsapp", rules });
    const bench = b;
    bench.twilio!.routeCallbacks(WEBHOOK_URL, `${bench.url}/webhooks/whatsapp`);
    bench.twilio!.setStatusFlow(["sent", "undelivered"]);
    await bench.say("hello");
    await bench.waitFor(() => bench.twilio!.callbacks.some((c) => c.status === "undelivered"), "the undelivered callback");
    await bench.service.idle();
    const sent = bench.twilio!.sent.find((m) => m.body === "Hello there.")!;
    expect(await statusesOf(bench, sent.sid)).toEqual(["queued", "sent", "undelivered"]);
    // Twilio names the error of an undelivered message: kept on the status.
    const form = Buffer.from(new URLSearchParams({ MessageSid: sent.sid, AccountSid: bench.twilio!.accountSid, From: BUSINESS_NUMBER, To: bench.customer, MessageStatus: "failed", ErrorCode: "30008" }).toString());
    expect((await bench.post(form)).status).toBe(200);
    await bench.waitFor(async () => (await statusesOf(bench, sent.sid)).includes("failed"), "the failed status");
    const record = (await bench.store.listOutbox(await conversationOf(bench))).find((r) => r.platformId === sent.sid)!;
    expect(record.state).toBe("failed");
    expect(record.statuses!.find((s) => s.status === "failed")).toMatchObject({ errorCode: 30008 });
    expect(bench.alerts).toContainEqual(expect.objectContaining({ code: "undelivered", message: expect.stringContaining("30008") }));
  });
});

describe("the 24-hour window", () => {
  const TEMPLATE_BODY = "Hello {{1}}, we have an answer for you. Reply to see it.";

  it("a 63016 callback tells the team and sends the agent's approved template instead, once for several refused replies", async () => {
    const config = { channels: { whatsapp: { outsideWindowTemplate: { contentSid: "", variables: { "1": "Ana" } } } } };
    b = await channelBench({ platform: "whatsapp", rules, agentConfig: () => config });
    const bench = b;
    const templateSid = bench.twilio!.addApprovedTemplate(TEMPLATE_BODY);
    config.channels.whatsapp.outsideWindowTemplate.contentSid = templateSid;
    bench.twilio!.routeCallbacks(WEBHOOK_URL, `${bench.url}/webhooks/whatsapp`);
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the reply");
    await bench.service.idle();
    const conversationId = await conversationOf(bench);
    // Twilio accepts free-form messages and reports 63016 later (its own window clock).
    bench.twilio!.closeWindowLate(bench.customer);
    await bench.h.engine.emit(conversationId, { type: "text", id: "late-1", from: "agent", text: "Your refund went out." });
    await bench.h.engine.emit(conversationId, { type: "text", id: "late-2", from: "agent", text: "And your voucher too." });
    await bench.waitFor(() => bench.twilio!.callbacks.filter((c) => c.errorCode === "63016").length === 2, "both 63016 callbacks");
    await bench.waitFor(() => bench.twilio!.sent.some((m) => m.contentSid === templateSid), "the template");
    await bench.service.idle();
    await bench.h.engine.idle();
    const templates = bench.twilio!.sent.filter((m) => m.contentSid === templateSid);
    expect(templates).toHaveLength(1);
    expect(templates[0]).toMatchObject({ to: bench.customer, content: { body: "Hello Ana, we have an answer for you. Reply to see it." } });
    expect(templates[0]!.body).toBeUndefined();
    expect(bench.violations()).toEqual([]);
    expect(bench.alerts).toContainEqual(expect.objectContaining({ conversationId, code: "outside_window", message: expect.stringContaining("63016") }));
    expect(bench.alerts).toContainEqual(expect.objectContaining({ conversationId, code: "outside_window_template", message: expect.stringContaining(templateSid) }));
    const outbox = await bench.store.listOutbox(conversationId);
    expect(outbox.filter((r) => r.part === -2)).toEqual([expect.objectContaining({ state: "sent", code: "outside_window_template", platformId: templates[0]!.sid })]);
    // Both replies are recorded as not delivered: Twilio accepted them and then refused them (63016).
    expect(outbox.filter((r) => r.state === "failed" && r.code === "outside_window")).toHaveLength(2);
  });

  it("past 24 hours by our own clock the reply is not attempted; the approved template goes instead and the team is told", async () => {
    const clock = { t: Date.parse("2026-12-01T10:00:00Z") };
    const config = { channels: { whatsapp: { outsideWindowTemplate: { contentSid: "", variables: { "1": "Ana" } } } } };
    b = await channelBench({ platform: "whatsapp", rules, now: () => clock.t, agentConfig: () => config });
    const bench = b;
    config.channels.whatsapp.outsideWindowTemplate.contentSid = bench.twilio!.addApprovedTemplate(TEMPLATE_BODY);
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the reply");
    await bench.service.idle();
    const conversationId = await conversationOf(bench);
    clock.t += WHATSAPP_WINDOW_MS + 1;
    await bench.h.engine.emit(conversationId, { type: "text", id: "late", from: "agent", text: "Your refund went out." });
    await bench.waitFor(() => bench.twilio!.sent.some((m) => m.contentSid === config.channels.whatsapp.outsideWindowTemplate.contentSid), "the template");
    await bench.service.idle();
    expect(texts(bench)).not.toContain("Your refund went out.");
    expect(bench.alerts.map((a) => a.code)).toEqual(expect.arrayContaining(["outside_window", "outside_window_template"]));
    // The customer answers the template: the window is open again and replies go out as usual.
    await bench.say("more");
    await bench.waitFor(() => texts(bench).includes("One more thing."), "the reply after the window reopened");
  });

  it("without a declared template a refused reply still tells the team, and nothing else is sent", async () => {
    b = await channelBench({ platform: "whatsapp", rules });
    const bench = b;
    bench.twilio!.routeCallbacks(WEBHOOK_URL, `${bench.url}/webhooks/whatsapp`);
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the reply");
    await bench.service.idle();
    const conversationId = await conversationOf(bench);
    bench.twilio!.closeWindowLate(bench.customer);
    const before = bench.twilio!.sent.length;
    await bench.h.engine.emit(conversationId, { type: "text", id: "late", from: "agent", text: "Your refund went out." });
    await bench.waitFor(() => bench.alerts.some((a) => a.code === "outside_window"), "the alert");
    await bench.service.idle();
    expect(bench.twilio!.sent.length).toBe(before + 1);
    expect(bench.alerts.map((a) => a.code)).not.toContain("outside_window_template");
  });
});

describe("Meta delivery and read receipts", () => {
  const receipt = (bench: Bench, body: Record<string, unknown>) => {
    const object = bench.platform === "messenger" ? "page" : "instagram";
    const raw = Buffer.from(JSON.stringify({ object, entry: [{ id: "105000000000001", time: Date.now(), messaging: [{ sender: { id: bench.customer }, recipient: { id: "105000000000001" }, timestamp: Date.now(), ...body }] }] }));
    return bench.post(raw, { signature: metaSigned(raw).headers["x-hub-signature-256"] as string });
  };

  it("Messenger: message_deliveries by mid and message_reads by watermark are kept on the parts they cover, with the receipt's time", async () => {
    b = await channelBench({ platform: "messenger", rules });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the reply");
    await bench.service.idle();
    const conversationId = await conversationOf(bench);
    const parts = (await bench.store.listOutbox(conversationId)).filter((r) => r.statuses!.length > 0);
    expect(parts.length).toBeGreaterThan(0);
    const mids = parts.map((p) => p.platformId!);
    expect((await receipt(bench, { delivery: { mids, watermark: Date.now() } })).status).toBe(200);
    expect((await receipt(bench, { read: { watermark: Date.now() } })).status).toBe(200);
    await bench.waitFor(async () => (await bench.store.listOutbox(conversationId)).filter((r) => r.statuses!.some((s) => s.status === "read")).length === parts.length, "the read receipt");
    for (const part of await bench.store.listOutbox(conversationId)) {
      if (!part.statuses!.length) continue;
      expect(part.statuses!.map((s) => s.status)).toEqual(["sent", "delivered", "read"]);
    }
    // A later message is not covered by an earlier watermark.
    const watermark = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    await bench.say("more");
    await bench.waitFor(() => texts(bench).includes("One more thing."), "the second reply");
    await bench.service.idle();
    expect((await receipt(bench, { read: { watermark: watermark - 1 } })).status).toBe(200);
    await bench.service.idle();
    const later = (await bench.store.listOutbox(conversationId)).filter((r) => !mids.includes(r.platformId ?? "") && r.statuses!.length > 0);
    expect(later.length).toBeGreaterThan(0);
    for (const part of later) expect(part.statuses!.map((s) => s.status)).toEqual(["sent"]);
  });

  it("Instagram: messaging_seen names the read message by its mid; a receipt with neither mid nor watermark is 400", async () => {
    b = await channelBench({ platform: "instagram", rules });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the reply");
    await bench.service.idle();
    const conversationId = await conversationOf(bench);
    const part = (await bench.store.listOutbox(conversationId)).find((r) => r.statuses!.length > 0)!;
    expect((await receipt(bench, { read: { mid: part.platformId } })).status).toBe(200);
    await bench.waitFor(async () => (await statusesOf(bench, part.platformId!)).includes("read"), "the read receipt");
    expect((await receipt(bench, { read: {} })).status).toBe(400);
  });
});
