// The write policy on chat apps: only a tap on that proposal's Confirm confirms it; typed text never does;
// a stale, foreign or unknown tap changes nothing; typed answers match an option by number or exact label.
import { describe, expect, it } from "vitest";
import { decideTap, decideText, isTypedConsent, matchTypedAnswer, TAP_CONFIRM_NOTICE } from "./inboundPolicy.ts";
import type { ButtonRef, OpenQuestion } from "./ports.ts";

const confirmRef: ButtonRef = { token: "c1.a", platform: "whatsapp", conversationId: "conv-1", kind: "confirm", targetId: "prop-1" };
const question: OpenQuestion = { elicitationId: "el-1", field: "size", options: [{ value: "S", label: "Small" }, { value: "M", label: "Medium" }, { value: "L", label: "Large" }] };

describe("typed text", () => {
  it("never confirms: 'yes', 'confirm' and 'OK' stay plain messages", () => {
    for (const text of ["yes", "Yes!", "confirm", "CONFIRM", "ok", "Confirm prop-1"]) {
      expect(decideText(text, undefined)).toEqual({ kind: "forward", inbound: { type: "message", text } });
    }
  });
  it("is cut to a message's 4,000 units, never between an emoji's two halves", () => {
    expect(decideText(`${"x".repeat(3999)}\u{1F600}more`, undefined)).toEqual({ kind: "forward", inbound: { type: "message", text: "x".repeat(3999) } });
    expect(decideText("y".repeat(4100), undefined)).toEqual({ kind: "forward", inbound: { type: "message", text: "y".repeat(4000) } });
  });
  it("typed consent while a proposal waits is answered 'tap Confirm' and handed to nobody; with none waiting it is a plain message", () => {
    for (const text of ["yes", "Yes!", "confirm", "CONFIRM", "ok", "OK, go ahead", "yes please", "Yes, that's right", "do it", "👍", "✅", "da", "potrjujem"]) {
      expect(isTypedConsent(text), text).toBe(true);
      expect(decideText(text, undefined, true)).toEqual({ kind: "notice", code: "tap_to_confirm", text: TAP_CONFIRM_NOTICE });
      expect(decideText(text, undefined, false)).toEqual({ kind: "forward", inbound: { type: "message", text } });
    }
    expect(TAP_CONFIRM_NOTICE).toContain("tap Confirm");
  });
  it("a message that says more than consent is an ordinary message even while a proposal waits", () => {
    for (const text of ["yes but size L", "Confirm prop-1", "please", "no", "cancel", "is it shipped yet?", "", "ok ".repeat(30)]) {
      expect(isTypedConsent(text), text).toBe(false);
    }
    expect(decideText("yes but size L", undefined, true)).toEqual({ kind: "forward", inbound: { type: "message", text: "yes but size L" } });
  });
  it("an open question's option named like consent is answered, not refused", () => {
    const yesNo: OpenQuestion = { elicitationId: "el-2", field: "gift", options: [{ value: "y", label: "Yes" }, { value: "n", label: "No" }] };
    expect(decideText("yes", yesNo, true)).toMatchObject({ kind: "forward", inbound: { type: "answer", content: { gift: "y" } } });
  });
  it("an option whose label is a number is answered by that label; other numbers still count the options", () => {
    const sizes: OpenQuestion = { elicitationId: "el-3", field: "size", options: ["38", "39", "40", "41"].map((n) => ({ value: `eu${n}`, label: n })) };
    expect(matchTypedAnswer("39", sizes)).toBe("eu39");
    expect(matchTypedAnswer("2", sizes)).toBe("eu39");
    expect(matchTypedAnswer("5", sizes)).toBeUndefined();
  });
  it("answers an open question by the option's number or its exact label, case aside", () => {
    expect(matchTypedAnswer("2", question)).toBe("M");
    expect(matchTypedAnswer(" large ", question)).toBe("L");
    expect(matchTypedAnswer("4", question)).toBeUndefined();
    expect(matchTypedAnswer("0", question)).toBeUndefined();
    expect(matchTypedAnswer("Larg", question)).toBeUndefined();
    expect(decideText("3", question)).toEqual({ kind: "forward", closesQuestion: true, inbound: { type: "answer", elicitationId: "el-1", action: "accept", content: { size: "L" } } });
    expect(decideText("I want the big one", question)).toEqual({ kind: "forward", inbound: { type: "message", text: "I want the big one" } });
  });
});

