// Delivery through the channel glue against fake platforms: retries with backoff, permanent failures
// recorded and told, the 24-hour window, HUMAN_AGENT only for the team, the disclosure, typing indicators,
// Content API caching, foreign taps, proxies and extra parameters, the subscription handshake.
import { afterEach, describe, expect, it } from "vitest";
import { META_HUMAN_AGENT_WINDOW_MS, WHATSAPP_WINDOW_MS } from "@caplo/shared/channels";
import { twilioSignature } from "@caplo/adapters/testkit";
import { CANCEL } from "../engine/support/harness.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { ChannelService } from "../../server/src/channels/channelService.ts";
import { memoryContentCache, TwilioWhatsAppApi } from "@caplo/adapters/whatsapp/api";
import type { ContentTemplate } from "@caplo/adapters/whatsapp/format";
import { startFakeTwilio } from "./fakeTwilio.ts";
import { BUSINESS_NUMBER, channelBench, type Bench } from "./support.ts";

const rules = [
  { when: /where is my order/i, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: ORDERS.applied } }] }, { text: "Your order is on its way." }] },
  { when: /cancel/i, replies: [{ text: "Here is what I will do.", toolCalls: [CANCEL(ORDERS.applied)] }] },
  { when: /hello/i, replies: [{ text: "Hello there." }] },
  { when: /^I pick Store 12$/, replies: [{ text: "Store 12 it is." }] },
];

let b: Bench | undefined;
afterEach(async () => {
  await b?.close();
  b = undefined;
});
const texts = (bench: Bench) => bench.received().map((m) => m.text);
const conversationOf = async (bench: Bench) => (await bench.store.listBindings())[0]!.conversationId;
/** An Instagram "hello again" stored straight in the inbox, as a webhook (this node's or another's) would have. */
const storeInstagramHello = (bench: Bench, messageId: string) =>
  bench.store.insertInbound({ platform: "instagram", messageId, event: JSON.stringify({ kind: "message", messageId, from: bench.customer, to: "105000000000001", timestamp: Date.now(), text: "hello again" }), receivedAt: Date.now() });

describe("sending with retry and recorded failures", () => {
  it("WhatsApp: a 503 twice is retried with backoff and the message is sent once", async () => {
    b = await channelBench({ platform: "whatsapp", rules });
    const bench = b;
    bench.twilio!.failNext(2, 503, 20500);
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the reply after retries");
    await bench.service.idle();
    expect(texts(bench).filter((t) => t === "Hello there.")).toHaveLength(1);
    expect(await bench.store.listFailures()).toEqual([]);
  });

  it("Messenger: a permanent refusal is not retried; it is recorded and the team is told", async () => {
    b = await channelBench({ platform: "messenger", rules });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    bench.graph!.failNext(1, 400, 551);
    await bench.h.engine.emit(await conversationOf(bench), { type: "text", id: "m-x", from: "agent", text: "This one is refused." });
    const failure = await bench.waitFor(async () => (await bench.store.listFailures())[0], "the recorded failure");
    expect(failure).toMatchObject({ platform: "messenger", state: "failed", attempts: 1, code: "platform_refused" });
    expect(bench.alerts).toContainEqual(expect.objectContaining({ platform: "messenger", code: "platform_refused" }));
    expect(texts(bench)).not.toContain("This one is refused.");
  });

  it("Instagram: retries give up after the last attempt and the failure is recorded", async () => {
    b = await channelBench({ platform: "instagram", rules, retry: { attempts: 3, baseMs: 2, maxMs: 5 } });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    bench.graph!.failNext(3, 500, 2);
    await bench.h.engine.emit(await conversationOf(bench), { type: "text", id: "m-y", from: "agent", text: "Never arrives." });
    const failure = await bench.waitFor(async () => (await bench.store.listFailures())[0], "the recorded failure");
    expect(failure).toMatchObject({ attempts: 3, code: "platform_unavailable" });
  });
});

