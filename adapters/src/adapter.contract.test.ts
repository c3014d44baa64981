// One contract suite for every channel adapter: capabilities, webhook verification and parsing, and
// rendering of every outbound message type within the platform's limits, degrading rather than dropping.
import { describe, expect, it } from "vitest";
import type { Outbound } from "@caplo/shared/messages";
import { checkContentCreate, checkResolvedContent, checkSendBody, checkTwilioMessage, INSTAGRAM_RULES, MESSENGER_RULES } from "../../tests/channels/platformRules.ts";
import type { GraphMessage } from "./meta/api.ts";
import { adapterCases, fixture, metaSigned, recordingRefs, sendBody, type AdapterCase } from "./testkit.ts";
import { sampleVariables, type WhatsAppMessage } from "./whatsapp/format.ts";

/** Every violation of the platform's limits in rendered messages, checked by the same rules the fakes use. */
function violations(c: AdapterCase, messages: unknown[]): string[] {
  if (c.name === "whatsapp") {
    return (messages as WhatsAppMessage[]).flatMap((m) => {
      if (m.kind === "content") {
        const { type, ...body } = m.template;
        return [...checkContentCreate({ friendly_name: "x", language: "en", variables: sampleVariables(m.template), types: { [type]: body } }), ...checkResolvedContent({ [type]: body }, m.variables)];
      }
      const params = new URLSearchParams({ To: c.customerId, From: "whatsapp:+14155238886" });
      if (m.kind === "text") params.set("Body", m.body);
      else {
        params.set("MediaUrl", m.mediaUrl);
        if (m.body) params.set("Body", m.body);
      }
      return checkTwilioMessage(params);
    });
  }
  const rules = c.name === "messenger" ? MESSENGER_RULES : INSTAGRAM_RULES;
  return (messages as GraphMessage[]).flatMap((m) => checkSendBody(sendBody(c.customerId, m, { fromTeam: false, windowOpen: true }), rules));
}

const long = (n: number, word = "lorem ") => word.repeat(Math.ceil(n / word.length)).slice(0, n);

const review: Outbound = {
  type: "review",
  id: "e1",
  proposalId: "prop_1",
  tool: "orders/cancel_order",
  title: "Cancel order",
  state: "proposed",
  fields: [
    { path: "/orderId", label: "Order", display: "plain", value: "SO-1002", editable: false },
    { path: "/card", label: "Card", display: "last4", value: "4242", editable: false },
    { path: "/reason", label: "Reason", display: "plain", value: "Ordered twice", editable: true },
  ],
};

const question = (n: number, label = (i: number) => `Option ${i + 1}`): Outbound => ({
  type: "question",
  id: "q",
  elicitationId: "el_1",
  style: "questions",
  message: "Which store?",
  fields: [{ name: "store", kind: "choice", required: true, options: Array.from({ length: n }, (_, i) => ({ value: `v${i + 1}`, label: label(i) })) }],
});

const items = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ name: `Store ${i + 1}`, address: `Main street ${i + 1}, Ljubljana`, lat: 46.05 + i / 100, lng: 14.5, price: 10 + i, url: `https://shop.example/p/${i + 1}`, state: i === 0 ? "done" : "todo" }));
const columns = [
  { key: "name", label: "Name", display: "plain" as const, role: "title" as const },
  { key: "address", label: "Address", display: "plain" as const, role: "address" as const },
  { key: "price", label: "Price", display: "plain" as const, role: "money" as const, currency: { code: "EUR" } },
];
const result = (layout: "list" | "table" | "cards" | "choices" | "detail" | "comparison" | "timeline" | "page" | "map", n: number): Outbound => ({
  type: "result",
  id: `r-${layout}`,
  callId: "c1",
  layout,
  title: `Results as ${layout}`,
  columns:
    layout === "map"
      ? [...columns, { key: "lat", label: "Lat", display: "plain", role: "latitude" }, { key: "lng", label: "Lng", display: "plain", role: "longitude" }]
      : layout === "timeline"
        ? [...columns, { key: "state", label: "State", display: "plain", role: "status", statuses: { done: "done", todo: "upcoming" } }]
        : columns,
  items: items(n),
  ...(layout === "choices" ? { actions: [{ kind: "reply" as const, label: "Pick", template: "I pick {name}" }] } : {}),
  ...(layout === "cards" ? { actions: [{ kind: "link" as const, label: "Open", key: "url" }] } : {}),
  ...(layout === "page" ? { page: { label: "Open page", display: "tab" as const, origins: ["https://shop.example"], urlKey: "url" } } : {}),
});

