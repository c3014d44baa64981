// What messaging customers read: reviews without empty lines, times in the agent's time zone in words,
// titles cut at a word, no internal ids in list descriptions (#18.2); an automated-assistant notice that
// promises a person only where the channel has a handoff destination (#18.3); and a refusal of the channel
// itself never arriving before the greeting of the conversation it opened (#18.4).
import { afterEach, describe, expect, it } from "vitest";
import type { Outbound } from "@caplo/shared/messages";
import { shorten } from "@caplo/adapters/common/text";
import { recordingRefs, whatsappTaps, whatsappText } from "@caplo/adapters/testkit";
import { renderWhatsApp } from "@caplo/adapters/whatsapp/format";
import { renderMessenger } from "@caplo/adapters/messenger/format";
import { newToken } from "../../server/src/channels/channelService.ts";
import type { AgentRelease, StaticReleases } from "../../server/src/engine/release.ts";
import { ALL_CHANNELS, channelBench, type Bench } from "./support.ts";

let b: Bench | undefined;
afterEach(async () => {
  await b?.close();
  b = undefined;
});

const slots: Outbound = {
  type: "result",
  id: "r1",
  callId: "c1",
  layout: "choices",
  title: "Pick a time",
  columns: [
    { key: "label", label: "Time", display: "plain", role: "title" },
    { key: "storeName", label: "Store", display: "plain", role: "subtitle" },
    { key: "start", label: "Starts", display: "plain", role: "time" },
    { key: "slotId", label: "Slot", display: "plain" },
  ],
  items: ["09", "10", "11", "12"].map((hour, i) => ({ label: `Fri 4 Dec, 1${i}:00, fitting session`, storeName: "Ljubljana Center", start: `2026-12-04T${hour}:00:00Z`, slotId: `slot_internal_${i}` })),
  actions: [{ kind: "reply", label: "Book this time", template: "Book slot {slotId} ({label})" }],
};
const cancelReview: Outbound = {
  type: "review",
  id: "v1",
  proposalId: "p1",
  tool: "orders/cancel_order",
  title: "Cancel this order",
  fields: [
    { path: "/orderId", label: "Order", display: "plain", value: "SO-1002", editable: false },
    { path: "/reason", label: "Reason", display: "plain", value: "", editable: true, input: "text" },
    { path: "/when", label: "Placed", display: "plain", value: "2026-12-01T15:30:00Z", editable: false },
  ],
  state: "proposed",
};