describe("the 24-hour window", () => {
  it("WhatsApp: at 24 hours a reply is sent; past it no free-form message is attempted, it is recorded and the team told", async () => {
    const clock = { t: Date.parse("2026-12-01T10:00:00Z") };
    b = await channelBench({ platform: "whatsapp", rules, now: () => clock.t });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    await bench.service.idle();
    const conversationId = await conversationOf(bench);
    clock.t += WHATSAPP_WINDOW_MS;
    await bench.h.engine.emit(conversationId, { type: "text", id: "m-1", from: "agent", text: "Exactly at 24 hours." });
    await bench.waitFor(() => texts(bench).includes("Exactly at 24 hours."), "the message at the boundary");
    const sentBefore = bench.twilio!.sent.length;
    clock.t += 1;
    await bench.h.engine.emit(conversationId, { type: "text", id: "m-2", from: "agent", text: "One millisecond too late." });
    const failure = await bench.waitFor(async () => (await bench.store.listFailures())[0], "the window failure");
    expect(failure).toMatchObject({ code: "outside_window", attempts: 0 });
    expect(failure.message).toContain("63016");
    expect(bench.twilio!.sent.length).toBe(sentBefore);
    expect(bench.alerts).toContainEqual(expect.objectContaining({ code: "outside_window", conversationId }));
  });

  it("WhatsApp: Twilio's own 63016 refusal and a 63016 status callback are recorded as outside the window", async () => {
    b = await channelBench({ platform: "whatsapp", rules });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    await bench.service.idle();
    const sent = bench.twilio!.sent.at(-1)!;
    const status = new URLSearchParams({
      MessageSid: sent.sid,
      AccountSid: bench.twilio!.accountSid,
      From: "whatsapp:+14155238886",
      To: bench.customer,
      MessageStatus: "undelivered",
      ErrorCode: "63016",
      ChannelPrefix: "whatsapp",
    });
    expect((await bench.post(Buffer.from(status.toString()))).status).toBe(200);
    const failure = await bench.waitFor(async () => (await bench.store.listFailures()).find((f) => f.platformId === sent.sid), "the delivery failure");
    expect(failure).toMatchObject({ code: "outside_window" });
    bench.twilio!.closeWindow(bench.customer);
    await bench.h.engine.emit(await conversationOf(bench), { type: "text", id: "m-3", from: "agent", text: "Refused by Twilio." });
    await bench.waitFor(async () => (await bench.store.listFailures()).some((f) => f.code === "outside_window" && f.attempts === 1), "Twilio's refusal");
  });

  it("Messenger: outside 24 hours the team may still reply for 7 days, tagged HUMAN_AGENT; the agent may not", async () => {
    const clock = { t: Date.parse("2026-12-01T10:00:00Z") };
    b = await channelBench({ platform: "messenger", rules, now: () => clock.t });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    const conversationId = await conversationOf(bench);
    clock.t += WHATSAPP_WINDOW_MS + 1;
    await bench.h.engine.takeOver(conversationId, "maja");
    await bench.h.engine.teamMessage(conversationId, "maja", "Maja here, following up.");
    const team = await bench.waitFor(() => bench.graph!.sent.find((s) => s.message?.text === "Maja here, following up."), "the team's reply");
    expect(team).toMatchObject({ messaging_type: "MESSAGE_TAG", tag: "HUMAN_AGENT" });
    await bench.service.idle();
    clock.t += META_HUMAN_AGENT_WINDOW_MS;
    await bench.h.engine.teamMessage(conversationId, "maja", "Too late even for the team.");
    await bench.waitFor(async () => (await bench.store.listFailures()).some((f) => f.code === "outside_window"), "the window failure");
    expect(texts(bench)).not.toContain("Too late even for the team.");
  });
});