const everything: Outbound[] = [
  { type: "text", id: "t1", from: "agent", text: "Hello! How can I help?" },
  { type: "text", id: "t2", from: "agent", text: long(5000) },
  { type: "text", id: "t3", from: "team", text: "Hi, this is Maja from the team." },
  { type: "progress", id: "p1", callId: "c1", state: "start", label: "Looking up your order" },
  { type: "progress", id: "p2", callId: "c1", state: "end" },
  review,
  { ...review, id: "e2", title: long(900), fields: review.fields } as Outbound,
  { ...review, id: "e3", state: "applied" } as Outbound,
  { type: "outcome", id: "o1", proposalId: "prop_1", state: "applied", message: "Your order was cancelled.", receipt: [{ label: "Status", value: "cancelled" }] },
  { type: "outcome", id: "o2", proposalId: "prop_1", state: "pending", message: "Not confirmed yet; please do not send it again." },
  ...(["list", "table", "cards", "detail", "comparison", "timeline", "map"] as const).map((l) => result(l, l === "detail" ? 1 : l === "comparison" ? 4 : 20)),
  result("choices", 2),
  result("choices", 10),
  result("page", 1),
  question(2),
  question(3),
  question(4),
  question(9),
  question(3, (i) => `A very long option label ${i}`),
  { type: "question", id: "qf", elicitationId: "el_f", style: "form", message: "Your details", fields: [{ name: "email", kind: "string", required: true }] },
  { type: "file", id: "f1", name: "invoice.pdf", mimeType: "application/pdf", size: 2048, url: "https://files.example/invoice.pdf" },
  { type: "file", id: "f2", name: "label.png", mimeType: "image/png", size: 2048, url: "https://files.example/label.png" },
  { type: "handoff", id: "h1", state: "requested", text: "A person from our team will reply here." },
  { type: "handoff", id: "h2", state: "released", text: "The team has handed you back to the assistant." },
  { type: "step_up", id: "s1", level: "high", text: "Please verify again to continue." },
];

