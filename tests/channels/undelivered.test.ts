// A reply that cannot reach the customer (outside the 24-hour window, Twilio 63016, Meta's outside-window
// error, a permanent refusal) is written into the conversation's history for the team — never sent — the
// model is told, and the team's follow-up list (GET /v1/team/follow-ups) names it.
import { afterEach, describe, expect, it } from "vitest";
import { WHATSAPP_WINDOW_MS } from "@caplo/shared/channels";
import { teamMember } from "../../server/src/gateway/teamMembers.ts";
import { channelBench, mountedMessenger, type Bench } from "./support.ts";

const rules = [{ when: /hello/i, replies: [{ text: "Hello there." }] }];

let b: Bench | undefined;
afterEach(async () => {
  await b?.close();
  b = undefined;
});
const texts = (bench: Bench) => bench.received().map((m) => m.text);
const conversationOf = async (bench: Bench) => (await bench.store.listBindings())[0]!.conversationId;
const notes = async (bench: Bench, conversationId: string) =>
  (await bench.h.events(conversationId)).filter((e) => e.type === "text" && e.from === "system" && e.id.startsWith("undelivered_")).map((e) => (e.type === "text" ? e.text : ""));

describe("undelivered replies in the conversation's history", () => {
  it("WhatsApp: a reply past the 24-hour window is not attempted; the history records it with 63016 and the message, the customer gets nothing, the model is told", async () => {
    const clock = { t: Date.parse("2026-12-01T10:00:00Z") };
    b = await channelBench({ platform: "whatsapp", rules, now: () => clock.t });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    await bench.service.idle();
    const conversationId = await conversationOf(bench);
    const sentBefore = bench.twilio!.sent.length;
    clock.t += WHATSAPP_WINDOW_MS + 1;
    await bench.h.engine.emit(conversationId, { type: "text", id: "m-late", from: "agent", text: "Your refund went out." });
    const [note] = await bench.waitFor(async () => {
      const found = await notes(bench, conversationId);
      return found.length > 0 && found;
    }, "the history note");
    expect(note).toContain("63016");
    expect(note).toContain('"Your refund went out."');
    await bench.service.idle();
    await bench.h.engine.idle();
    // The note itself is never sent to the customer, and it is recorded once.
    expect(bench.twilio!.sent.length).toBe(sentBefore);
    expect(await notes(bench, conversationId)).toHaveLength(1);
    expect(await bench.h.modelNotes(conversationId)).toContainEqual(expect.stringContaining("The customer did not receive a message"));
  });

  it("Messenger: Meta's outside-window refusal (code 10, subcode 2018278) is recorded in the history, not retried, not resent", async () => {
    b = await channelBench({ platform: "messenger", rules });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    await bench.service.idle();
    const conversationId = await conversationOf(bench);
    bench.graph!.failNext(1, 400, 10, 2018278);
    await bench.h.engine.emit(conversationId, { type: "text", id: "m-x", from: "agent", text: "Refused by Meta." });
    const [note] = await bench.waitFor(async () => {
      const found = await notes(bench, conversationId);
      return found.length > 0 && found;
    }, "the history note");
    expect(note).toContain("outside the messaging window");
    expect(note).toContain('"Refused by Meta."');
    expect(await bench.store.listFailures()).toEqual([expect.objectContaining({ code: "outside_window", attempts: 1 })]);
    await bench.service.idle();
    expect(texts(bench)).not.toContain("Refused by Meta.");
    expect(bench.graph!.sent.filter((s) => s.message?.text?.includes("Not delivered"))).toEqual([]);
  });

  it("WhatsApp: a 63016 status callback for a sent message is recorded in the history too", async () => {
    b = await channelBench({ platform: "whatsapp", rules });
    const bench = b;
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the first reply");
    await bench.service.idle();
    const sent = bench.twilio!.sent.at(-1)!;
    const status = new URLSearchParams({ MessageSid: sent.sid, AccountSid: bench.twilio!.accountSid, From: "whatsapp:+14155238886", To: bench.customer, MessageStatus: "undelivered", ErrorCode: "63016" });
    expect((await bench.post(Buffer.from(status.toString()))).status).toBe(200);
    const conversationId = await conversationOf(bench);
    const [note] = await bench.waitFor(async () => {
      const found = await notes(bench, conversationId);
      return found.length > 0 && found;
    }, "the history note");
    expect(note).toContain("63016");
  });
});

describe("the team is told", () => {
  it("an undelivered reply is in the team API's follow-up list and in the conversation's events, behind the team token", async () => {
    const m = await mountedMessenger({ rules, gateway: { teamMembers: [teamMember("ana", "team-token-for-tests")] }, alerts: { alert: () => {} } });
    const { h, graph, mounted, base } = m;
    try {
      expect((await m.say("m_team_1", "hello")).status).toBe(200);
      await m.sent("Hello there.");
      await mounted.service.idle();
      const conversationId = (await mounted.store.listBindings())[0]!.conversationId;
      graph.failNext(1, 400, 10, 2018278);
      await h.engine.emit(conversationId, { type: "text", id: "m-late", from: "agent", text: "Your parcel is at the depot." });
      const team = { authorization: "Bearer team-token-for-tests" };
      let body: { undelivered: Array<{ conversationId: string; channel: string; code: string; message: string; at: string }> } = { undelivered: [] };
      for (let i = 0; i < 1000 && body.undelivered.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 10));
        body = (await (await fetch(`${base}/v1/team/follow-ups`, { headers: team })).json()) as typeof body;
      }
      expect(body.undelivered).toEqual([expect.objectContaining({ conversationId, channel: "messenger", code: "outside_window", at: expect.stringMatching(/^\d{4}-/) })]);
      expect((await fetch(`${base}/v1/team/follow-ups`)).status).toBe(401);
      await mounted.service.idle();
      await h.engine.idle();
      const events = (await (await fetch(`${base}/v1/team/conversations/${conversationId}/events`, { headers: team })).json()) as { events: Array<{ message: { type: string; from?: string; text?: string } }> };
      expect(events.events.map((e) => e.message)).toContainEqual(expect.objectContaining({ type: "text", from: "system", text: expect.stringContaining("Your parcel is at the depot.") }));
    } finally {
      await m.close();
    }
  });
});
