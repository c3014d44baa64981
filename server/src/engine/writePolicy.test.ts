// The write policy as a pure state machine: every rule checked without store, sockets or clocks.
import { describe, expect, it } from "vitest";
import { STATUS_CHECKS_MAX } from "@caplo/shared";
import { blockedMessage, blockingWrite, checkDelay, decide, planChange, type LedgerContext, type PolicyWrite } from "./writePolicy.ts";

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

describe("planChange: the whole ledger change of a decision", () => {
  const context: LedgerContext = { now: 1_000, checkBaseMs: 5000, hasStatus: true, nodeId: "node-a" };

  it("a confirm sets the arguments that run, the idempotency key and the running node, from proposed only", () => {
    const plan = planChange(proposed, { type: "confirm", actor: owner, finalArgs: { order: "SO-1" }, idempotencyKey: "ik_1" }, context);
    expect(plan).toEqual({
      ok: true,
      to: "confirmed",
      effects: [{ type: "run" }],
      change: { state: "confirmed", finalArgs: { order: "SO-1" }, idempotencyKey: "ik_1", nodeId: "node-a", note: "confirmed by the customer" },
      expect: { states: ["proposed"] },
    });
    expect(planChange({ ...proposed, state: "declined" }, { type: "confirm", actor: owner }, context)).toMatchObject({ ok: false, code: "proposal_not_open" });
  });

  it("a pending outcome keeps its operation reference and schedules the first check; without a status check it is listed for the team", () => {
    const running: PolicyWrite = { ...proposed, state: "running" };
    const event = { type: "finished", outcome: { outcome: "pending", operationRef: "op-7" } } as const;
    expect(planChange(running, event, context)).toMatchObject({
      ok: true,
      change: { state: "pending", result: { outcome: "pending" }, operationRef: "op-7", nextCheckAt: 6_000, checkLeaseUntil: null },
      expect: { states: ["running"] },
    });
    expect(planChange(running, event, { ...context, hasStatus: false })).toMatchObject({ ok: true, change: { state: "pending", nextCheckAt: null, followUp: true } });
  });

  it("a status check's answer lands only on the check count it was asked at, and counts it", () => {
    const unknown: PolicyWrite = { ...proposed, state: "unknown", checkCount: 2 };
    expect(planChange(unknown, { type: "checked", outcome: { outcome: "applied", text: "done" } }, context)).toMatchObject({
      ok: true,
      change: { state: "applied", checkCount: 3, checkLeaseUntil: null, nextCheckAt: null, result: { outcome: "applied", text: "done" }, note: "status check 3: applied" },
      expect: { states: ["unknown"], checkCount: 2 },
    });
  });

  it("a satisfied step-up runs again on this node with the step-up cleared; an expiry says why", () => {
    const waiting: PolicyWrite = { ...proposed, state: "step_up_required", subjectId: "a" };
    expect(planChange(waiting, { type: "verified", subjectId: "a", satisfiesStepUp: true }, context)).toMatchObject({
      ok: true,
      change: { state: "running", stepUp: null, nodeId: "node-a", note: "step-up satisfied" },
      expect: { states: ["step_up_required"] },
    });
    expect(planChange(waiting, { type: "expire" }, context)).toMatchObject({ ok: true, change: { state: "expired", note: "expired: the customer did not verify again in time" } });
    expect(planChange(proposed, { type: "expire" }, context)).toMatchObject({ ok: true, change: { state: "expired", note: "expired: not decided in time" } });
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
