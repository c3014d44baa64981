import { describe, expect, test } from "vitest";
import type { Outbound, ServerFrame } from "@caplo/shared";
import { initialState, reduce, rowsOf, runningLabels, settledIds, type ConversationState } from "./conversation.ts";

const event = (seq: number, message: Outbound): ServerFrame => ({ t: "event", seq, at: "2026-01-01T00:00:00Z", message });
const apply = (frames: ServerFrame[], state: ConversationState = initialState) =>
  frames.reduce((s, frame) => reduce(s, { type: "frame", frame }), state);
const welcome = (conversationId = "c1"): ServerFrame => ({ t: "welcome", v: 1, conversationId, resumeToken: "tok", verified: false });

describe("conversation state", () => {
  test("an event already shown is ignored when a resume repeats it", () => {
    const msg: Outbound = { type: "text", id: "m1", from: "agent", text: "Hi" };
    const s = apply([welcome(), event(1, msg), event(1, msg), event(2, { ...msg, id: "m2" }), event(2, msg)]);
    expect(s.entries.map((e) => e.seq)).toEqual([1, 2]);
    expect(s.lastSeq).toBe(2);
  });

  test("a welcome to a different conversation starts empty; to the same one keeps the history", () => {
    const msg: Outbound = { type: "text", id: "m1", from: "agent", text: "Hi" };
    const s = apply([welcome("c1"), event(1, msg)]);
    expect(apply([welcome("c1")], s).entries).toHaveLength(1);
    expect(apply([welcome("c2")], s).entries).toHaveLength(0);
  });

  test("a welcome's ratings are the visitor's thumbs as the server keeps them: a reload shows them pressed, one only this page remembered is dropped", () => {
    const msg: Outbound = { type: "text", id: "m1", from: "agent", text: "Hi" };
    let s = apply([welcome("c1"), event(1, msg), event(2, { ...msg, id: "m2" })]);
    s = reduce(s, { type: "use", id: "rate:1", value: "down", ref: "r1" });
    s = reduce(s, { type: "use", id: "review:p1", value: "confirm", ref: "r2" });
    s = apply([{ ...welcome("c1"), ratings: [{ seq: 2, rating: "up" }] } as ServerFrame], s);
    expect(s.used).toEqual({ "rate:2": "up", "review:p1": "confirm" });
    // A server that sends no ratings leaves what the page has.
    expect(apply([welcome("c1")], s).used).toEqual(s.used);
    // Another conversation's ratings only.
    expect(apply([{ ...welcome("c2"), ratings: [{ seq: 1, rating: "down" }] } as ServerFrame], s).used).toEqual({ "rate:1": "down" });
  });

  test("the visitor's echoed message replaces its in-flight copy", () => {
    let s = reduce(apply([welcome()]), { type: "send", ref: "r1", text: "Where is SO-1002?" });
    s = apply([{ t: "ack", ref: "r1" }], s);
    expect(s.pending).toEqual([{ ref: "r1", text: "Where is SO-1002?", acked: true }]);
    s = apply([event(1, { type: "text", id: "m1", from: "customer", text: "Where is SO-1002?" })], s);
    expect(s.pending).toEqual([]);
  });

  test("a refused sign-in's sentence stays until the visitor writes again", () => {
    let s = reduce(apply([welcome()]), { type: "identify", ref: "i1" });
    s = apply([{ t: "error", ref: "i1", code: "token_malformed", message: "the header is not base64url-encoded JSON" }], s);
    expect(s.verifyProblem).toBe("invalid");
    expect(apply([{ t: "typing", on: true }], s).verifyProblem).toBe("invalid");
    expect(reduce(s, { type: "send", ref: "r1", text: "hi" }).verifyProblem).toBeUndefined();
  });

  test("an error frame for a message marks it as not sent with the reason", () => {
    let s = reduce(apply([welcome()]), { type: "send", ref: "r1", text: "x" });
    s = apply([{ t: "error", ref: "r1", code: "rate_limited", message: "Too many messages" }], s);
    expect(s.pending[0]!.error).toBe("Too many messages");
  });

  test("an error frame for a confirm makes its card usable again", () => {
    let s = reduce(apply([welcome()]), { type: "use", id: "review:p1", value: "confirm", ref: "r9" });
    expect(s.used["review:p1"]).toBe("confirm");
    s = apply([{ t: "error", ref: "r9", code: "proposal_expired", message: "This request expired." }], s);
    expect(s.used["review:p1"]).toBeUndefined();
    expect(s.failed["review:p1"]).toBe("This request expired.");
  });

  test("outcomes and later review states fold into their card; a pending write's resolution is also said at the bottom; an orphan outcome is its own row", () => {
    const review: Outbound = { type: "review", id: "m1", proposalId: "p1", tool: "o/c", title: "Cancel", fields: [], state: "proposed" };
    const s = apply([
      welcome(),
      event(1, review),
      event(2, { type: "text", id: "m2", from: "agent", text: "Please confirm" }),
      event(3, { ...review, id: "m3", state: "running" }),
      event(4, { type: "outcome", id: "m4", proposalId: "p1", state: "pending", message: "Not confirmed yet" }),
      event(5, { type: "outcome", id: "m5", proposalId: "p1", state: "applied", message: "Done" }),
      event(6, { type: "outcome", id: "m6", proposalId: "p0", state: "unknown", message: "?" }),
    ]);
    const rows = rowsOf(s.entries);
    expect(rows.map((r) => r.kind)).toEqual(["review", "message", "update", "outcome"]);
    const update = rows[2]!;
    if (update.kind !== "update") throw new Error("not an update");
    expect(update.outcome.state).toBe("applied");
    const card = rows[0]!;
    if (card.kind !== "review") throw new Error("not a card");
    expect(card.view.state).toBe("applied");
    expect(card.view.outcomes.map((o) => o.state)).toEqual(["pending", "applied"]);
  });

  test("a tool's progress label shows from its start until its end", () => {
    const start: Outbound = { type: "progress", id: "p1", callId: "c1", state: "start", label: "Looking up your order" };
    const s1 = apply([welcome(), event(1, start)]);
    expect(runningLabels(s1.entries)).toEqual(["Looking up your order"]);
    const s2 = apply([event(2, { ...start, id: "p2", state: "end" })], s1);
    expect(runningLabels(s2.entries)).toEqual([]);
    expect(rowsOf(s2.entries)).toEqual([]);
  });

  test("typing stops when the agent's text arrives or the connection drops", () => {
    const s = apply([welcome(), { t: "typing", on: true }]);
    expect(s.typing).toBe(true);
    expect(apply([event(1, { type: "text", id: "m", from: "agent", text: "x" })], s).typing).toBe(false);
    expect(reduce(s, { type: "connection", view: { phase: "waiting", attempt: 1 } }).typing).toBe(false);
  });
});

