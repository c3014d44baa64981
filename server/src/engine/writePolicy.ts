// The write policy as a pure state machine: (ledger state, event) → (next state, effects), or a refusal
// with a stable code. No I/O, no clock: the engine driver stores the transition (compare-and-set) and
// only then carries out the effects. This is where "a write never runs on the model's say-so" lives.
import { STATUS_CHECKS_MAX, type StepUp, type WriteOutcome } from "@caplo/shared";
import { UNRESOLVED_WRITE_STATES, type WriteChange, type WriteExpectation, type WriteRecord, type WriteResult, type WriteState } from "./ledger.ts";

/** Who acts: the connection owner (resume-token holder or channel identity) and the verified customer, if any. */
export type Actor = { ownerId: string; subjectId: string | null };

export type PolicyEvent =
  /**
   * The customer's own client confirmed (edits already checked by applyEdits): `finalArgs` run, under
   * `idempotencyKey` (random, made by the caller: the policy has no randomness).
   */
  | { type: "confirm"; actor: Actor; finalArgs?: Record<string, unknown>; idempotencyKey?: string }
  | { type: "decline"; actor: Actor }
  /** A customer verified in the conversation. */
  | { type: "verified"; subjectId: string; satisfiesStepUp: boolean }
  /** The run (first attempt, or the re-run after step-up) ended. */
  | { type: "finished"; outcome: WriteOutcome }
  /** One status check answered. */
  | { type: "checked"; outcome: WriteOutcome }
  | { type: "expire" };

export type Effect =
  /** Run the tool with the final arguments and the write's idempotency key. */
  | { type: "run" }
  /** Tell the customer and the model the write's (new) state. */
  | { type: "tell" }
  /** Schedule status check number `index` (0-based) after its gap. */
  | { type: "schedule_check"; index: number }
  /** List for the team: still unresolved after the last check. */
  | { type: "follow_up" }
  /** Ask the customer to verify at the step-up's level and age. */
  | { type: "ask_step_up"; stepUp: StepUp };

export type Decision = { ok: true; to: WriteState; effects: Effect[] } | { ok: false; code: string; message: string };

export type PolicyWrite = Pick<WriteRecord, "state" | "ownerId" | "subjectId" | "checkCount">;

const refuse = (code: string, message: string): Decision => ({ ok: false, code, message });

function sameCustomer(write: PolicyWrite, actor: Actor): boolean {
  if (actor.ownerId !== write.ownerId) return false;
  // A proposal made for a verified customer is theirs alone.
  return write.subjectId === null || write.subjectId === actor.subjectId;
}

function afterRun(outcome: WriteOutcome): Decision {
  switch (outcome.outcome) {
    case "applied":
      return { ok: true, to: "applied", effects: [{ type: "tell" }] };
    case "not_applied":
      return { ok: true, to: "not_applied", effects: [{ type: "tell" }] };
    case "pending":
      return { ok: true, to: "pending", effects: [{ type: "tell" }, { type: "schedule_check", index: 0 }] };
    case "unknown":
      return { ok: true, to: "unknown", effects: [{ type: "tell" }, { type: "schedule_check", index: 0 }] };
    case "step_up_required":
      return { ok: true, to: "step_up_required", effects: [{ type: "ask_step_up", stepUp: outcome.stepUp }] };
  }
}

function afterCheck(write: PolicyWrite, outcome: WriteOutcome): Decision {
  const done = write.checkCount + 1;
  if (outcome.outcome === "applied") return { ok: true, to: "applied", effects: [{ type: "tell" }] };
  if (outcome.outcome === "not_applied") return { ok: true, to: "not_applied", effects: [{ type: "tell" }] };
  // pending stays pending; anything else (unknown, a step-up answer to a status check) leaves it as it was or unknown.
  const to: WriteState = outcome.outcome === "pending" ? "pending" : write.state === "pending" ? "pending" : "unknown";
  if (done >= STATUS_CHECKS_MAX) return { ok: true, to, effects: [{ type: "follow_up" }] };
  return { ok: true, to, effects: [{ type: "schedule_check", index: done }] };
}