describe("Meta conduct", () => {
  it("Messenger: the disclosure opens the conversation and follows the hand-back; HUMAN_AGENT only on the team's replies; typing for progress", async () => {
    b = await channelBench({ platform: "messenger", rules });
    const bench = b;
    await bench.say("Where is my order?");
    await bench.waitFor(() => texts(bench).includes("Your order is on its way."), "the reply");
    const sent = bench.graph!.sent;
    expect(sent[0]!.message?.text).toContain("automated assistant");
    const actions = sent.filter((s) => s.sender_action).map((s) => s.sender_action);
    expect(actions).toEqual(["typing_on", "typing_off"]);
    expect(sent.filter((s) => s.message).every((s) => s.messaging_type === "RESPONSE" && s.tag === undefined)).toBe(true);
    const conversationId = await conversationOf(bench);
    await bench.h.engine.takeOver(conversationId, "maja");
    await bench.h.engine.teamMessage(conversationId, "maja", "Hi, Maja from the team.");
    await bench.h.engine.handBack(conversationId, "maja");
    await bench.waitFor(() => texts(bench).includes("You're back with the assistant."), "the hand-back");
    await bench.service.idle();
    const team = sent.filter((s) => s.tag === "HUMAN_AGENT");
    expect(team.map((s) => s.message?.text)).toEqual(["Hi, Maja from the team."]);
    const afterBack = texts(bench).slice(texts(bench).indexOf("You're back with the assistant."));
    expect(afterBack[1]).toContain("automated assistant");
    expect(texts(bench).filter((t) => t.includes("automated assistant"))).toHaveLength(2);
  });

  it("a tap on another customer's Confirm changes nothing and gets a clear reply", async () => {
    b = await channelBench({ platform: "messenger", rules });
    const bench = b;
    await bench.say("cancel my order");
    const review = await bench.waitFor(() => bench.received().find((m) => m.taps.some((t) => t.title === "Confirm")), "the review");
    const confirm = review.taps.find((t) => t.title === "Confirm")!;
    const other = JSON.parse(bench.body({ payload: confirm.payload, title: "Confirm" }).toString()) as { entry: Array<{ messaging: Array<{ sender: { id: string } }> }> };
    other.entry[0]!.messaging[0]!.sender.id = "7000000000000999";
    expect((await bench.post(Buffer.from(JSON.stringify(other)))).status).toBe(200);
    await bench.waitFor(
      () => bench.graph!.sent.some((s) => s.recipient.id === "7000000000000999" && s.message?.text?.includes("does not belong to this conversation")),
      "the foreign-tap reply",
    );
    await bench.h.engine.idle();
    expect(bench.h.backend.invocations.filter((i) => i.tool === "cancel_order")).toEqual([]);
  });

  it("the subscription handshake echoes hub.challenge over HTTP only for the verify token", async () => {
    b = await channelBench({ platform: "instagram", rules });
    const ok = await b.get("/webhooks/instagram?hub.mode=subscribe&hub.verify_token=verify-token-for-tests&hub.challenge=98765");
    expect(ok).toEqual({ status: 200, body: "98765" });
    expect((await b.get("/webhooks/instagram?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=98765")).status).toBe(403);
  });
});

