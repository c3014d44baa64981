// What a handler or status check returns besides a plain value: applied, rejected, pending and
// stepUpRequired, each a tagged object the tool wrapper turns into MCP result metadata.
import { OPERATION_REF_PATTERN, STEP_UP_LEVELS } from "@caplo/shared/limits";
import { stepUpSchema, type StepUp } from "@caplo/shared/outcome";

/** Tags the outcome objects; Symbol.for so two copies of the SDK in one process agree. */
export const OUTCOME_TAG: unique symbol = Symbol.for("si.caplo/tools.outcome") as never;

export type Applied<T> = { readonly [OUTCOME_TAG]: "applied"; readonly result: T };
export type Rejected = { readonly [OUTCOME_TAG]: "not_applied"; readonly message: string };
export type Pending = { readonly [OUTCOME_TAG]: "pending"; readonly operationRef: string; readonly message?: string };
export type StepUpRequired = { readonly [OUTCOME_TAG]: "step_up_required"; readonly stepUp: StepUp };
export type Outcome<T> = Applied<T> | Rejected | Pending | StepUpRequired;

/** The change happened; `result` is the tool result (the same as returning the value itself). */
export function applied<T>(result: T): Applied<T> {
  return { [OUTCOME_TAG]: "applied", result };
}

/** The provider definitely did not make the change. When in doubt, throw instead. */
export function rejected(message: string): Rejected {
  if (typeof message !== "string" || message.trim() === "") throw new TypeError("rejected(message) needs a non-empty message for the customer");
  return { [OUTCOME_TAG]: "not_applied", message };
}

/**
 * The provider accepted the change but has not finished it. operationRef is your reference for status
 * checks: 1 to 256 printable ASCII characters; anything else throws (and a throw leaves the write unknown).
 */
export function pending(operationRef: string, message?: string): Pending {
  if (typeof operationRef !== "string" || !OPERATION_REF_PATTERN.test(operationRef)) {
    throw new TypeError(`pending(operationRef): operationRef must be 1 to 256 printable ASCII characters, got ${describe(operationRef)}`);
  }
  if (message !== undefined && typeof message !== "string") throw new TypeError("pending(operationRef, message): message must be a string");
  return message === undefined ? { [OUTCOME_TAG]: "pending", operationRef } : { [OUTCOME_TAG]: "pending", operationRef, message };
}

/** The customer must verify again (at `level`, within `maxAuthAgeSeconds`). The call applies nothing. */
export function stepUpRequired(stepUp: StepUp): StepUpRequired {
  const parsed = stepUpSchema.safeParse(stepUp);
  if (!parsed.success) {
    throw new TypeError(`stepUpRequired: level must be ${STEP_UP_LEVELS.join(", ")} and maxAuthAgeSeconds an integer from 0 to 86400`);
  }
  return { [OUTCOME_TAG]: "step_up_required", stepUp: parsed.data };
}

/** Which outcome a value is, if it is one of the tagged objects above. */
export function outcomeOf(value: unknown): Outcome<unknown> | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const tag = (value as { [OUTCOME_TAG]?: unknown })[OUTCOME_TAG];
  return tag === "applied" || tag === "not_applied" || tag === "pending" || tag === "step_up_required" ? (value as Outcome<unknown>) : undefined;
}

function describe(value: unknown): string {
  if (typeof value !== "string") return typeof value;
  if (value.length === 0) return "an empty string";
  if (value.length > 256) return `${value.length} characters`;
  return "a string with non-printable or non-ASCII characters";
}