export function decide(write: PolicyWrite, event: PolicyEvent): Decision {
  switch (event.type) {
    case "confirm":
      if (write.state !== "proposed") return refuse("proposal_not_open", `this proposal is ${write.state}, not waiting for a decision`);
      if (!sameCustomer(write, event.actor)) return refuse("not_your_proposal", "only the customer the proposal was made for can confirm it");
      return { ok: true, to: "confirmed", effects: [{ type: "run" }] };
    case "decline":
      if (write.state !== "proposed") return refuse("proposal_not_open", `this proposal is ${write.state}, not waiting for a decision`);
      if (!sameCustomer(write, event.actor)) return refuse("not_your_proposal", "only the customer the proposal was made for can decline it");
      return { ok: true, to: "declined", effects: [{ type: "tell" }] };
    case "verified":
      if (write.subjectId !== null && write.subjectId !== event.subjectId && (write.state === "proposed" || write.state === "step_up_required")) {
        // A different customer verified in the conversation: the write does not run.
        return { ok: true, to: "cancelled", effects: [{ type: "tell" }] };
      }
      if (write.state === "step_up_required" && event.satisfiesStepUp) return { ok: true, to: "running", effects: [{ type: "run" }] };
      return refuse("no_change", "nothing to do for this write");
    case "finished":
      if (write.state !== "running") return refuse("not_running", `this write is ${write.state}, not running`);
      return afterRun(event.outcome);
    case "checked":
      if (write.state !== "pending" && write.state !== "unknown") return refuse("not_checkable", `this write is ${write.state}; only pending and unknown writes are checked`);
      return afterCheck(write, event.outcome);
    case "expire":
      // A write waiting for step-up was refused by its tool before it acted: nothing was applied, so it expires too.
      if (write.state !== "proposed" && write.state !== "step_up_required") return refuse("proposal_not_open", `this proposal is ${write.state}`);
      return { ok: true, to: "expired", effects: [{ type: "tell" }] };
  }
}

/** The write that stops the model from starting another one in this conversation, if any. */
export function blockingWrite<T extends Pick<WriteRecord, "state">>(writes: readonly T[]): T | undefined {
  return writes.find((write) => UNRESOLVED_WRITE_STATES.includes(write.state));
}

/** Why the model cannot start another write now, as the tool error it gets. */
export function blockedMessage(state: WriteState, toolRef: string): string {
  switch (state) {
    case "proposed":
      return `write_blocked: an earlier write (${toolRef}) still waits for the customer's decision. Another write cannot start until the customer confirms or declines it; ask them to use the review card.`;
    case "step_up_required":
      return `write_blocked: an earlier write (${toolRef}) waits for the customer to verify again. Another write cannot start until then.`;
    case "pending":
    case "unknown":
      return `write_blocked: the outcome of an earlier write (${toolRef}) is not confirmed yet (${state}). Another write cannot start until it is resolved; tell the customer it is not confirmed and not to send it again.`;
    default:
      return `write_blocked: an earlier write (${toolRef}) is still ${state}. Another write cannot start until it ends.`;
  }
}

/** The gap before status check `index` (0-based): growing, base × 2^index (5 s, 10 s, 20 s ... by default). */
export function checkDelay(index: number, baseMs: number): number {
  return baseMs * 2 ** Math.min(index, 20);
}

/**
 * What a ledger change needs beyond the decision: the clock, the status-check base gap, whether the tool
 * answers status checks, and the node that runs the write (recovery only touches its own node's writes).
 */
export type LedgerContext = { now: number; checkBaseMs: number; hasStatus: boolean; nodeId: string };

/** A decision with the whole ledger change it makes and the compare-and-set that must hold to store it. */
export type LedgerPlan = { ok: true; to: WriteState; effects: Effect[]; change: WriteChange; expect: WriteExpectation } | { ok: false; code: string; message: string };

/**
 * Decide an event and give the whole ledger change: the new state, every field it sets, and the condition
 * of its compare-and-set (the state the write was read in; for a status check also its count, so two nodes'
 * answers to one check land once). The engine stores exactly this, with what announces it.
 */
export function planChange(write: PolicyWrite, event: PolicyEvent, context: LedgerContext): LedgerPlan {
  const decision = decide(write, event);
  if (!decision.ok) return decision;
  const expect: WriteExpectation = { states: [write.state], ...(event.type === "checked" && { checkCount: write.checkCount }) };
  return { ...decision, change: ledgerChange(write, event, decision, context), expect };
}

