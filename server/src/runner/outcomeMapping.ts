// Maps what a package answered to a write outcome, exactly as the seeds say: a returned value is
// applied, rejected is not applied, pending is pending, and a throw, timeout, crash, invalid
// operationRef or missing/contradictory metadata is unknown. Step-up applies nothing.
import {
  EFFECT_META_KEY,
  STEP_UP_META_KEY,
  effectMetaSchema,
  operationRefSchema,
  stepUpSchema,
  type StepUp,
  type WriteOutcome,
} from "@caplo/shared";

/** The parts of an MCP CallToolResult the mapping reads. */
export type ResultShape = {
  isError?: boolean;
  text: string;
  structuredContent?: Record<string, unknown>;
  meta?: Record<string, unknown>;
};

/** A step-up requirement in the result's metadata, if there is a valid one. */
export function readStepUp(meta: Record<string, unknown> | undefined): StepUp | undefined {
  const raw = meta?.[STEP_UP_META_KEY];
  if (raw === undefined) return undefined;
  const parsed = stepUpSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The outcome of a write call. `effectOutcomes` is whether the server advertised
 * EFFECT_OUTCOME_CAPABILITY (always true for function packages); without it the metadata is not trusted
 * and an error result is unknown.
 */
export function mapWriteResult(result: ResultShape, effectOutcomes: boolean): WriteOutcome {
  const stepUp = readStepUp(result.meta);
  if (stepUp) return { outcome: "step_up_required", stepUp };
  if (result.meta?.[STEP_UP_META_KEY] !== undefined) return { outcome: "unknown", reason: "invalid step-up metadata" };
  const raw = effectOutcomes ? result.meta?.[EFFECT_META_KEY] : undefined;
  if (raw === undefined) {
    if (result.isError) return { outcome: "unknown", reason: result.text || "the tool returned an error" };
    return applied(result);
  }
  return mapEffectMeta(raw, result);
}

function applied(result: ResultShape): WriteOutcome {
  return { outcome: "applied", text: result.text, ...(result.structuredContent && { structuredContent: result.structuredContent }) };
}

/** Maps `_meta[EFFECT_META_KEY]`; anything invalid or contradicting isError is unknown. */
export function mapEffectMeta(raw: unknown, result: ResultShape): WriteOutcome {
  const kind = (raw as { outcome?: unknown } | null)?.outcome;
  if (kind === "pending") {
    const ref = (raw as { operationRef?: unknown }).operationRef;
    if (ref !== undefined && !operationRefSchema.safeParse(ref).success) {
      return { outcome: "unknown", reason: "pending with an invalid operationRef (1 to 256 printable ASCII characters)" };
    }
  }
  const parsed = effectMetaSchema.safeParse(raw);
  if (!parsed.success) return { outcome: "unknown", reason: "invalid outcome metadata" };
  const meta = parsed.data;
  if (meta.outcome === "applied") {
    return result.isError ? { outcome: "unknown", reason: "an error result claimed applied" } : applied(result);
  }
  if (meta.outcome === "not_applied") return { outcome: "not_applied", message: result.text || "The change was not made." };
  if (result.isError) return { outcome: "unknown", reason: "an error result claimed pending" };
  return { outcome: "pending", ...(meta.operationRef && { operationRef: meta.operationRef }), ...(result.text && { message: result.text }) };
}

/**
 * The outcome of one status check: only applied, rejected or pending answers count; a throw, an error
 * result or any other value leaves the write unknown.
 */
export function mapStatusResult(result: ResultShape | undefined): WriteOutcome {
  if (!result) return { outcome: "unknown", reason: "no answer" };
  const raw = result.meta?.[EFFECT_META_KEY];
  if (raw === undefined) {
    return { outcome: "unknown", reason: result.isError ? result.text || "the status check failed" : "the status check returned no outcome" };
  }
  const mapped = mapEffectMeta(raw, result);
  return mapped;
}
