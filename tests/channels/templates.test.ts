// Content templates that do not pile up: one Twilio Content template per shape (type and number of
// options), with the body, titles, ids and descriptions as variables and the sample values Twilio asks for
// at creation, cached by shape and account. Sent with the real twilio client to the fake Twilio, which
// refuses a create without samples, a list item without a description, and any title over its limit.
import { afterEach, describe, expect, it } from "vitest";
import type { Outbound } from "@caplo/shared/messages";
import { recordingRefs } from "@caplo/adapters/testkit";
import { createWhatsAppAdapter } from "@caplo/adapters/whatsapp/index";
import { memoryContentCache } from "@caplo/adapters/whatsapp/api";
import { startFakeTwilio, type FakeTwilio } from "./fakeTwilio.ts";
import { BUSINESS_NUMBER } from "./support.ts";

let twilio: FakeTwilio | undefined;
afterEach(async () => {
  await twilio?.close();
  twilio = undefined;
});

const order = (orderId: string): Outbound => ({
  type: "result",
  id: `r-${orderId}`,
  callId: `call-${orderId}`,
  layout: "detail",
  title: "Your order",
  columns: [
    { key: "orderId", label: "Order", display: "plain", role: "title" },
    { key: "status", label: "Status", display: "plain" },
  ],
  items: [{ orderId, status: "shipped" }],
  actions: [
    { kind: "reply", label: "Track it", template: "Where is order {orderId}?" },
    { kind: "reply", label: "Get the invoice", template: "Send me the invoice for order {orderId}" },
  ],
});
const review = (proposalId: string): Outbound => ({ type: "review", id: `v-${proposalId}`, proposalId, tool: "shop/cancel_order", title: "Cancel this order", fields: [{ path: "/orderId", label: "Order", display: "plain", value: "SO-1001", editable: false }], state: "proposed" });
const slots = (n: number, from: number): Outbound => ({
  type: "result",
  id: `s-${from}`,
  callId: `slots-${from}`,
  layout: "choices",
  title: "Pick a time",
  columns: [{ key: "label", label: "Time", display: "plain", role: "title" }],
  items: Array.from({ length: n }, (_, i) => ({ label: `Fri ${from + i} Dec, 10:00` })),
  actions: [{ kind: "reply", label: "Book", template: "Book {label}" }],
});

describe("WhatsApp Content templates", () => {
  it("one template per shape: three orders' 'Track it: SO-…' buttons, two proposals and two slot lists make two templates, not seven", async () => {
    twilio = await startFakeTwilio();
    const adapter = createWhatsAppAdapter({ accountSid: twilio.accountSid, authToken: twilio.authToken, from: BUSINESS_NUMBER, publicUrl: "https://shop.example/webhooks/whatsapp", apiBaseUrl: twilio.url, contentCache: memoryContentCache() });
    const customer = "whatsapp:+38640111222";
    const outbounds = [order("SO-1001"), order("SO-1002"), order("SO-1003"), review("p1"), review("p2"), slots(5, 1), slots(5, 8)];
    for (const outbound of outbounds) {
      for (const message of adapter.render(outbound, { refs: recordingRefs() }).messages) {
        const sent = await adapter.send(customer, message, { fromTeam: false, windowOpen: true });
        expect(sent, JSON.stringify(sent)).toMatchObject({ ok: true });
      }
    }
    expect(twilio.violations).toEqual([]);
    // quick-reply with 2 buttons (orders and proposals alike), list-picker with 5 items.
    expect(twilio.contentCreates).toBe(2);
    expect(twilio.created.map((c) => Object.keys(c.types)[0])).toEqual(["twilio/quick-reply", "twilio/list-picker"]);
    // Nothing of a message is baked into a template: no order number, no slot, no payload.
    expect(JSON.stringify(twilio.created)).not.toMatch(/SO-100|Fri \d|c1\./);
    // Every variable had a sample value at creation.
    for (const created of twilio.created) {
      for (const [, n] of JSON.stringify(created.types).matchAll(/\{\{(\d+)\}\}/g)) expect(created.variables[n!], `sample {{${n}}}`).toBeTruthy();
    }
    // The customer still sees each message's own titles and every list item has a description.
    const withOptions = twilio.sent.filter((m) => m.content);
    expect(withOptions.slice(0, 3).map((m) => m.content!.options.map((o) => o.title))).toEqual([
      ["Track it: SO-1001", "Get the invoice…"],
      ["Track it: SO-1002", "Get the invoice…"],
      ["Track it: SO-1003", "Get the invoice…"],
    ]);
    const list = withOptions.find((m) => m.content!.type === "twilio/list-picker")!;
    expect(list.content!.options.map((o) => o.title)).toEqual(["Fri 1 Dec, 10:00", "Fri 2 Dec, 10:00", "Fri 3 Dec, 10:00", "Fri 4 Dec, 10:00", "Fri 5 Dec, 10:00"]);
    for (const option of list.content!.options) expect(option.description).toBeTruthy();
  });

  it("the cache is per account and shape: a new account creates its own, a new shape its own, a repeat none", async () => {
    twilio = await startFakeTwilio();
    const cache = memoryContentCache();
    const adapter = createWhatsAppAdapter({ accountSid: twilio.accountSid, authToken: twilio.authToken, from: BUSINESS_NUMBER, publicUrl: "https://shop.example/webhooks/whatsapp", apiBaseUrl: twilio.url, contentCache: cache });
    const send = async (outbound: Outbound) => {
      for (const message of adapter.render(outbound, { refs: recordingRefs() }).messages) await adapter.send("whatsapp:+38640111222", message, { fromTeam: false, windowOpen: true });
    };
    await send(review("p1"));
    await send(review("p2"));
    expect(twilio.contentCreates).toBe(1);
    await send(slots(4, 1));
    await send(slots(6, 1));
    expect(twilio.contentCreates).toBe(3);
    await send(slots(4, 20));
    expect(twilio.contentCreates).toBe(3);
    expect(twilio.violations).toEqual([]);
  });
});
