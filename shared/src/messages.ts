// Channel-neutral messages: what the engine says to a customer (outbound) and what a customer does
// (inbound), whatever the channel. The widget gateway and every channel adapter translate these and
// nothing else. Everything here is already safe to show: presentation applied, last4 masked, items
// projected to their listed columns, secrets and operationRefs never included.
import { z } from "zod";
import * as L from "./limits.ts";

const id = z.string().min(1).max(200);
const primitive = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** A review card's field: the presentation field with the proposed value, masked when display is last4. */
export const reviewFieldSchema = z.object({
  path: z.string(),
  label: z.string(),
  display: z.enum(L.DISPLAYS),
  /** The value as shown: the whole value for plain, only the final four characters for last4. */
  value: z.string(),
  editable: z.boolean(),
  input: z.enum(L.FIELD_INPUTS).optional(),
  options: z.array(z.object({ value: z.string(), label: z.string() })).optional(),
});
export type ReviewField = z.infer<typeof reviewFieldSchema>;

export const displayFieldSchema = z.object({ label: z.string(), value: z.string() });
export type DisplayField = z.infer<typeof displayFieldSchema>;

/** Where a proposed write stands, as the customer is told. */
export const PROPOSAL_STATES = [
  "proposed",
  "running",
  "applied",
  "not_applied",
  "pending",
  "unknown",
  "declined",
  "cancelled",
  "expired",
  "step_up_required",
] as const;
export type ProposalState = (typeof PROPOSAL_STATES)[number];

export const resultColumnSchema = z.object({
  key: z.string(),
  label: z.string(),
  display: z.enum(L.DISPLAYS),
  role: z.enum(L.COLUMN_ROLES).optional(),
  /** A money column's ISO 4217 code, fixed, or the item key that holds it. */
  currency: z.object({ code: z.string().optional(), key: z.string().optional() }).optional(),
  statuses: z.record(z.string(), z.enum(L.TIMELINE_STATES)).optional(),
});
export const resultActionSchema = z.object({
  kind: z.enum(L.ACTION_KINDS),
  label: z.string(),
  template: z.string().optional(),
  /** For a link: the item key holding the https URL. */
  key: z.string().optional(),
});
export type ResultColumn = z.infer<typeof resultColumnSchema>;
export type ResultAction = z.infer<typeof resultActionSchema>;

export const outboundSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), id, from: z.enum(["customer", "agent", "team", "system"]), text: z.string() }),
  z.object({
    type: z.literal("progress"),
    id,
    callId: id,
    state: z.enum(["start", "end"]),
    label: z.string().optional(),
    spoken: z.string().optional(),
  }),
  z.object({
    type: z.literal("review"),
    id,
    proposalId: id,
    /** `package/tool`, for the customer's reference only. */
    tool: z.string(),
    title: z.string(),
    fields: z.array(reviewFieldSchema),
    state: z.enum(PROPOSAL_STATES),
  }),
  z.object({
    type: z.literal("outcome"),
    id,
    proposalId: id,
    state: z.enum(PROPOSAL_STATES),
    /**
     * The write's title as the customer knows it (its review card's, or the tool's name in words): what a
     * write with no card (confirmation none) is called where its outcome is shown.
     */
    title: z.string().optional(),
    /** The customer-facing sentence (the reason for not_applied, "not confirmed yet" for pending and unknown). */
    message: z.string(),
    receipt: z.array(displayFieldSchema).optional(),
  }),
  z.object({
    type: z.literal("result"),
    id,
    callId: id,
    layout: z.enum(L.LAYOUTS),
    title: z.string(),
    columns: z.array(resultColumnSchema),
    /** Items projected to the listed columns only (a detail or page has exactly one). */
    items: z.array(z.record(z.string(), primitive)),
    actions: z.array(resultActionSchema).optional(),
    page: z
      .object({ label: z.string(), display: z.enum(L.PAGE_DISPLAYS), origins: z.array(z.string()), urlKey: z.string().optional() })
      .optional(),
  }),
  z.object({
    type: z.literal("question"),
    id,
    elicitationId: id,
    style: z.enum(L.ELICITATION_STYLES),
    message: z.string(),
    /** form: the requested fields; questions: exactly one field with its options. */
    fields: z.array(
      z.object({
        name: z.string(),
        title: z.string().optional(),
        description: z.string().optional(),
        kind: z.enum(["string", "number", "integer", "boolean", "choice"]),
        required: z.boolean(),
        options: z.array(z.object({ value: z.string(), label: z.string() })).optional(),
        minLength: z.number().optional(),
        maxLength: z.number().optional(),
        minimum: z.number().optional(),
        maximum: z.number().optional(),
        format: z.string().optional(),
      }),
    ),
  }),
  z.object({ type: z.literal("file"), id, name: z.string(), mimeType: z.enum(L.FILE_TYPES), size: z.int(), url: z.string() }),
  z.object({ type: z.literal("handoff"), id, state: z.enum(["requested", "taken", "released"]), text: z.string() }),
  z.object({
    type: z.literal("step_up"),
    id,
    level: z.enum(L.STEP_UP_LEVELS),
    maxAuthAgeSeconds: z.int().optional(),
    proposalId: id.optional(),
    text: z.string(),
  }),
]);
export type Outbound = z.infer<typeof outboundSchema>;
export type OutboundOf<T extends Outbound["type"]> = Extract<Outbound, { type: T }>;

