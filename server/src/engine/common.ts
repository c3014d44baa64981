// What the engine's parts share: ids, the result type and its errors as values, the notes that end a turn,
// and the customer-visible events more than one part builds (progress, step-up).
import { randomFillSync } from "node:crypto";
import type { CallSubject, ChannelCapabilities, ChannelKind, Outbound, OutboundOf, StepUp } from "@caplo/shared";
import type { ModelMessage, ModelToolCall } from "../model/model.ts";
import type { ConversationRecord } from "../store/store.ts";
import type { Problem } from "./presentation.ts";
import type { EngineTool } from "./release.ts";

/** Where the gateway serves delivered files: `${FILES_PATH}/<id>` (the id is random and unguessable). */
export const FILES_PATH = "/v1/files";
/** Recent conversations whose latest events and transcripts are kept in memory. */
export const RECENT_CONVERSATIONS = 2000;

/** Tool results that end a turn (a resumed turn that stored one is not run again). */
export const PROPOSED_PREFIX = "proposed:";
export const HANDED_OFF_PREFIX = "handed_off:";
export const HANDED_OFF_NOTE = `${HANDED_OFF_PREFIX} the conversation is now with the team. Say nothing more.`;
/** The result of a tool call whose node was killed before it finished (a read; no write was stored for it). */
export const INTERRUPTED_NOTE = "interrupted: this call did not finish (the server restarted) and its result is lost; nothing was proposed or changed. You may call it again.";
export const proposedNote = (toolRef: string, writeId: string) =>
  `${PROPOSED_PREFIX} the customer sees a review card for ${toolRef} (proposal ${writeId}). It runs only if the customer confirms it on the card; their typed text cannot confirm it. Do not call it again.`;

/** The model-facing name of the built-in handoff tool (no `__`, so it never clashes with a package tool). */
export const HANDOFF_TOOL = "handoff_to_team";

/** Ids of history events recording a message the customer never received: kept for the team, never sent. */
export const UNDELIVERED_NOTE_PREFIX = "undelivered_";

export type EngineResult = { ok: true } | { ok: false; error: Problem };
/** A value the engine answers with, or its refusal (a coded error as a value). */
export type EngineValue<T> = { ok: true; value: T } | { ok: false; error: Problem };

export type OpenConversation = {
  /** The agent's reference: its name, or `<workspace>/<name>` for another workspace than default (agentRef). */
  agent: string;
  channel: ChannelKind;
  capabilities: ChannelCapabilities;
  ownerId: string;
  externalId?: string | null;
  resumeHash?: string | null;
  subject?: CallSubject | null;
};

/**
 * Where an inbound came from: a platform event (`sourceId`, `whatsapp:SM…`, `messenger:m_…`: the same for
 * every redelivery, accepted once), or a widget connection (`resumeHash`: the hash of the resume token it
 * joined with, which must still be the conversation's; checked in the transaction that stores a customer
 * message, so a message sent with a replaced token is refused with resume_rotated and nothing is stored).
 */
export type InboundSource = { sourceId: string; resumeHash?: undefined } | { sourceId?: undefined; resumeHash: string };

/** A message that never reached its customer, as the team's follow-up list shows it. */
export type UndeliveredMessage = { conversationId: string; channel: string; code: string; message: string; at: number };

/**
 * How one part of an outbound event went out on a messaging channel, as the team API shows it on the event:
 * sent or failed, the platform's id of it, and every delivery status the platform reported, with its time.
 */
export type DeliveryRecord = {
  seq: number;
  /** 0 on for the event's messages, -1 the automated-assistant notice before it, -2 an outside-window template. */
  part: number;
  channel: string;
  state: "sent" | "failed";
  /** The furthest status reached (queued, sent, delivered, read, failed, undelivered), when the platform said any. */
  status?: string;
  platformId?: string;
  attempts: number;
  code?: string;
  message?: string;
  at: number;
  statuses: Array<{ status: string; at: number; errorCode?: number }>;
};

/**
 * What a step of a turn has produced but not stored yet (the model's reply, a read's results). It is
 * stored, in one transaction, before anything else happens: the next tool call, model call, ledger
 * change or customer-visible event. Nothing in it has been sent or shown yet.
 */
export type Carry = { events: Outbound[]; transcript: ModelMessage[] };

/** One tool call of the model as a turn hands it on: the conversation, the tool, the parsed arguments and the step's carry. */
export type ToolUse = { conversation: ConversationRecord; tool: EngineTool; turnId: string; call: ModelToolCall; args: Record<string, unknown>; carry: Carry };

/** What a tool call tells the model; `stored`: its tool entry is already stored (with a proposal), not to be carried. */
export type ToolCallOutcome = { modelText: string; endTurn?: boolean; stored?: boolean };

// Ids from a pool of cryptographically random bytes, each byte used once, refilled 4 KiB at a time (one
// call into the CSPRNG per few hundred ids instead of one per id: a turn makes about ten).
const idPool = Buffer.alloc(4096);
let idPoolAt = idPool.length;
export function randomId(prefix: string, bytes = 12): string {
  if (idPoolAt + bytes > idPool.length) {
    randomFillSync(idPool);
    idPoolAt = 0;
  }
  const id = `${prefix}_${idPool.toString("base64url", idPoolAt, idPoolAt + bytes)}`;
  idPoolAt += bytes;
  return id;
}

export const fail = (code: string, path: string, message: string): { ok: false; error: Problem } => ({ ok: false, error: { code, path, message } });

export function progressEvent(tool: EngineTool, callId: string, state: "start" | "end"): OutboundOf<"progress"> {
  const progress = tool.policy.progress;
  return {
    type: "progress",
    id: randomId("m"),
    callId,
    state,
    ...(progress?.label && { label: progress.label }),
    ...(state === "start" && progress?.spoken && { spoken: progress.spoken }),
  };
}

export function stepUpEvent(stepUp: StepUp, proposalId: string | undefined): OutboundOf<"step_up"> {
  return {
    type: "step_up",
    id: randomId("m"),
    level: stepUp.level,
    ...(stepUp.maxAuthAgeSeconds !== undefined && { maxAuthAgeSeconds: stepUp.maxAuthAgeSeconds }),
    ...(proposalId && { proposalId }),
    text: proposalId ? "To finish this, please verify your identity again." : "You need to verify your identity for this.",
  };
}

/** A store error worth waiting out: the database is restarting or the connection to it was cut. */
export function storeUnreachable(error: unknown): boolean {
  const code = String((error as { code?: unknown })?.code ?? "");
  if (["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN"].includes(code)) return true;
  if (/^(57P0[123]|08\d{3})$/.test(code)) return true; // shutdown, cannot connect now, connection exceptions
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(error instanceof Error ? error.message : String(error));
}
