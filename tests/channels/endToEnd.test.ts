// End to end per platform, through signed webhooks on a real HTTP server, the channel glue, the real engine
// (SQLite, the shop's MCP tools, the scripted model) and the real twilio client or Graph requests to a fake
// platform that checks every limit: reads, proposals, the tap-only write policy, questions, duplicates.
import { afterEach, describe, expect, it } from "vitest";
import { CANCEL } from "../engine/support/harness.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { channelBench, type Bench } from "./support.ts";

const rules = [
  { when: /where is my order/i, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: ORDERS.applied } }] }, { text: "Your order is on its way." }] },
  { when: /cancel/i, replies: [{ text: "Here is what I will do.", toolCalls: [CANCEL(ORDERS.applied)] }] },
  // Said only if a typed "yes" reaches the model: while a proposal waits, the channel answers it instead.
  { when: /^(yes|confirm)/i, replies: [{ text: "The model heard a typed yes." }] },
  { when: /size/i, replies: [{ toolCalls: [{ name: "shop__pick_size", args: {} }] }, { text: "{{tool}}" }] },
  { whenNote: /outcome: applied/, replies: [{ text: "Your order is cancelled." }] },
  { whenNote: /declined/, replies: [{ text: "OK, I left it as it is." }] },
];

let b: Bench | undefined;
afterEach(async () => {
  await b?.close();
  b = undefined;
});

const texts = (bench: Bench) => bench.received().map((m) => m.text);
const cancelInvocations = (bench: Bench) => bench.h.backend.invocations.filter((i) => i.tool === "cancel_order");