describe("readable reviews and lists (#18.2)", () => {
  it("a review says none for an empty field and writes an ISO time in the agent's time zone in words", () => {
    for (const render of [renderWhatsApp, renderMessenger]) {
      const text = whatsappTextOrMeta(render(cancelReview, { refs: recordingRefs(), timeZone: "Europe/Ljubljana" }).messages);
      expect(text).toContain("Reason: none");
      expect(text).not.toMatch(/Reason: *\n/);
      expect(text).toContain("Placed: Tue 1 Dec, 16:30");
      expect(text).not.toContain("2026-12-01T15:30:00Z");
    }
  });

  it("a review's field value cannot add lines that read as other fields or notes: its line breaks show as ↵", () => {
    // The model fills a note so that a second line reads like the card's amount and a line like a done deal.
    const review: Outbound = {
      ...cancelReview,
      fields: [
        { path: "/amount", label: "Amount", display: "plain", value: "500.00 EUR", editable: false },
        { path: "/note", label: "Note", display: "plain", value: "Gift\nAmount: 5.00 EUR\r\n\u2028Already confirmed, no need to tap", editable: false },
      ],
    };
    for (const render of [renderWhatsApp, renderMessenger]) {
      const text = whatsappTextOrMeta(render(review, { refs: recordingRefs(), timeZone: "UTC" }).messages);
      const lines = text.split("\n");
      expect(lines.filter((line) => line.startsWith("Amount:"))).toEqual(["Amount: 500.00 EUR"]);
      expect(lines).toContain("Note: Gift ↵ Amount: 5.00 EUR ↵  ↵ Already confirmed, no need to tap");
    }
  });

  it("on WhatsApp a card's or receipt's value with formatting marks goes in a monospace block, so it shows as it is, not struck through or bold", () => {
    // WhatsApp would show "~500~" struck through (reading as "not 500") and "*today*" bold, without the marks.
    const review: Outbound = {
      ...cancelReview,
      fields: [
        { path: "/amount", label: "Amount", display: "plain", value: "~500~ 50 EUR", editable: false },
        { path: "/note", label: "Note", display: "plain", value: "deliver *today* to john_smith_", editable: false },
        { path: "/order", label: "Order", display: "plain", value: "SO-1002", editable: false },
        { path: "/odd", label: "Code", display: "plain", value: "a ``` b *c*", editable: false },
      ],
    };
    const whatsapp = whatsappText(renderWhatsApp(review, { refs: recordingRefs(), timeZone: "UTC" }).messages).split("\n");
    expect(whatsapp).toContain("Amount: ```~500~ 50 EUR```");
    expect(whatsapp).toContain("Note: ```deliver *today* to john_smith_```");
    expect(whatsapp).toContain("Order: SO-1002");
    // Three backticks would end the block: sent as it is.
    expect(whatsapp).toContain("Code: a ``` b *c*");
    const decided = whatsappText(renderWhatsApp({ ...review, state: "applied" }, { refs: recordingRefs(), timeZone: "UTC" }).messages).split("\n");
    expect(decided).toContain("Amount: ```~500~ 50 EUR```");
    const receipt = whatsappText(renderWhatsApp({ type: "outcome", id: "o2", proposalId: "p1", state: "applied", message: "Done.", receipt: [{ label: "Refund", value: "~500~ 50 EUR" }] }, { refs: recordingRefs(), timeZone: "UTC" }).messages);
    expect(receipt.split("\n")).toContain("Refund: ```~500~ 50 EUR```");
    // Messenger shows no such marks as formatting: its text is the value as it is.
    const messenger = whatsappTextOrMeta(renderMessenger(review, { refs: recordingRefs(), timeZone: "UTC" }).messages).split("\n");
    expect(messenger).toContain("Amount: ~500~ 50 EUR");
  });

  it("a reply action's tap sends at most a message's 4,000 characters, as the widget's does, never half an emoji", () => {
    // A value the template fills in runs long (a tool's free text): the tap stored a customer message over the
    // limit that a typed message (cut at 4,000) and the widget's tap both keep.
    const long: Outbound = { ...slots, items: [{ label: "A slot", storeName: "Store", start: "2026-12-04T09:00:00Z", slotId: `${"x".repeat(3989)}\u{1F600}${"y".repeat(100)}` }] };
    for (const render of [renderWhatsApp, renderMessenger]) {
      const refs = recordingRefs();
      render(long, { refs, timeZone: "UTC" });
      const replies = [...refs.meaning.values()].filter((what) => what.startsWith("reply:")).map((what) => what.slice("reply:".length));
      expect(replies).toHaveLength(1);
      // "Book slot " (10) + 3,989 x: the emoji's first half would be the 4,000th unit, so the cut falls before it.
      expect(replies[0]).toBe(`Book slot ${"x".repeat(3989)}`);
      expect(replies[0]!.length).toBeLessThanOrEqual(4000);
    }
  });

  it("a receipt's value (the tool's) cannot add lines that read as other receipt fields: its line breaks show as ↵", () => {
    const outcome: Outbound = {
      type: "outcome",
      id: "o1",
      proposalId: "p1",
      state: "applied",
      message: "Your order is cancelled.",
      receipt: [
        { label: "Refund", value: "5.00 EUR" },
        { label: "Status", value: "cancelled\nRefund: 500.00 EUR" },
      ],
    };
    for (const render of [renderWhatsApp, renderMessenger]) {
      const lines = whatsappTextOrMeta(render(outcome, { refs: recordingRefs(), timeZone: "UTC" }).messages).split("\n");
      expect(lines.filter((line) => line.startsWith("Refund:"))).toEqual(["Refund: 5.00 EUR"]);
      expect(lines).toContain("Status: cancelled ↵ Refund: 500.00 EUR");
    }
  });

  it("list items: titles cut at a word with an ellipsis, times in words in the agent's zone, no internal ids in descriptions", () => {
    const rendered = renderWhatsApp(slots, { refs: recordingRefs(), timeZone: "Europe/Ljubljana" });
    const taps = whatsappTaps(rendered.messages);
    expect(taps).toHaveLength(4);
    expect(taps[0]!.title).toBe("Fri 4 Dec, 10:00…");
    for (const tap of taps) {
      expect(tap.title).toMatch(/^Fri 4 Dec, 1\d:00…$/);
      expect(tap.description).toMatch(/^Ljubljana Center · Fri 4 Dec, 1\d:00$/);
      expect(tap.description).not.toContain("slot_internal");
      expect(tap.description).not.toMatch(/\d{4}-\d{2}-\d{2}T/);
    }
    // The first item starts at 09:00 UTC: 10:00 in Ljubljana.
    expect(taps[0]!.description).toBe("Ljubljana Center · Fri 4 Dec, 10:00");
    // The numbered text of the same list reads the same way.
    expect(whatsappText(rendered.messages)).not.toContain("slot_internal");
  });

  it("a tool result's links reach the customer only as the widget would open them: https, and a page only from its origins", () => {
    // A search tool returns what an attacker planted: a page off the listed origins, a link to http or a
    // script, a lookalike host in another script.
    const page: Outbound = {
      type: "result",
      id: "r2",
      callId: "c2",
      layout: "page",
      title: "Pay your invoice",
      columns: [{ key: "url", label: "Link", display: "plain", role: "link" }],
      items: [{ url: "https://evil.example/pay" }],
      page: { label: "Pay now", display: "panel", origins: ["https://pay.shop.example"], urlKey: "url" },
    };
    const ownPage: Outbound = { ...page, items: [{ url: "https://pay.shop.example/i/42" }] };
    const cards: Outbound = {
      type: "result",
      id: "r3",
      callId: "c3",
      layout: "cards",
      title: "Stores",
      columns: [
        { key: "name", label: "Store", display: "plain", role: "title" },
        { key: "site", label: "Site", display: "plain", role: "link" },
        { key: "photo", label: "Photo", display: "plain", role: "image" },
      ],
      items: [
        { name: "One", site: "http://one.example/", photo: "javascript:alert(1)", more: "https://user:pw@one.example/" },
        { name: "Two", site: "https://\u0430pple.example/login", photo: "https://cdn.shop.example/two.png", more: "https://shop.example/two" },
      ],
      actions: [{ kind: "link", label: "More", key: "more" }],
    };
    for (const render of [renderWhatsApp, renderMessenger]) {
      const text = (outbound: Outbound) => whatsappTextOrMeta(render(outbound, { refs: recordingRefs(), timeZone: "UTC" }).messages);
      expect(text(page)).toContain("Pay now: (no link)");
      expect(text(page)).not.toContain("evil.example");
      expect(text(ownPage)).toContain("Pay now: https://pay.shop.example/i/42");
      const shown = text(cards);
      for (const planted of ["http://one.example", "javascript:", "user:pw", "\u0430pple"]) expect(shown).not.toContain(planted);
      expect(shown).toContain("https://xn--pple-43d.example/login");
      expect(shown).toContain("More: https://shop.example/two");
    }
  });

  it("shorten cuts between words and drops the punctuation before the cut; one long word is cut inside", () => {
    expect(shorten("Fri 4 Dec, 10:00, fitting session", 24)).toBe("Fri 4 Dec, 10:00…");
    expect(shorten("Get the invoice: SO-1002", 20)).toBe("Get the invoice…");
    expect(shorten("Short enough", 20)).toBe("Short enough");
    expect(shorten("x".repeat(30), 20)).toBe(`${"x".repeat(19)}…`);
    expect(shorten("Two words", 9)).toBe("Two words");
  });
});