describe("WhatsApp specifics", () => {
  it("Content API templates are created once and reused by their content hash for the next proposal", async () => {
    b = await channelBench({ platform: "whatsapp", rules });
    const bench = b;
    await bench.say("cancel my order");
    await bench.waitFor(() => bench.received().some((m) => m.taps.some((t) => t.title === "Confirm")), "the first review");
    await bench.tap("Cancel");
    await bench.service.idle();
    await bench.h.engine.idle();
    const created = bench.twilio!.contentCreates;
    await bench.say("cancel it after all");
    await bench.waitFor(() => bench.received().filter((m) => m.taps.some((t) => t.title === "Confirm")).length === 2, "the second review");
    expect(bench.twilio!.contentCreates).toBe(created);
    const [first, second] = bench.received().filter((m) => m.taps.length > 0);
    expect((first!.raw as { contentSid: string }).contentSid).toBe((second!.raw as { contentSid: string }).contentSid);
    expect(first!.taps[0]!.payload).not.toBe(second!.taps[0]!.payload);
  });

  it("a ContentSid belongs to its Twilio account: another account sharing the channel state creates its own template", async () => {
    const [one, two] = await Promise.all([startFakeTwilio(), startFakeTwilio()]);
    try {
      const cache = memoryContentCache();
      const template: ContentTemplate = { type: "twilio/quick-reply", body: "{{1}}", actions: [{ title: "Confirm", id: "{{2}}" }, { title: "Cancel", id: "{{3}}" }] };
      const api = (fake: typeof one) => new TwilioWhatsAppApi({ accountSid: fake.accountSid, authToken: fake.authToken, from: BUSINESS_NUMBER, apiBaseUrl: fake.url }, cache);
      const first = await api(one).contentSid(template);
      expect(await api(one).contentSid(template)).toBe(first);
      const second = await api(two).contentSid(template);
      expect(second).not.toBe(first);
      expect([one.contentCreates, two.contentCreates]).toEqual([1, 1]);
      expect(two.contents.has(second)).toBe(true);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it("verifies against the public URL behind a proxy, with unknown extra parameters signed too", async () => {
    b = await channelBench({ platform: "whatsapp", rules });
    const bench = b;
    const form = new URLSearchParams(bench.body({ text: "hello" }).toString());
    form.set("SomeFutureParameter", "added by Twilio later");
    const raw = Buffer.from(form.toString());
    expect((await bench.post(raw)).status).toBe(200);
    // Signed for the local URL instead of the public one: refused.
    const local = twilioSignature(raw, `${bench.url}/webhooks/whatsapp`, bench.twilio!.authToken);
    form.set("MessageSid", `SM${"f".repeat(32)}`);
    expect((await bench.post(Buffer.from(form.toString()), { signature: local })).status).toBe(403);
  });

  it("progress shows the tool's static label, and an inbound photo gets a clear text-only reply", async () => {
    b = await channelBench({ platform: "whatsapp", rules });
    const bench = b;
    await bench.say("Where is my order?");
    await bench.waitFor(() => texts(bench).includes("Your order is on its way."), "the reply");
    expect(texts(bench)).toContain("Looking up your order…");
    expect((await bench.post(bench.body({ image: "https://api.twilio.com/media/ME1" }))).status).toBe(200);
    await bench.waitFor(() => texts(bench).some((t) => t.includes("I can only read text here")), "the media reply");
  });
});

describe("stale taps", () => {
  it("Instagram: a well-formed reference that was never issued changes nothing and gets a clear reply", async () => {
    b = await channelBench({ platform: "instagram", rules });
    const bench = b;
    await bench.say("cancel my order");
    await bench.waitFor(() => bench.received().some((m) => m.taps.some((t) => t.title === "Confirm")), "the review");
    expect((await bench.post(bench.body({ payload: `c1.${"A".repeat(22)}`, title: "Confirm" }))).status).toBe(200);
    await bench.waitFor(() => texts(bench).includes("That button is no longer valid. Nothing was changed."), "the unknown-button reply");
    await bench.h.engine.idle();
    expect(bench.h.backend.invocations.filter((i) => i.tool === "cancel_order")).toEqual([]);
    const conversationId = await conversationOf(bench);
    const proposalId = (await bench.h.ofType("review", conversationId)).at(-1)!.proposalId;
    expect((await bench.h.store.getWrite(proposalId))?.state).toBe("proposed");
  });

  it("WhatsApp: Confirm tapped twice while the conversation is busy runs the write once; the other tap is told where the request stands, and the team is not alerted", async () => {
    const sizeRule = { when: /size/i, replies: [{ toolCalls: [{ name: "shop__pick_size", args: {} }] }, { text: "{{tool}}" }] };
    b = await channelBench({ platform: "whatsapp", rules: [...rules, sizeRule] });
    const bench = b;
    await bench.say("cancel my order");
    await bench.waitFor(() => bench.received().some((m) => m.taps.some((t) => t.title === "Confirm")), "the review");
    // A read's question holds the conversation's turn: both taps are decided (the proposal waits) and wait for the engine.
    await bench.say("which size?");
    await bench.waitFor(() => bench.received().some((m) => m.taps.some((t) => t.title === "L")), "the question");
    // Both taps are recorded (the webhook answered) and wait behind the read; the answer then ends the read.
    // (Waiting for the service to go idle here would wait for the question to expire: the read's clock is
    // stopped while the customer answers.)
    await bench.tap("Confirm");
    await bench.tap("Confirm");
    await bench.tap("L");
    const stale = /^That request (is already running|was already done)\. Nothing was changed\.$/;
    await bench.waitFor(() => texts(bench).some((t) => stale.test(t)), "the second tap's reply");
    await bench.service.idle();
    await bench.h.engine.idle();
    expect(bench.h.backend.invocations.filter((i) => i.tool === "cancel_order")).toHaveLength(1);
    expect(texts(bench).filter((t) => stale.test(t))).toHaveLength(1);
    expect(bench.alerts.filter((alert) => alert.code === "inbound_refused")).toEqual([]);
    const proposalId = (await bench.h.ofType("review", await conversationOf(bench))).at(-1)!.proposalId;
    expect((await bench.h.store.getWrite(proposalId))?.state).toBe("applied");
    expect(bench.violations()).toEqual([]);
  });

  it("WhatsApp: a Confirm tapped after the proposal expired runs nothing and the customer is told", async () => {
    b = await channelBench({ platform: "whatsapp", rules });
    const bench = b;
    await bench.say("cancel my order");
    await bench.waitFor(() => bench.received().some((m) => m.taps.some((t) => t.title === "Confirm")), "the review");
    await bench.service.idle();
    bench.h.clock.now += 2 * 60 * 60 * 1000;
    await bench.tap("Confirm");
    await bench.waitFor(() => texts(bench).some((t) => t.includes("That request has expired; please ask again. Nothing was changed.")), "the expiry reply");
    await bench.h.engine.idle();
    expect(bench.h.backend.invocations.filter((i) => i.tool === "cancel_order")).toEqual([]);
    expect(bench.alerts).toContainEqual(expect.objectContaining({ code: "inbound_refused" }));
  });
});

describe("the store failing while processing", () => {
  it("a stored event is processed after the store comes back, without waiting for another webhook, and the process carries on", async () => {
    let failures = 2;
    b = await channelBench({
      platform: "messenger",
      rules,
      storeFor: (store) =>
        new Proxy(store, {
          get(target, name, receiver) {
            if (name === "claimInbound") {
              return async (limit: number) => {
                if (failures-- > 0) throw new Error("SQLITE_BUSY: database is locked");
                return target.claimInbound(limit);
              };
            }
            const value = Reflect.get(target, name, receiver);
            return typeof value === "function" ? value.bind(target) : value;
          },
        }),
    });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the reply after the store came back");
    expect(bench.logs.filter((l) => l.includes("processing stored events failed (SQLITE_BUSY: database is locked)"))).toHaveLength(2);
    // The pause doubles (the bench's pauses are 10 ms doubling to 40 ms; the server's 500 ms to 30 s).
    expect(bench.logs.filter((l) => l.includes("trying again in")).map((l) => /in (\d+) ms/.exec(l)![1])).toEqual(["10", "20"]);
    expect((await bench.store.listInbound()).map((r) => r.state)).toEqual(["done"]);
  });
});

describe("the store failing while sending", () => {
  it("a reply whose sent record fails to store is recorded on the next attempt, sent once; one failing before the send is sent once too", async () => {
    const failNext = { recordOutbox: 0, findBinding: 0 };
    b = await channelBench({
      platform: "messenger",
      rules,
      storeFor: (store) =>
        new Proxy(store, {
          get(target, name, receiver) {
            const value = Reflect.get(target, name, receiver);
            if (typeof value !== "function") return value;
            return async (...args: unknown[]) => {
              if ((name === "recordOutbox" || name === "findBinding") && failNext[name] > 0) {
                failNext[name]--;
                throw new Error(`${name}: connection lost`);
              }
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        }),
    });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    await bench.service.idle();
    const conversationId = await conversationOf(bench);
    failNext.recordOutbox = 1;
    await bench.h.engine.emit(conversationId, { type: "text", id: "m-rec", from: "agent", text: "Recorded late." });
    await bench.waitFor(() => bench.logs.some((l) => l.includes("recordOutbox: connection lost")), "the retried event");
    await bench.service.idle();
    failNext.findBinding = 1;
    await bench.h.engine.emit(conversationId, { type: "text", id: "m-find", from: "agent", text: "Found late." });
    await bench.waitFor(() => texts(bench).includes("Found late."), "the second message");
    await bench.service.idle();
    expect(texts(bench).filter((t) => t === "Recorded late.")).toHaveLength(1);
    expect(texts(bench).filter((t) => t === "Found late.")).toHaveLength(1);
    expect(await bench.store.listFailures()).toEqual([]);
    expect(bench.alerts.filter((a) => a.code === "send_failed")).toEqual([]);
  });
});

describe("restart", () => {
  it("a new service on the same store resumes: nothing sent twice, later events delivered, crashed rows processed", async () => {
    b = await channelBench({ platform: "instagram", rules });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    await bench.service.idle();
    bench.service.close();
    const sentBefore = bench.graph!.sent.length;
    // A row left in processing by a crash.
    await storeInstagramHello(bench, "m_crashed");
    await bench.store.claimInbound(10);
    const restarted = new ChannelService({ store: bench.store, port: bench.port, adapters: [bench.adapter], retry: { attempts: 2, baseMs: 1, maxMs: 2 } });
    try {
      await restarted.resume(await bench.store.listBindings());
      await bench.waitFor(() => texts(bench).filter((t) => t === "Hello there.").length === 2, "the reply to the crashed row");
      await restarted.idle();
      await bench.h.engine.idle();
      expect(texts(bench).filter((t) => t === "Hello there.")).toHaveLength(2);
      expect(bench.graph!.sent.slice(sentBefore).filter((s) => s.message?.text?.includes("automated assistant"))).toEqual([]);
      await bench.h.engine.emit(await conversationOf(bench), { type: "text", id: "m-after", from: "agent", text: "After the restart." });
      await bench.waitFor(() => texts(bench).includes("After the restart."), "a later event");
      expect(texts(bench).filter((t) => t === "After the restart.")).toHaveLength(1);
    } finally {
      restarted.close();
    }
  });
});

describe("sweeping", () => {
  it("an event stored without a webhook to start it (a lost node's, a stopped node's) is processed by the next sweep, once", async () => {
    b = await channelBench({ platform: "instagram", rules });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    await bench.service.idle();
    // Stored as another node would have, with nothing to tell this service.
    await storeInstagramHello(bench, "m_unnoticed");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(texts(bench).filter((t) => t === "Hello there.")).toHaveLength(1); // nothing looks for it yet
    bench.service.startSweeping(20);
    await bench.waitFor(() => texts(bench).filter((t) => t === "Hello there.").length === 2, "the reply to the unnoticed event");
    await new Promise((resolve) => setTimeout(resolve, 150)); // several more sweeps
    await bench.service.idle();
    expect(texts(bench).filter((t) => t === "Hello there.")).toHaveLength(2);
    expect((await bench.store.listInbound()).find((row) => row.messageId === "m_unnoticed")?.state).toBe("done");
  });
});

describe("numbered replies", () => {
  // 14 cards with a reply action: more than WhatsApp's list picker (10) and Meta's quick replies (13) hold.
  const stores = Array.from({ length: 14 }, (_, i) => ({ name: `Store ${i + 1}`, city: "Ljubljana" }));
  const cards = {
    type: "result" as const,
    id: "r-stores",
    callId: "c-stores",
    layout: "cards" as const,
    title: "Stores near you",
    columns: [
      { key: "name", label: "Name", display: "plain" as const, role: "title" as const },
      { key: "city", label: "City", display: "plain" as const },
    ],
    items: stores,
    actions: [{ kind: "reply" as const, label: "Pick", template: "I pick {name}" }],
  };
  for (const platform of ["whatsapp", "messenger"] as const) {
    it(`${platform}: reply actions past the list's limit come as numbered text; a typed number sends that reply, once`, async () => {
      b = await channelBench({ platform, rules });
      const bench = b;
      await bench.say("hello");
      await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
      const conversationId = await conversationOf(bench);
      await bench.h.engine.emit(conversationId, cards);
      await bench.waitFor(() => texts(bench).some((t) => t.includes("14. Store 14") && t.includes("Reply with a number.")), "the numbered replies");
      await bench.say("12");
      await bench.waitFor(() => texts(bench).includes("Store 12 it is."), "the reply chosen by number");
      // The numbers were answered: a later "3" is an ordinary message, not Store 3.
      await bench.say("3");
      await bench.waitFor(() => texts(bench).includes("I can help with orders."), "the model's answer to a plain 3");
      await bench.service.idle();
      await bench.h.engine.idle();
      const customer = (await bench.h.events(conversationId)).flatMap((e) => (e.type === "text" && e.from === "customer" ? [e.text] : []));
      expect(customer).toEqual(["hello", "I pick Store 12", "3"]);
      expect(bench.violations()).toEqual([]);
    });
  }
});