describe("numbered replies (a result's reply actions past the platform's list)", () => {
  const replies: OpenQuestion = { kind: "replies", elicitationId: "", field: "", options: [{ value: "I pick Store 1", label: "Store 1" }, { value: "I pick Store 2", label: "Store 2" }] };
  it("a typed number or exact label sends that reply's text as the customer's message", () => {
    expect(decideText("2", replies)).toEqual({ kind: "forward", closesQuestion: true, inbound: { type: "message", text: "I pick Store 2" } });
    expect(decideText("store 1", replies)).toEqual({ kind: "forward", closesQuestion: true, inbound: { type: "message", text: "I pick Store 1" } });
    expect(decideText("3", replies)).toEqual({ kind: "forward", inbound: { type: "message", text: "3" } });
  });
  it("is no open question: an answer tap finds its question closed", () => {
    const ref: ButtonRef = { token: "c1.d", platform: "whatsapp", conversationId: "conv-1", kind: "answer", targetId: "", field: "", value: "x" };
    expect(decideTap(ref, "conv-1", undefined, replies)).toMatchObject({ kind: "notice", code: "question_closed" });
  });
});

describe("taps", () => {
  it("a Confirm tap on a proposal still waiting confirms exactly that proposal", () => {
    expect(decideTap(confirmRef, "conv-1", "proposed", undefined)).toEqual({ kind: "forward", inbound: { type: "confirm", proposalId: "prop-1" } });
    expect(decideTap({ ...confirmRef, kind: "decline" }, "conv-1", "proposed", undefined)).toEqual({ kind: "forward", inbound: { type: "decline", proposalId: "prop-1" } });
  });
  it("a tap on an already decided proposal changes nothing and says so", () => {
    for (const state of ["running", "applied", "not_applied", "pending", "unknown", "declined", "cancelled", "expired"]) {
      const d = decideTap(confirmRef, "conv-1", state, undefined);
      expect(d).toMatchObject({ kind: "notice", code: "proposal_decided" });
      if (d.kind === "notice") expect(d.text).toContain("Nothing was changed.");
    }
  });
  it("a tap from another conversation, or with an unknown reference, changes nothing", () => {
    expect(decideTap(confirmRef, "conv-2", "proposed", undefined)).toMatchObject({ kind: "notice", code: "button_foreign" });
    expect(decideTap(undefined, "conv-1", undefined, undefined)).toMatchObject({ kind: "notice", code: "button_unknown" });
  });
  it("an answer tap answers only the question still open", () => {
    const ref: ButtonRef = { token: "c1.b", platform: "messenger", conversationId: "conv-1", kind: "answer", targetId: "el-1", field: "size", value: "M" };
    expect(decideTap(ref, "conv-1", undefined, question)).toMatchObject({ kind: "forward", inbound: { type: "answer", elicitationId: "el-1", content: { size: "M" } } });
    expect(decideTap(ref, "conv-1", undefined, undefined)).toMatchObject({ kind: "notice", code: "question_closed" });
    expect(decideTap(ref, "conv-1", undefined, { ...question, elicitationId: "el-2" })).toMatchObject({ kind: "notice", code: "question_closed" });
  });
  it("a reply tap sends the reply action's text as the customer's message", () => {
    const ref: ButtonRef = { token: "c1.c", platform: "instagram", conversationId: "conv-1", kind: "reply", targetId: "", value: "I pick Store 2" };
    expect(decideTap(ref, "conv-1", undefined, undefined)).toEqual({ kind: "forward", inbound: { type: "message", text: "I pick Store 2" } });
  });
});
