// The write policy as a pure state machine: every rule checked without store, sockets or clocks.
import { describe, expect, it } from "vitest";
import { STATUS_CHECKS_MAX } from "@caplo/shared";
import { blockedMessage, blockingWrite, checkDelay, decide, type PolicyWrite } from "./writePolicy.ts";

const proposed: PolicyWrite = { state: "proposed", ownerId: "o1", subjectId: null, checkCount: 0 };
const owner = { ownerId: "o1", subjectId: null };

describe("decide", () => {
  it("only the proposal's owner can confirm it, and only while it is proposed; confirming means running it", () => {
    expect(decide(proposed, { type: "confirm", actor: owner })).toEqual({ ok: true, to: "confirmed", effects: [{ type: "run" }] });
    expect(decide(proposed, { type: "confirm", actor: { ownerId: "o2", subjectId: null } })).toMatchObject({ ok: false, code: "not_your_proposal" });
    for (const state of ["confirmed", "running", "applied", "declined", "cancelled", "expired", "pending", "unknown"] as const) {
      expect(decide({ ...proposed, state }, { type: "confirm", actor: owner })).toMatchObject({ ok: false, code: "proposal_not_open" });
    }
  });

  it("a proposal made for a verified customer can be confirmed only by that customer", () => {
    const forA = { ...proposed, subjectId: "a" };
    expect(decide(forA, { type: "confirm", actor: { ownerId: "o1", subjectId: "a" } })).toMatchObject({ ok: true });
    expect(decide(forA, { type: "confirm", actor: { ownerId: "o1", subjectId: "b" } })).toMatchObject({ ok: false, code: "not_your_proposal" });
    expect(decide(forA, { type: "confirm", actor: { ownerId: "o1", subjectId: null } })).toMatchObject({ ok: false, code: "not_your_proposal" });
  });

  it("a decline runs nothing", () => {
    expect(decide(proposed, { type: "decline", actor: owner })).toEqual({ ok: true, to: "declined", effects: [{ type: "tell" }] });
  });

  it("a different customer verifying cancels a proposal or a write waiting for step-up; the same customer does not", () => {
    const forA = { ...proposed, subjectId: "a" };
    expect(decide(forA, { type: "verified", subjectId: "b", satisfiesStepUp: false })).toEqual({ ok: true, to: "cancelled", effects: [{ type: "tell" }] });
    expect(decide({ ...forA, state: "step_up_required" }, { type: "verified", subjectId: "b", satisfiesStepUp: true })).toMatchObject({ ok: true, to: "cancelled" });
    expect(decide(forA, { type: "verified", subjectId: "a", satisfiesStepUp: false })).toMatchObject({ ok: false });
    expect(decide({ ...forA, state: "applied" }, { type: "verified", subjectId: "b", satisfiesStepUp: false })).toMatchObject({ ok: false });
  });

  it("a write waiting for step-up runs again once the customer satisfies it", () => {
    const waiting = { ...proposed, state: "step_up_required" as const, subjectId: "a" };
    expect(decide(waiting, { type: "verified", subjectId: "a", satisfiesStepUp: true })).toEqual({ ok: true, to: "running", effects: [{ type: "run" }] });
    expect(decide(waiting, { type: "verified", subjectId: "a", satisfiesStepUp: false })).toMatchObject({ ok: false });
  });

  it("each outcome of a run leads to its state; pending and unknown schedule the first status check", () => {
    const running = { ...proposed, state: "running" as const };
    expect(decide(running, { type: "finished", outcome: { outcome: "applied", text: "ok" } })).toEqual({ ok: true, to: "applied", effects: [{ type: "tell" }] });
    expect(decide(running, { type: "finished", outcome: { outcome: "not_applied", message: "no" } })).toEqual({ ok: true, to: "not_applied", effects: [{ type: "tell" }] });
    expect(decide(running, { type: "finished", outcome: { outcome: "pending" } })).toEqual({ ok: true, to: "pending", effects: [{ type: "tell" }, { type: "schedule_check", index: 0 }] });
    expect(decide(running, { type: "finished", outcome: { outcome: "unknown", reason: "x" } })).toEqual({ ok: true, to: "unknown", effects: [{ type: "tell" }, { type: "schedule_check", index: 0 }] });
    expect(decide(running, { type: "finished", outcome: { outcome: "step_up_required", stepUp: { level: "high" } } })).toEqual({
      ok: true,
      to: "step_up_required",
      effects: [{ type: "ask_step_up", stepUp: { level: "high" } }],
    });
    expect(decide(proposed, { type: "finished", outcome: { outcome: "applied", text: "" } })).toMatchObject({ ok: false, code: "not_running" });
  });

  it(`status checks: check ${STATUS_CHECKS_MAX - 1} of an unresolved write schedules the next, check ${STATUS_CHECKS_MAX} lists it for follow-up`, () => {
    const unknown = { ...proposed, state: "unknown" as const };
    expect(decide({ ...unknown, checkCount: STATUS_CHECKS_MAX - 2 }, { type: "checked", outcome: { outcome: "unknown", reason: "x" } })).toEqual({
      ok: true,
      to: "unknown",
      effects: [{ type: "schedule_check", index: STATUS_CHECKS_MAX - 1 }],
    });
    expect(decide({ ...unknown, checkCount: STATUS_CHECKS_MAX - 1 }, { type: "checked", outcome: { outcome: "unknown", reason: "x" } })).toEqual({
      ok: true,
      to: "unknown",
      effects: [{ type: "follow_up" }],
    });
    expect(decide({ ...unknown, checkCount: 3 }, { type: "checked", outcome: { outcome: "pending" } })).toMatchObject({ ok: true, to: "pending" });
    expect(decide({ ...unknown, state: "pending", checkCount: 3 }, { type: "checked", outcome: { outcome: "unknown", reason: "?" } })).toMatchObject({ ok: true, to: "pending" });
    expect(decide({ ...unknown, checkCount: 7 }, { type: "checked", outcome: { outcome: "applied", text: "" } })).toEqual({ ok: true, to: "applied", effects: [{ type: "tell" }] });
    expect(decide({ ...unknown, state: "applied" }, { type: "checked", outcome: { outcome: "applied", text: "" } })).toMatchObject({ ok: false, code: "not_checkable" });
  });

  it("only a proposal, or a write waiting for step-up (its tool asked before acting), can expire", () => {
    for (const state of ["proposed", "step_up_required"] as const) expect(decide({ ...proposed, state }, { type: "expire" })).toEqual({ ok: true, to: "expired", effects: [{ type: "tell" }] });
    for (const state of ["confirmed", "running", "applied", "not_applied", "pending", "unknown", "declined", "cancelled", "expired"] as const) {
      expect(decide({ ...proposed, state }, { type: "expire" })).toMatchObject({ ok: false, code: "proposal_not_open" });
    }
  });
});

describe("blocking and gaps", () => {
  it("proposed, confirmed, running, pending, unknown and step-up writes block the next write; finished ones do not", () => {
    for (const state of ["proposed", "confirmed", "running", "pending", "unknown", "step_up_required"] as const) expect(blockingWrite([{ state }])).toBeDefined();
    for (const state of ["applied", "not_applied", "declined", "cancelled", "expired"] as const) expect(blockingWrite([{ state }])).toBeUndefined();
    expect(blockedMessage("pending", "shop/cancel_order")).toMatch(/^write_blocked: .*not confirmed yet \(pending\)/);
  });

  it("gaps between status checks grow", () => {
    const gaps = Array.from({ length: STATUS_CHECKS_MAX }, (_, index) => checkDelay(index, 5000));
    expect(gaps).toEqual([5000, 10000, 20000, 40000, 80000, 160000, 320000, 640000]);
  });
});
