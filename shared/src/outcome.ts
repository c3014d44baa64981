// Write outcomes, step-up and the MCP metadata that carries them between a tool package and Caplo.
// The SDK re-exports the constants; the runner parses what packages send with these schemas.
import { z } from "zod";
import * as L from "./limits.ts";

/** The `_meta` key of a write result's outcome. */
export const EFFECT_META_KEY = "si.caplo/effect";
/** The `_meta` key of a step-up requirement (the call applied nothing). */
export const STEP_UP_META_KEY = "si.caplo/step-up";
/** The `_meta` key of the per-call context (secrets, deadline, idempotency key, ids, subject). */
export const CALL_META_KEY = "si.caplo/call";
/** The `_meta` key under which the runner reports files it took out of a result. */
export const FILES_META_KEY = "si.caplo/files";
/** Spread into `capabilities.experimental`: the server reports outcomes in `_meta[EFFECT_META_KEY]`. */
export const EFFECT_OUTCOME_CAPABILITY = { "si.caplo/effect-outcome": { version: 1 } } as const;
/** Spread into `capabilities.experimental`: the server answers STATUS_METHOD requests. */
export const OPERATION_STATUS_CAPABILITY = { "si.caplo/operation-status": { version: 1 } } as const;
/** The request a status check sends to an MCP package: params `name` and `operationRef`. */
export const STATUS_METHOD = "caplo/status";

export const OUTCOMES = ["applied", "not_applied", "pending", "unknown"] as const;
export type OutcomeKind = (typeof OUTCOMES)[number];

export const operationRefSchema = z
  .string()
  .regex(L.OPERATION_REF_PATTERN, "operationRef must be 1 to 256 printable ASCII characters");

/** What an MCP write result carries in `_meta[EFFECT_META_KEY]`. */
export const effectMetaSchema = z.discriminatedUnion("outcome", [
  z.object({ version: z.literal(1), outcome: z.literal("applied") }),
  z.object({ version: z.literal(1), outcome: z.literal("not_applied") }),
  z.object({ version: z.literal(1), outcome: z.literal("pending"), operationRef: operationRefSchema.optional() }),
]);
export type EffectMeta = z.infer<typeof effectMetaSchema>;

export const stepUpSchema = z.strictObject({
  level: z.enum(L.STEP_UP_LEVELS),
  maxAuthAgeSeconds: z.int().min(L.MAX_AUTH_AGE_SECONDS_MIN).max(L.MAX_AUTH_AGE_SECONDS_MAX).optional(),
});
export type StepUp = z.infer<typeof stepUpSchema>;
export type StepUpLevel = (typeof L.STEP_UP_LEVELS)[number];

/** The params of a STATUS_METHOD request. */
export const statusParamsSchema = z.object({
  name: z.string(),
  operationRef: operationRefSchema.optional(),
  _meta: z.record(z.string(), z.unknown()).optional(),
});

/** The verified customer a subject-aware tool acts for. Never comes from the model. */
export const callSubjectSchema = z.object({
  /** Stable id of the verified customer in the owner's system (the identity token's `sub`). */
  id: z.string().min(1),
  /** The resource reference the runner fills into the tool's `selector` property. */
  ref: z.string().min(1).optional(),
  /** How strongly the customer verified, and when (ISO 8601). */
  level: z.enum(L.STEP_UP_LEVELS),
  authTime: z.string(),
  /** The channel identity, for messaging apps (for example whatsapp:+15551234567). */
  channel: z.string().optional(),
  claims: z.record(z.string(), z.unknown()).optional(),
});
export type CallSubject = z.infer<typeof callSubjectSchema>;

/** The per-call context the runner sends in `_meta[CALL_META_KEY]` of every tools/call and status request. */
export const callMetaSchema = z.object({
  invocationId: z.string(),
  /** ISO 8601: when the call times out. */
  deadline: z.string(),
  secrets: z.record(z.string(), z.string()),
  idempotencyKey: z.string().optional(),
  conversationId: z.string().optional(),
  turnId: z.string().optional(),
  workspaceId: z.string().optional(),
  packageVersionId: z.string().optional(),
  subject: callSubjectSchema.optional(),
  canElicit: z.boolean().optional(),
});
export type CallMeta = z.infer<typeof callMetaSchema>;

/** What the runner records for one finished write attempt or status check. */
export type WriteOutcome =
  | { outcome: "applied"; structuredContent?: Record<string, unknown>; text: string }
  | { outcome: "not_applied"; message: string }
  | { outcome: "pending"; operationRef?: string; message?: string }
  | { outcome: "unknown"; reason: string }
  | { outcome: "step_up_required"; stepUp: StepUp };