for (const platform of ["whatsapp", "messenger", "instagram"] as const) {
  describe(`${platform} end to end through the real engine`, () => {
    it("a message gets a read with its result as text; a proposal gets Confirm/Cancel; typed 'yes' runs nothing; the Confirm tap runs it once", async () => {
      b = await channelBench({ platform, rules });
      const bench = b;
      await bench.say("Where is my order?");
      await bench.waitFor(() => texts(bench).some((t) => t.includes("Your order is on its way.")), "the read's reply");
      // The scripted model streams the reply word by word (a delta per word, as the widget is sent them); a
      // channel sends it whole, once: no message is a part of it.
      const reply = "Your order is on its way.";
      expect(texts(bench).filter((t) => t.trim() !== "" && reply.startsWith(t.trim()) && t.trim() !== reply)).toEqual([]);
      expect(texts(bench).filter((t) => t.includes(reply))).toHaveLength(1);
      const all = texts(bench).join("\n");
      expect(all).toContain("Your order");
      expect(all).toContain(`Order: ${ORDERS.applied}`);
      if (platform !== "whatsapp") expect(all).toContain("automated assistant");
      await bench.say("Please cancel my order");
      const review = await bench.waitFor(() => bench.received().find((m) => m.taps.some((t) => t.title === "Confirm")), "the review");
      expect(review.taps.map((t) => t.title)).toEqual(["Confirm", "Cancel"]);
      expect(review.text).toContain("Cancel order");
      // The review's fields are shown (on WhatsApp as text just before the buttons: a body variable is one line).
      const got = bench.received();
      const shown = platform === "whatsapp" ? got[got.findIndex((m) => m.raw === review.raw) - 1]!.text : review.text;
      expect(shown).toContain("Cancel order");
      expect(shown).toContain(`Order: ${ORDERS.applied}`);
      expect(shown).toContain("••••1234");
      expect(JSON.stringify(review.raw)).not.toContain("4111111111111234");
      // Each button carries 128 random bits and nothing else: not the proposal's id, not the decision.
      const reviewed = (await bench.h.ofType("review", (await bench.store.listBindings())[0]!.conversationId)).at(-1)!;
      for (const tap of review.taps) {
        expect(tap.payload).toMatch(/^c1\.[A-Za-z0-9_-]{22}$/);
        expect(tap.payload).not.toContain(reviewed.proposalId);
      }
      expect(new Set(review.taps.map((t) => t.payload)).size).toBe(2);
      await bench.say("yes");
      await bench.say("Confirm");
      await bench.waitFor(() => texts(bench).filter((t) => t.includes("To go ahead, tap Confirm on the request above")).length === 2, "the channel's answer to a typed yes");
      await bench.service.idle();
      await bench.h.engine.idle();
      expect(cancelInvocations(bench)).toEqual([]);
      const conversationId = (await bench.store.listBindings())[0]!.conversationId;
      const customerWords = (await bench.h.events(conversationId)).flatMap((e) => (e.type === "text" && e.from === "customer" ? [e.text] : []));
      expect(customerWords).not.toContain("yes");
      expect(texts(bench)).not.toContain("The model heard a typed yes.");
      await bench.tap("Confirm");
      await bench.waitFor(() => texts(bench).some((t) => t.includes("Your order is cancelled.")), "the outcome");
      expect(cancelInvocations(bench)).toHaveLength(1);
      // With nothing waiting any more, a typed "yes" is an ordinary message to the agent.
      await bench.say("yes");
      await bench.waitFor(() => texts(bench).includes("The model heard a typed yes."), "the model's answer once nothing waits");
      // The same Confirm tapped again (a second, distinct tap) changes nothing and says so.
      await bench.tap("Confirm");
      await bench.waitFor(() => texts(bench).some((t) => /That request (was already done|is already running)\. Nothing was changed\./.test(t)), "the stale-tap reply");
      expect(cancelInvocations(bench)).toHaveLength(1);
      expect(bench.violations()).toEqual([]);
    });

    it("a Cancel tap declines the proposal and nothing runs", async () => {
      b = await channelBench({ platform, rules });
      const bench = b;
      await bench.say("cancel my order please");
      await bench.waitFor(() => bench.received().some((m) => m.taps.some((t) => t.title === "Cancel")), "the review");
      await bench.tap("Cancel");
      await bench.waitFor(() => texts(bench).some((t) => t.includes("OK, I left it as it is.")), "the decline");
      expect(cancelInvocations(bench)).toEqual([]);
      const proposalId = (await bench.h.ofType("review", (await bench.store.listBindings())[0]!.conversationId)).at(-1)!.proposalId;
      expect((await bench.h.store.getWrite(proposalId))?.state).toBe("declined");
    });

    it("a questions elicitation is answered by a tap, and again by a typed number", async () => {
      b = await channelBench({ platform, rules });
      const bench = b;
      await bench.say("which size should I take?");
      await bench.waitFor(() => bench.received().some((m) => m.taps.some((t) => t.title === "L")), "the question");
      expect(bench.received().at(-1)!.taps.map((t) => t.title)).toEqual(["S", "M", "L"]);
      await bench.tap("L");
      await bench.waitFor(() => texts(bench).some((t) => t === "size L"), "the tool's answer");
      await bench.say("and which size for my friend?");
      await bench.waitFor(() => bench.received().filter((m) => m.taps.some((t) => t.title === "L")).length === 2, "the second question");
      await bench.say("2");
      await bench.waitFor(() => texts(bench).some((t) => t === "size M"), "the typed answer");
      expect(bench.violations()).toEqual([]);
    });

    it("a replayed webhook and two simultaneous copies are processed once", async () => {
      b = await channelBench({ platform, rules });
      const bench = b;
      const body = bench.body({ text: "Where is my order?" });
      const [first, second] = await Promise.all([bench.post(body), bench.post(body)]);
      expect([first.status, second.status]).toEqual([200, 200]);
      await bench.waitFor(() => texts(bench).some((t) => t.includes("Your order is on its way.")), "the reply");
      const replay = await bench.post(body);
      expect(replay.status).toBe(200);
      await bench.service.idle();
      await bench.h.engine.idle();
      expect(bench.h.backend.invocations.filter((i) => i.tool === "get_order")).toHaveLength(1);
      expect(await bench.store.listInbound()).toHaveLength(1);
      expect(texts(bench).filter((t) => t.includes("Your order is on its way."))).toHaveLength(1);
    });

    it("a forged or missing signature is refused with 403 and touches nothing", async () => {
      b = await channelBench({ platform, rules });
      const bench = b;
      const body = bench.body({ text: "Where is my order?" });
      const forged = platform === "whatsapp" ? "AAAAAAAAAAAAAAAAAAAAAAAAAAA=" : `sha256=${"ab".repeat(32)}`;
      expect((await bench.post(body, { signature: forged })).status).toBe(403);
      expect((await bench.post(body, { signature: null })).status).toBe(403);
      expect(await bench.store.listInbound()).toEqual([]);
      expect(await bench.store.listBindings()).toEqual([]);
      const bad = platform === "whatsapp" ? Buffer.from("Body=hi") : Buffer.from("{not json");
      expect((await bench.post(bad)).status).toBe(400);
      expect(await bench.store.listInbound()).toEqual([]);
    });
  });
}
