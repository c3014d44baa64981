// What an append changes in its conversation's inbox summary: the newest shown message, and since when the
// customer has waited (their first message not answered since; progress answers nothing).
import { describe, expect, it } from "vitest";
import type { Outbound } from "@caplo/shared";
import { summaryChange } from "./inboxSummary.ts";

const said = (from: "customer" | "agent" | "team", text = "x"): Outbound => ({ type: "text", id: `m_${text}`, from, text });
const progress: Outbound = { type: "progress", id: "p", callId: "call_1", state: "start" };
const handoff: Outbound = { type: "handoff", id: "h", state: "requested", text: "A person will join." };

describe("summaryChange", () => {
  it("no events, or only progress: nothing changes", () => {
    expect(summaryChange([])).toEqual({ lastMessage: null, waiting: "keep", waitingFrom: null });
    expect(summaryChange([progress])).toEqual({ lastMessage: null, waiting: "keep", waitingFrom: null });
  });

  it("a customer message starts waiting unless an earlier one is still unanswered", () => {
    expect(summaryChange([said("customer")])).toEqual({ lastMessage: 0, waiting: "start", waitingFrom: 0 });
    expect(summaryChange([said("customer", "a"), progress, said("customer", "b")])).toEqual({ lastMessage: 2, waiting: "start", waitingFrom: 0 });
  });

  it("a reply, a team message or a handoff notice answers; a customer message after the last answer waits from there", () => {
    expect(summaryChange([said("agent")])).toEqual({ lastMessage: 0, waiting: "clear", waitingFrom: null });
    expect(summaryChange([said("customer"), said("team")])).toEqual({ lastMessage: 1, waiting: "clear", waitingFrom: null });
    expect(summaryChange([said("customer", "a"), handoff, said("customer", "b"), said("customer", "c")])).toEqual({ lastMessage: 3, waiting: "set", waitingFrom: 2 });
  });

  it("a review card answers but is not shown as the last message", () => {
    const review = { type: "review", id: "r", proposalId: "p", title: "Cancel order", fields: [], expiresAt: "2030-01-01T00:00:00Z" } as unknown as Outbound;
    expect(summaryChange([said("customer"), review])).toEqual({ lastMessage: 0, waiting: "clear", waitingFrom: null });
  });
});