describe("settled choices and questions", () => {
  test("choices followed by a visitor message and questions followed by any event are settled", () => {
    const choices: Outbound = { type: "result", id: "r1", callId: "c", layout: "choices", title: "T", columns: [], items: [] };
    const question: Outbound = { type: "question", id: "q1", elicitationId: "e1", style: "questions", message: "?", fields: [] };
    const open = apply([welcome(), event(1, choices), event(2, question)]);
    expect(settledIds(open.entries)).toEqual({});
    const later = apply([event(3, { type: "text", id: "t", from: "customer", text: "Mon 10:00" })], open);
    expect(settledIds(later.entries)).toEqual({ "choices:r1": "settled", "question:e1": "settled" });
  });

  test("a reply streams in order from its deltas; a repeated or skipped part is left; the stored event replaces it", () => {
    let s = apply([welcome(), { t: "typing", on: true }, { t: "delta", id: "m9", at: 0, text: "Hel" }]);
    expect(s.streaming).toEqual({ id: "m9", text: "Hel" });
    expect(s.typing).toBe(false);
    s = apply([{ t: "delta", id: "m9", at: 3, text: "lo" }, { t: "delta", id: "m9", at: 3, text: "lo" }, { t: "delta", id: "m9", at: 9, text: "x" }], s);
    expect(s.streaming).toEqual({ id: "m9", text: "Hello" });
    // Mid-reply, a part of another reply that does not start at 0 is not a reply of its own.
    expect(apply([{ t: "delta", id: "m10", at: 4, text: "x" }], s).streaming?.id).toBe("m9");
    s = apply([event(1, { type: "text", id: "m9", from: "agent", text: "Hello there" })], s);
    expect(s.streaming).toBeNull();
    expect(s.entries.map((e) => e.message.type === "text" && e.message.text)).toEqual(["Hello there"]);
    // A delta of a reply already stored (a resume mid-stream) is not shown again.
    expect(apply([{ t: "delta", id: "m9", at: 0, text: "Hello" }], s).streaming).toBeNull();
  });

  test("the reply parts of one animation frame applied in one step give what they give one by one", () => {
    const frames: ServerFrame[] = [
      { t: "delta", id: "m9", at: 0, text: "Hel" },
      { t: "delta", id: "m9", at: 3, text: "lo" },
      { t: "delta", id: "m9", at: 3, text: "lo" },
      { t: "delta", id: "m9", at: 5, text: " there" },
    ];
    const start = apply([welcome(), { t: "typing", on: true }]);
    const together = reduce(start, { type: "frames", frames });
    expect(together).toEqual(apply(frames, start));
    expect(together.streaming).toEqual({ id: "m9", text: "Hello there" });
  });

  test("the header says Verified only when the server acks the identify; a refused token becomes a kind, not the verifier's words", () => {
    let s = reduce(apply([welcome()]), { type: "identify", ref: "i1" });
    expect(s.verified).toBe(false);
    s = apply([{ t: "error", ref: "i1", code: "identity_invalid", message: "the header is not base64url-encoded JSON" }], s);
    expect(s.verified).toBe(false);
    expect(s.verifyProblem).toBe("invalid");
    expect(s.error).toBeUndefined();
    s = reduce(s, { type: "identify", ref: "i2" });
    s = apply([{ t: "error", ref: "i2", code: "identity_expired", message: "exp is in the past" }], s);
    expect(s.verifyProblem).toBe("expired");
    s = apply([{ t: "ack", ref: "i3" }], reduce(s, { type: "identify", ref: "i3" }));
    expect(s.verified).toBe(true);
    expect(s.verifyProblem).toBeUndefined();
    expect(s.verifications).toBe(1);
  });
});