for (const c of adapterCases()) {
  describe(`ChannelAdapter contract: ${c.name}`, () => {
    const { adapter } = c;

    it("declares messaging-app capabilities: no editable fields, no forms, questions", () => {
      expect(adapter.platform).toBe(c.name);
      expect(adapter.capabilities).toMatchObject({ editableFields: false, forms: false, questions: true, files: true });
      expect(adapter.capabilities.buttonsMax).toBe(3);
    });

    it("accepts a correctly signed webhook and parses its text message", () => {
      const request = c.signed(fixture(c.fixtures.text));
      expect(adapter.verify(request)).toEqual({ ok: true });
      const parsed = adapter.parse(request);
      expect(parsed.ok).toBe(true);
      if (!parsed.ok) return;
      expect(parsed.events).toHaveLength(1);
      expect(parsed.events[0]).toMatchObject({ kind: "message", from: c.customerId, text: "Where is my order SO-1002?" });
    });

    it("refuses a missing, forged or body-tampered signature with 403", () => {
      const raw = fixture(c.fixtures.text);
      const good = c.signed(raw);
      const { "x-twilio-signature": _t, "x-hub-signature-256": _h, ...unsigned } = good.headers;
      expect(adapter.verify({ ...good, headers: unsigned })).toMatchObject({ ok: false, status: 403, error: { code: "signature_missing" } });
      const forged = c.name === "whatsapp" ? { "x-twilio-signature": "bm90IGEgc2lnbmF0dXJl" } : { "x-hub-signature-256": `sha256=${"0".repeat(64)}` };
      expect(adapter.verify({ ...good, headers: { ...good.headers, ...forged } })).toMatchObject({ ok: false, status: 403, error: { code: "signature_invalid" } });
      const tampered = Buffer.from(raw.toString("utf8").replace("SO-1002", "SO-1003"));
      expect(adapter.verify({ ...good, rawBody: tampered })).toMatchObject({ ok: false, status: 403 });
    });

    it("answers a malformed body with 400 and a located error", () => {
      const raw = Buffer.from(c.name === "whatsapp" ? "Body=hi&From=whatsapp%3A%2B1" : '{"object":"page","entry":"nope"}');
      const parsed = adapter.parse(c.signed(raw));
      expect(parsed).toMatchObject({ ok: false, status: 400, error: { code: "body_invalid" } });
      if (!parsed.ok) expect(parsed.error.path).not.toBe("");
    });

    it("parses a tapped Confirm and a chosen option back to the payloads we sent", () => {
      const confirm = adapter.parse(c.signed(fixture(c.fixtures.confirmTap)));
      const option = adapter.parse(c.signed(fixture(c.fixtures.optionTap)));
      expect(confirm.ok && confirm.events[0]).toMatchObject({ kind: "message", payload: "c1.AAAAAAAAAAAAAAAAAAAAAA", payloadTitle: "Confirm" });
      expect(option.ok && option.events[0]).toMatchObject({ kind: "message", payload: "c1.BBBBBBBBBBBBBBBBBBBBBB", payloadTitle: "Ljubljana" });
    });

    it("renders every outbound message type within the platform's limits", () => {
      for (const outbound of everything) {
        const rendered = adapter.render(outbound, { refs: recordingRefs() });
        expect(violations(c, rendered.messages), `${outbound.type} ${outbound.id}`).toEqual([]);
      }
    });

    it("never drops an outbound message the customer should see", () => {
      for (const outbound of everything) {
        const rendered = adapter.render(outbound, { refs: recordingRefs() });
        const silent = outbound.type === "progress" && outbound.state === "end" && c.name === "whatsapp";
        if (!silent) expect(rendered.messages.length, `${outbound.type} ${outbound.id}`).toBeGreaterThan(0);
      }
    });

    it("renders a review as its fields in text (last4 masked as given) with Confirm and Cancel taps for that proposal", () => {
      const refs = recordingRefs();
      const rendered = adapter.render(review, { refs });
      const text = c.textOf(rendered.messages);
      expect(text).toContain("Cancel order");
      expect(text).toContain("Order: SO-1002");
      expect(text).toContain("Card: ••••4242");
      expect(text).toContain("Reason: Ordered twice");
      const taps = c.tapsOf(rendered.messages);
      expect(taps.map((t) => t.title)).toEqual(["Confirm", "Cancel"]);
      expect(taps.map((t) => refs.meaning.get(t.payload))).toEqual(["confirm:prop_1", "decline:prop_1"]);
      expect(rendered.warnings.some((w) => w.feature === "editableFields")).toBe(true);
    });

    it("keeps a review too long for an interactive message whole, as text before the buttons", () => {
      const longReview = { ...review, title: long(900) } as Outbound;
      const rendered = adapter.render(longReview, { refs: recordingRefs() });
      expect(c.textOf(rendered.messages)).toContain(long(900).trim());
      expect(c.tapsOf(rendered.messages).map((t) => t.title)).toEqual(["Confirm", "Cancel"]);
    });

    it("shows a decided review as its status, with no buttons", () => {
      const rendered = adapter.render({ ...review, state: "applied" } as Outbound, { refs: recordingRefs() });
      expect(c.tapsOf(rendered.messages)).toEqual([]);
      expect(c.textOf(rendered.messages)).toContain("Status: done");
    });

    it("asks a questions elicitation with one tap per option, each answering that option", () => {
      for (const n of [2, 3, 4, 9]) {
        const refs = recordingRefs();
        const rendered = adapter.render(question(n), { refs });
        const taps = c.tapsOf(rendered.messages);
        expect(taps.map((t) => t.title)).toEqual(Array.from({ length: n }, (_, i) => `Option ${i + 1}`));
        expect(taps.map((t) => refs.meaning.get(t.payload))).toEqual(Array.from({ length: n }, (_, i) => `answer:el_1:store=v${i + 1}`));
        const expectedKind = n <= 3 ? (c.name === "whatsapp" ? "button" : "postback") : c.name === "whatsapp" ? "list" : "quick_reply";
        expect(new Set(taps.map((t) => t.as))).toEqual(new Set([expectedKind]));
      }
    });

    it("shortens a label too long for the platform visibly, with an ellipsis", () => {
      const rendered = adapter.render(question(3, (i) => `A very long option label ${i}`), { refs: recordingRefs() });
      const titles = c.tapsOf(rendered.messages).map((t) => t.title);
      for (const title of titles) {
        expect(Array.from(title).length).toBeLessThanOrEqual(20);
        expect(title).toContain("…");
      }
      expect(new Set(titles).size).toBe(3);
    });

    it("renders every result layout as readable text holding every item", () => {
      for (const layout of ["list", "table", "cards", "choices", "detail", "comparison", "timeline", "map", "page"] as const) {
        const n = layout === "detail" || layout === "page" ? 1 : layout === "comparison" ? 4 : layout === "choices" ? 10 : 20;
        const outbound = result(layout, n);
        const text = c.textOf(adapter.render(outbound, { refs: recordingRefs() }).messages);
        expect(text, layout).toContain(`Results as ${layout}`);
        if (layout === "page") expect(text).toContain("https://shop.example/p/1");
        else for (let i = 1; i <= n; i++) expect(text, `${layout} item ${i}`).toContain(`Store ${i}`);
      }
      const map = c.textOf(adapter.render(result("map", 2), { refs: recordingRefs() }).messages);
      expect(map).toContain("Main street 1, Ljubljana");
      expect(map).toContain("https://www.google.com/maps/search/?api=1&query=46.05,14.5");
      const table = c.textOf(adapter.render(result("table", 2), { refs: recordingRefs() }).messages);
      expect(table).toContain("Store 2 | Main street 2, Ljubljana | 11 EUR");
    });

    it("offers choices as taps that send the reply action's text", () => {
      const refs = recordingRefs();
      const taps = c.tapsOf(adapter.render(result("choices", 2), { refs }).messages);
      expect(taps.map((t) => refs.meaning.get(t.payload))).toEqual(["reply:I pick Store 1", "reply:I pick Store 2"]);
    });

    it("splits long text at the platform limit without losing any of it", () => {
      const text = long(5000);
      const rendered = adapter.render({ type: "text", id: "x", from: "agent", text }, { refs: recordingRefs() });
      expect(rendered.messages.length).toBeGreaterThan(1);
      expect(c.textOf(rendered.messages).replace(/\s+/g, "")).toBe(text.replace(/\s+/g, ""));
    });

    it("does not echo the customer's own words back", () => {
      expect(adapter.render({ type: "text", id: "x", from: "customer", text: "hi" }, { refs: recordingRefs() }).messages).toEqual([]);
    });

    it("sends files as media where the platform can, otherwise as a link, never dropped", () => {
      const rendered = adapter.render({ type: "file", id: "f", name: "invoice.pdf", mimeType: "application/pdf", size: 2048, url: "https://files.example/invoice.pdf" }, { refs: recordingRefs() });
      expect(c.textOf(rendered.messages)).toContain("https://files.example/invoice.pdf");
    });
  });
}

describe("Meta subscription handshake", () => {
  for (const c of adapterCases().filter((x) => x.name !== "whatsapp")) {
    it(`${c.name}: echoes hub.challenge only for the right verify token`, () => {
      const get = (q: string) => ({ method: "GET", url: `/webhooks/${c.name}?${q}`, headers: {}, rawBody: Buffer.alloc(0) });
      expect(c.adapter.handshake(get("hub.mode=subscribe&hub.verify_token=verify-token-for-tests&hub.challenge=1158201444"))).toEqual({ status: 200, body: "1158201444" });
      expect(c.adapter.handshake(get("hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1158201444"))).toMatchObject({ status: 403 });
      expect(c.adapter.handshake(metaSigned(Buffer.from("{}")))).toBeNull();
    });
  }
});
