// The EventBus contract: a small "conversation X has events up to seq N" notice that reaches every node
// holding a subscriber for X, whichever node produced the events.
//
// The store stays the source of truth. A notice carries no event, only the highest sequence number
// written; a subscriber reads what it has not sent yet from the store. So a lost, repeated or reordered
// notice never loses or duplicates an event: at worst it delays one until the next notice or poll.
import { z } from "zod";

/** What a conversation id may be on the bus (the store's ids are far shorter; this only bounds input). */
export const BUS_CONVERSATION_ID_MAX = 200;
export const conversationIdSchema = z
  .string()
  .min(1)
  .max(BUS_CONVERSATION_ID_MAX)
  .regex(/^[\x21-\x7E]+$/, "printable ASCII without spaces");

/** The notice itself: events up to and including `seq` are in the store. */
export const busNoticeSchema = z.object({ seq: z.int().min(1).max(Number.MAX_SAFE_INTEGER) }).strict();
export type BusNotice = z.infer<typeof busNoticeSchema>;

/** Called with the conversation and the highest seq known to be stored. Never awaited by the bus. */
export type BusListener = (conversationId: string, notice: BusNotice) => void;

/**
 * Returned by `subscribe`: call it to stop listening (idempotent). `ready` resolves once notices
 * published from now on will reach this listener (Redis SUBSCRIBE / PostgreSQL LISTEN acknowledged, or
 * the store is being polled because the transport is down). It never rejects.
 * Subscribe first, await `ready`, then read the store's backlog: nothing can fall in between.
 */
export type Unsubscribe = { (): void; readonly ready: Promise<void> };

export type BusTransport = "memory" | "redis" | "postgres";

/**
 * - `healthy`: notices travel over the transport.
 * - `degraded`: the transport is down; the bus reconnects in the background and meanwhile polls the
 *   store every `pollIntervalMs` for the conversations subscribed on this node, so events are still
 *   delivered, later. Notices this node publishes reach only its own subscribers until it recovers.
 * - `closed`: `close()` was called.
 */
export type BusHealth = {
  transport: BusTransport;
  state: "healthy" | "degraded" | "closed";
  /** When the state last changed (ms since the epoch). */
  since: number;
  /** Why the bus is degraded (the transport's last error), absent when healthy. */
  reason?: string;
  /** True while the store is polled instead of the transport. */
  polling: boolean;
};

export type BusErrorCode = "bus_notice_invalid" | "bus_unavailable" | "bus_closed";
export type BusError = { code: BusErrorCode; path: string; message: string };

/** `publish` never throws: a failed notice is a value, and the caller carries on (the store has it). */
export type PublishResult = { ok: true } | { ok: false; error: BusError };

/**
 * The store query the bus falls back to while its transport is down: for each given conversation, the
 * highest event seq stored (conversations without events may be left out). Must not throw for a
 * missing conversation; may reject when the store itself is unreachable (the bus retries next interval).
 */
export type LatestSeqs = (conversationIds: readonly string[]) => Promise<ReadonlyMap<string, number>>;

export interface EventBus {
  readonly transport: BusTransport;
  /** Tell every node that `conversationId` has events up to `notice.seq`. Local subscribers first. */
  publish(conversationId: string, notice: BusNotice): Promise<PublishResult>;
  /** Listen for notices about one conversation on this node. */
  subscribe(conversationId: string, listener: BusListener): Unsubscribe;
  health(): BusHealth;
  /** Stop listening, polling and reconnecting; release connections. Idempotent. */
  close(): Promise<void>;
}

/** Parse what a caller hands to `publish`, as a `{ code, path, message }` value on failure. */
const CONVERSATION_ID_PATTERN = /^[\x21-\x7E]+$/;

/**
 * A notice as the engine publishes it (an id it stored, a seq the store gave): checked without a schema
 * parse. Anything else goes through the schemas, which say what is wrong.
 */
function plainNotice(conversationId: unknown, notice: unknown): notice is BusNotice {
  if (typeof conversationId !== "string" || conversationId.length === 0 || conversationId.length > BUS_CONVERSATION_ID_MAX || !CONVERSATION_ID_PATTERN.test(conversationId)) return false;
  if (typeof notice !== "object" || notice === null || Object.getPrototypeOf(notice) !== Object.prototype) return false;
  let keys = 0;
  for (const key in notice) if (++keys > 1 || key !== "seq") return false;
  const seq = (notice as { seq?: unknown }).seq;
  return typeof seq === "number" && Number.isSafeInteger(seq) && seq >= 1;
}

export function parsePublish(conversationId: unknown, notice: unknown): { ok: true; conversationId: string; notice: BusNotice } | { ok: false; error: BusError } {
  if (plainNotice(conversationId, notice)) return { ok: true, conversationId: conversationId as string, notice };
  const id = conversationIdSchema.safeParse(conversationId);
  if (!id.success) {
    return { ok: false, error: { code: "bus_notice_invalid", path: "conversationId", message: `conversation id: ${id.error.issues[0]?.message ?? "invalid"}` } };
  }
  const parsed = busNoticeSchema.safeParse(notice);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = ["notice", ...(issue?.path ?? []).map(String)].join(".");
    return { ok: false, error: { code: "bus_notice_invalid", path, message: issue?.message ?? "invalid notice" } };
  }
  return { ok: true, conversationId: id.data, notice: parsed.data };
}

/** Bounds for the degraded polling interval: never hammer the store, never wait longer than a minute. */
export const POLL_INTERVAL_MIN_MS = 50;
export const POLL_INTERVAL_MAX_MS = 60_000;
export const POLL_INTERVAL_DEFAULT_MS = 1_000;

/** While healthy, a look at the store this often catches a notice another node could not send. */
export const SAFETY_POLL_MIN_MS = 1_000;
export const SAFETY_POLL_MAX_MS = 600_000;
export const SAFETY_POLL_DEFAULT_MS = 30_000;

/** 0 turns the safety poll off; anything else is kept within its bounds. */
export function clampSafetyPoll(ms: number | undefined): number {
  if (ms === 0) return 0;
  if (ms === undefined || !Number.isFinite(ms)) return SAFETY_POLL_DEFAULT_MS;
  return Math.min(SAFETY_POLL_MAX_MS, Math.max(SAFETY_POLL_MIN_MS, Math.round(ms)));
}

export function clampPollInterval(ms: number | undefined): number {
  if (ms === undefined || !Number.isFinite(ms)) return POLL_INTERVAL_DEFAULT_MS;
  return Math.min(POLL_INTERVAL_MAX_MS, Math.max(POLL_INTERVAL_MIN_MS, Math.round(ms)));
}

export function closedResult(): PublishResult {
  return { ok: false, error: { code: "bus_closed", path: "", message: "the event bus is closed" } };
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
