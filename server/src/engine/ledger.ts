// The write ledger as the engine defines it: where a write stands (its states), what it records (the
// write row, its result) and how a change of it is expressed (the fields a transition sets, the
// compare-and-set it expects, the transition history). The pure policy (writePolicy.ts) decides changes in
// these terms; the store keeps them.
import type { StepUp } from "@caplo/shared";

/** Where a write stands in the ledger. */
export const WRITE_STATES = [
  "proposed",
  "confirmed",
  "running",
  "applied",
  "not_applied",
  "pending",
  "unknown",
  "step_up_required",
  "declined",
  "cancelled",
  "expired",
] as const;
export type WriteState = (typeof WRITE_STATES)[number];

/** States in which a write blocks the conversation's next write ("still waits for a decision, or its outcome is unknown"). */
export const UNRESOLVED_WRITE_STATES: readonly WriteState[] = ["proposed", "confirmed", "running", "pending", "unknown", "step_up_required"];
/** States a status check may ask about. */
export const CHECKABLE_WRITE_STATES: readonly WriteState[] = ["pending", "unknown"];

/** What a write returned, as kept in the ledger (never operationRef: that has its own column). */
export type WriteResult =
  | { outcome: "applied"; text: string; structuredContent?: Record<string, unknown> }
  | { outcome: "not_applied"; message: string }
  | { outcome: "pending"; message?: string }
  | { outcome: "unknown"; reason: string };

export type WriteRecord = {
  /** The proposal id the customer confirms or declines. */
  id: string;
  conversationId: string;
  turnId: string;
  /** The model's tool call id. */
  callId: string;
  /** `package/tool`. */
  toolRef: string;
  modelName: string;
  packageVersionId: string;
  tool: string;
  /** The exact arguments the model proposed. */
  args: Record<string, unknown>;
  /** The arguments that run: the proposal plus the customer's allowed edits. Set at confirm. */
  finalArgs: Record<string, unknown> | null;
  state: WriteState;
  confirmation: "required" | "none";
  /** Only this owner may confirm or decline. */
  ownerId: string;
  /** The verified customer the proposal was made for, if any. */
  subjectId: string | null;
  /** Random, set once at confirm; the same for every attempt and status check. */
  idempotencyKey: string | null;
  operationRef: string | null;
  checkCount: number;
  nextCheckAt: number | null;
  checkLeaseUntil: number | null;
  result: WriteResult | null;
  stepUp: StepUp | null;
  /** Still unresolved after the last status check: listed for the team. */
  followUp: boolean;
  /** The server node that ran it (recovery only touches its own node's writes). */
  nodeId: string | null;
  createdAt: number;
  updatedAt: number;
};

export type NewWrite = Omit<
  WriteRecord,
  "finalArgs" | "idempotencyKey" | "operationRef" | "checkCount" | "nextCheckAt" | "checkLeaseUntil" | "result" | "stepUp" | "followUp" | "nodeId" | "updatedAt"
>;

/** The fields a transition may set; `state` always. Undefined fields stay as they are; null clears. */
export type WriteChange = {
  state: WriteState;
  finalArgs?: Record<string, unknown>;
  idempotencyKey?: string;
  operationRef?: string | null;
  checkCount?: number;
  nextCheckAt?: number | null;
  checkLeaseUntil?: number | null;
  result?: WriteResult | null;
  stepUp?: StepUp | null;
  followUp?: boolean;
  nodeId?: string | null;
  /** Kept in the transition history only. */
  note?: string;
};

/** The condition of a compare-and-set: the write must be in this state (and have this check count). */
export type WriteExpectation = { states: readonly [WriteState]; checkCount?: number };

export type WriteTransition = { writeId: string; at: number; from: WriteState; to: WriteState; note: string | null };