/**
 * The whole ledger change of a decision: the state and every field it sets (the outcome's result, the
 * operation reference, the step-up, the next status check or the team's follow-up list). The engine stores
 * exactly this, by compare-and-set, with what announces it.
 */
export function ledgerChange(write: PolicyWrite, event: PolicyEvent, decision: Extract<Decision, { ok: true }>, context: LedgerContext): WriteChange {
  const change: WriteChange = { state: decision.to };
  const outcome = event.type === "finished" || event.type === "checked" ? event.outcome : undefined;
  const settled = decision.to === "applied" || decision.to === "not_applied";
  if (event.type === "checked") {
    change.checkCount = write.checkCount + 1;
    change.checkLeaseUntil = null;
    change.note = `status check ${write.checkCount + 1}: ${event.outcome.outcome}`;
    const result = toResult(event.outcome);
    if (result && settled) change.result = result;
  } else if (outcome) {
    const result = toResult(outcome);
    if (result) change.result = result;
    if (outcome.outcome === "step_up_required") change.stepUp = outcome.stepUp;
  }
  if (outcome?.outcome === "pending" && outcome.operationRef) change.operationRef = outcome.operationRef;
  const schedule = decision.effects.find((effect) => effect.type === "schedule_check");
  if (schedule?.type === "schedule_check") {
    if (context.hasStatus) {
      change.nextCheckAt = context.now + checkDelay(schedule.index, context.checkBaseMs);
      change.checkLeaseUntil = null;
    } else {
      // No status check to ask: straight to the team's follow-up list.
      change.nextCheckAt = null;
      change.followUp = true;
    }
  }
  if (decision.effects.some((effect) => effect.type === "follow_up")) {
    change.followUp = true;
    change.nextCheckAt = null;
    change.checkLeaseUntil = null;
  }
  if (event.type === "checked" && settled) change.nextCheckAt = null;
  if (event.type === "confirm") {
    if (event.finalArgs !== undefined) change.finalArgs = event.finalArgs;
    if (event.idempotencyKey !== undefined) change.idempotencyKey = event.idempotencyKey;
    change.nodeId = context.nodeId;
    change.note = "confirmed by the customer";
  }
  if (event.type === "verified" && decision.to === "running") {
    change.stepUp = null;
    change.nodeId = context.nodeId;
    change.note = "step-up satisfied";
  }
  if (event.type === "expire") change.note = write.state === "step_up_required" ? "expired: the customer did not verify again in time" : "expired: not decided in time";
  return change;
}

/** A write as it stands once a change is stored at `at` (what the store's compare-and-set returns when it lands). */
export function changedWrite(write: WriteRecord, change: WriteChange, at: number): WriteRecord {
  const next: WriteRecord = { ...write, state: change.state, updatedAt: at };
  if (change.finalArgs !== undefined) next.finalArgs = change.finalArgs;
  if (change.idempotencyKey !== undefined) next.idempotencyKey = change.idempotencyKey;
  if (change.operationRef !== undefined) next.operationRef = change.operationRef;
  if (change.checkCount !== undefined) next.checkCount = change.checkCount;
  if (change.nextCheckAt !== undefined) next.nextCheckAt = change.nextCheckAt;
  if (change.checkLeaseUntil !== undefined) next.checkLeaseUntil = change.checkLeaseUntil;
  if (change.result !== undefined) next.result = change.result;
  if (change.stepUp !== undefined) next.stepUp = change.stepUp;
  if (change.followUp !== undefined) next.followUp = change.followUp;
  if (change.nodeId !== undefined) next.nodeId = change.nodeId;
  return next;
}

/** What the ledger keeps of an outcome (a step-up is kept as the write's stepUp, not as a result). */
export function toResult(outcome: WriteOutcome): WriteResult | undefined {
  switch (outcome.outcome) {
    case "applied":
      return { outcome: "applied", text: outcome.text, ...(outcome.structuredContent && { structuredContent: outcome.structuredContent }) };
    case "not_applied":
      return { outcome: "not_applied", message: outcome.message };
    case "pending":
      return { outcome: "pending", ...(outcome.message && { message: outcome.message }) };
    case "unknown":
      return { outcome: "unknown", reason: outcome.reason };
    case "step_up_required":
      return undefined;
  }
}