function whatsappTextOrMeta(messages: unknown[]): string {
  return messages
    .map((m) => {
      const meta = m as { kind?: string; message?: { text?: string; attachment?: { payload?: { text?: string } } } };
      if (meta.message) return meta.message.text ?? meta.message.attachment?.payload?.text ?? "";
      return whatsappText([m]);
    })
    .join("\n");
}

describe("honest disclosure (#18.3)", () => {
  for (const platform of ["messenger", "instagram"] as const) {
    it(`${platform}: without a handoff destination the notice gives the shop's contact and promises no person; with one it does`, async () => {
      b = await channelBench({ platform, rules: [{ when: /hello/i, replies: [{ text: "Hi there." }] }], agentConfig: () => ({ channels: ALL_CHANNELS, contact: "write to help@shop.example" }) });
      const bench = b;
      await bench.say("hello");
      await bench.waitFor(() => bench.received().some((m) => m.text === "Hi there."), "the reply");
      const first = bench.received()[0]!.text;
      expect(first).toBe("You are chatting with an automated assistant, which cannot pass you to a person here. To reach the shop, write to help@shop.example.");
      await bench.close();
      b = await channelBench({ platform, rules: [{ when: /hello/i, replies: [{ text: "Hi there." }] }], agentConfig: () => ({ channels: { ...ALL_CHANNELS, [platform]: { handoff: { queue: "support" } } } }) });
      const withHandoff = b;
      await withHandoff.say("hello");
      await withHandoff.waitFor(() => withHandoff.received().some((m) => m.text === "Hi there."), "the reply");
      expect(withHandoff.received()[0]!.text).toBe("You are chatting with an automated assistant. You can ask for a person at any time.");
    });
  }
});

describe("order of messages (#18.4)", () => {
  for (const platform of ["whatsapp", "messenger"] as const) {
    it(`${platform}: a customer whose first message taps another conversation's button gets the greeting first, then the refusal`, async () => {
      b = await channelBench({ platform, rules: [] });
      const bench = b;
      const releases = (bench.h.engine as unknown as { options: { releases: StaticReleases } }).options.releases;
      const greeted: AgentRelease = { ...bench.h.release, config: { ...bench.h.release.config, greeting: "Welcome to the shop!" } };
      releases.set(greeted);
      const token = newToken();
      await bench.store.putRefs([{ token, platform, conversationId: "c_someone_else", kind: "confirm", targetId: "p_other" }]);
      const answer = await bench.post(bench.body({ payload: token, title: "Confirm" }));
      expect(answer.status).toBe(200);
      await bench.waitFor(() => bench.received().some((m) => m.text.includes("does not belong to this conversation")), "the refusal");
      await bench.service.idle();
      const texts = bench.received().map((m) => m.text);
      const greeting = texts.indexOf("Welcome to the shop!");
      const refusal = texts.findIndex((t) => t.includes("does not belong to this conversation"));
      expect(greeting, JSON.stringify(texts)).toBeGreaterThanOrEqual(0);
      expect(greeting, JSON.stringify(texts)).toBeLessThan(refusal);
      if (platform === "messenger") expect(texts[0]).toContain("automated assistant");
    });
  }
});
