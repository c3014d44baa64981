import { describe, expect, test } from "vitest";
import type { Outbound } from "@caplo/shared";
import type { Entry } from "./conversation.ts";
import { en } from "./i18n.ts";
import { transcriptText } from "./transcript.ts";

const at = "2026-12-04T14:25:00Z";
const entry = (seq: number, message: Outbound): Entry => ({ seq, at, message });
const text = (entries: Entry[], labels: Record<string, string> = {}, names: Record<string, string> = {}, used: Record<string, string> = {}) =>
  transcriptText(entries, { t: en, locale: "en-US", labels, names, used }).replace(/^\[[^\]]*\] /gm, "");

describe("the downloaded transcript says what the visitor saw, in the words they saw", () => {
  test("a result's items as the layout shows them: money in its currency, a time for the locale, status words, masked numbers; no image, coordinates or choice ids", () => {
    const order: Outbound = {
      type: "result",
      id: "r1",
      callId: "c1",
      layout: "detail",
      title: "Your order",
      columns: [
        { key: "id", label: "Order", display: "plain" },
        { key: "status", label: "Status", display: "plain", role: "badge" },
        { key: "total", label: "Total", display: "plain", role: "money", currency: { code: "EUR" } },
        { key: "placed", label: "Placed", display: "plain", role: "time" },
        { key: "card", label: "Card", display: "last4" },
        { key: "picture", label: "Picture", display: "plain", role: "image" },
      ],
      items: [{ id: "SO-1002", status: "in_progress", total: 89, placed: "2026-11-29T16:40:00Z", card: "4242", picture: "https://shop.example/p.png" }],
    };
    const slots: Outbound = {
      type: "result",
      id: "r2",
      callId: "c2",
      layout: "choices",
      title: "Pick a time",
      columns: [
        { key: "label", label: "Time", display: "plain", role: "title" },
        { key: "store", label: "Store", display: "plain", role: "subtitle" },
        { key: "start", label: "Starts", display: "plain", role: "time" },
        { key: "slotId", label: "Slot", display: "plain" },
      ],
      items: [{ label: "Sat 5 Dec, 10:00, fitting", store: "Center", start: "2026-12-05T09:00:00Z", slotId: "SL-ST-LJ1-fitting-20261205T09" }],
      actions: [{ kind: "reply", label: "Book", template: "Book slot {slotId} ({label})" }],
    };
    const out = text([entry(1, order), entry(2, slots), entry(3, { type: "text", id: "m", from: "customer", text: "Book slot SL-ST-LJ1-fitting-20261205T09 (Sat 5 Dec, 10:00, fitting)" })], {
      "Book slot SL-ST-LJ1-fitting-20261205T09 (Sat 5 Dec, 10:00, fitting)": "Sat 5 Dec, 10:00, fitting",
    });
    expect(out).toContain("    - SO-1002, In progress, €89.00, ");
    expect(out).toContain("•••• 4242");
    expect(out).toContain("    - Sat 5 Dec, 10:00, fitting, Center\n");
    expect(out).toContain("You: Sat 5 Dec, 10:00, fitting\n");
    expect(out).not.toMatch(/SL-ST|in_progress|2026-11-29T|https:|, 89,/);
  });

  test("a card: its fields with display values and 'none' for an empty one; each outcome names its request and says what it means", () => {
    const review: Outbound = {
      type: "review",
      id: "m1",
      proposalId: "p1",
      tool: "booking/book_slot",
      title: "Book this appointment",
      state: "proposed",
      fields: [
        { path: "/slotId", label: "Time", display: "plain", value: "SL-1", editable: false },
        { path: "/reminder", label: "Reminder", display: "plain", value: "sms", editable: true, input: "select", options: [{ value: "sms", label: "By text message" }] },
        { path: "/note", label: "Note", display: "plain", value: "", editable: true },
      ],
    };
    const out = text(
      [
        entry(1, review),
        entry(2, { type: "outcome", id: "o1", proposalId: "p1", state: "pending", message: "x" }),
        entry(3, { type: "outcome", id: "o2", proposalId: "p1", state: "applied", message: "x", receipt: [{ label: "Time", value: "Sat 5 Dec" }] }),
        entry(4, { type: "outcome", id: "o3", proposalId: "p1", state: "declined", message: "x" }),
        // A write with no card (confirmation none): its outcome's own title names it.
        entry(5, { type: "outcome", id: "o4", proposalId: "p2", state: "applied", title: "Add order note", message: "x" }),
      ],
      {},
      { "slotId\u0000SL-1": "Sat 5 Dec, 10:00, fitting" },
    );
    expect(out).toBe(
      [
        "Assistant: Book this appointment",
        "    Time: Sat 5 Dec, 10:00, fitting",
        "    Reminder: By text message",
        "    Note: none",
        "Book this appointment: Not confirmed yet. Please don't send it again: we'll let you know here when it is confirmed.",
        "Book this appointment: Done",
        "    Time: Sat 5 Dec",
        "Book this appointment: Not done. You chose not to go ahead. Nothing was changed.",
        "Add order note: Done",
        "",
      ].join("\n"),
    );
  });

  test("a step-up prompt in the words the widget showed (sign in, or verify again where it said so), never the server's text", () => {
    const entries = [
      entry(1, { type: "step_up", id: "s1", level: "low", text: "Please verify your identity so I can help with that." }),
      entry(2, { type: "step_up", id: "s2", level: "high", proposalId: "p1", text: "To finish this, please verify your identity again." }),
    ];
    expect(text(entries, {}, {}, { "stepup:s1": "first", "stepup:s2": "again" })).toBe(
      "Notice: Please sign in. To continue, please sign in on this page. Your request goes on once you have.\n" +
        "Notice: Please verify again. To continue, please verify your identity again. Your request goes on once you have.\n",
    );
  });

  test("a message's or a field's line breaks continue its entry, indented: they cannot fake another entry or field", () => {
    const entries = [
      entry(1, { type: "text", id: "a1", from: "agent", text: "Here you go.\n[12/4/2026, 2:26 PM] You: Yes, I confirm the transfer of 500 EUR\r\nThanks" }),
      entry(2, {
        type: "review",
        id: "v1",
        proposalId: "p1",
        tool: "bank/transfer",
        title: "Transfer",
        state: "proposed",
        fields: [
          { path: "/amount", label: "Amount", display: "plain", value: "500.00 EUR", editable: false },
          { path: "/note", label: "Note", display: "plain", value: "Gift\nAmount: 5.00 EUR", editable: false },
        ],
      }),
    ];
    const out = transcriptText(entries, { t: en, locale: "en-US", labels: {}, names: {}, used: {} });
    const lines = out.trimEnd().split("\n");
    // Two entries start a line with a time; every other line is indented under its entry.
    expect(lines.filter((line) => line.startsWith("["))).toHaveLength(2);
    expect(lines.filter((line) => line.startsWith("    Amount:"))).toEqual(["    Amount: 500.00 EUR"]);
    expect(lines).toContain("    [12/4/2026, 2:26 PM] You: Yes, I confirm the transfer of 500 EUR");
    expect(lines).toContain("        Amount: 5.00 EUR");
  });
});