/**
 * Names that would reach an object's prototype if used as a key (`obj["__proto__"] = ...`). An edit keyed by
 * one, or with one as a segment of its path, is refused: JSON.parse keeps `"__proto__"` as an own key, but a
 * record schema would drop it silently and the confirm would run without the edit the customer asked for.
 */
export const FORBIDDEN_KEYS = ["__proto__", "constructor", "prototype"] as const;
const FORBIDDEN = new Set<string>(FORBIDDEN_KEYS);

/** The first forbidden key in `value` (any depth, own keys as JSON.parse made them), as a path, else undefined. */
export function forbiddenKeyPath(value: unknown, depth = 0): string[] | undefined {
  if (!value || typeof value !== "object" || depth > 8) return undefined;
  for (const key of Object.keys(value)) {
    if (FORBIDDEN.has(key) || key.split(/[/.]/).some((segment) => FORBIDDEN.has(segment))) return [key];
    const inner = forbiddenKeyPath((value as Record<string, unknown>)[key], depth + 1);
    if (inner) return [key, ...inner];
  }
  return undefined;
}

/** New values of editable string fields, by presentation path; a forbidden key anywhere is refused (see FORBIDDEN_KEYS). */
const editsSchema = z.preprocess(
  (value, ctx) => {
    const path = forbiddenKeyPath(value);
    if (path) ctx.issues.push({ code: "custom", path, input: value, message: `${path.at(-1)} is not a field that can be edited` });
    return value;
  },
  z.record(z.string(), z.string().max(L.OPTION_VALUE_MAX)),
);

/** A visitor's rating of one of the agent's replies (thumbs up or down). */
export const RATINGS = ["up", "down"] as const;
export type Rating = (typeof RATINGS)[number];

/** What a customer does, from any channel. Only `confirm` from the customer's own client runs a write. */
export const inboundSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("message"), text: z.string().min(1).max(L.MESSAGE_TEXT_MAX) }),
  z.object({
    type: z.literal("confirm"),
    proposalId: id,
    /** New values of editable string fields, by presentation path. */
    edits: editsSchema.optional(),
  }),
  z.object({ type: z.literal("decline"), proposalId: id }),
  z.object({
    type: z.literal("answer"),
    elicitationId: id,
    action: z.enum(["accept", "decline", "cancel"]),
    content: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  }),
]);
export type Inbound = z.infer<typeof inboundSchema>;
