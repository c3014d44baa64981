// The conversation as the widget holds it: events in seq order (deduplicated, so a resume never shows
// one twice), the visitor's messages still in flight, what the visitor already acted on, and the
// connection state. A pure reducer, so it is tested without sockets or a DOM.
import type { Outbound, OutboundOf, ServerFrame, WidgetAgent } from "@caplo/shared";

export interface Entry {
  seq: number;
  at: string;
  message: Outbound;
}

/** `refused`: the gateway refused the hello for good (see the error); the widget does not say it again. */
export type Phase = "connecting" | "open" | "waiting" | "offline" | "refused";
export interface ConnectionView {
  phase: Phase;
  /** When the next attempt starts (ms since epoch), while waiting. */
  retryAt?: number;
  attempt: number;
}

export interface PendingMessage {
  ref: string;
  text: string;
  acked: boolean;
  error?: string;
}

/** The agent's reply while the model writes it (a delta frame's text, replaced by the stored event of the same id). */
export interface Streaming {
  id: string;
  text: string;
}

/** Used-map keys under which the visitor's rating of a reply is kept, by its event seq. */
export const RATING_PREFIX = "rate:";

/** Why the host page's identity token was refused, as a code the app turns into a plain sentence. */
export type VerifyProblem = "expired" | "invalid" | "unavailable";

export interface ConversationState {
  conversationId?: string;
  /** What the widget shows of the agent (welcome). */
  agent?: WidgetAgent;
  streaming: Streaming | null;
  /** The ref of the identify frame in flight: its ack means the server verified the visitor, its error why not. */
  identifyRef?: string;
  verifyProblem?: VerifyProblem;
  entries: Entry[];
  lastSeq: number;
  typing: boolean;
  verified: boolean;
  /** How many times the host page's identity token was accepted on this page (a step-up prompt sees it done). */
  verifications: number;
  /** The conversation's last seq when the server last verified the visitor: a read's step-up prompt up to it was answered. */
  verifiedSeq: number;
  pending: PendingMessage[];
  /** Cards, questions and choices already acted on: id → what was sent. A card is usable once. */
  used: Record<string, string>;
  /** Frame refs of those actions, so an error frame can make the card usable again. */
  usedRefs: Record<string, string>;
  /** Why the gateway refused an action on a card, by card id. */
  failed: Record<string, string>;
  connection: ConnectionView;
  /** The last error the gateway reported that is not tied to a pending message. */
  error?: { code: string; message: string };
}

export type Action =
  | { type: "frame"; frame: ServerFrame }
  /** Frames applied in order in one step (the reply parts of one animation frame). */
  | { type: "frames"; frames: ServerFrame[] }
  | { type: "connection"; view: ConnectionView }
  | { type: "send"; ref: string; text: string }
  | { type: "use"; id: string; value: string; ref?: string }
  | { type: "restore"; conversationId: string; entries: Entry[]; used: Record<string, string> }
  | { type: "identify"; ref: string }
  /** A new conversation: everything shown is dropped (the connection says hello again without a resume token). */
  | { type: "reset" };

export const initialState: ConversationState = {
  entries: [],
  lastSeq: 0,
  typing: false,
  verified: false,
  verifications: 0,
  verifiedSeq: 0,
  streaming: null,
  pending: [],
  used: {},
  usedRefs: {},
  failed: {},
  connection: { phase: "connecting", attempt: 0 },
};

export function reduce(state: ConversationState, action: Action): ConversationState {
  switch (action.type) {
    case "connection":
      return { ...state, connection: action.view, typing: action.view.phase === "open" ? state.typing : false };
    case "send":
      // The visitor has read why their sign-in was not accepted and goes on: the banner makes room.
      return { ...state, verifyProblem: undefined, pending: [...state.pending, { ref: action.ref, text: action.text, acked: false }] };
    case "use": {
      const { [action.id]: _, ...failed } = state.failed;
      return {
        ...state,
        used: { ...state.used, [action.id]: action.value },
        usedRefs: action.ref ? { ...state.usedRefs, [action.ref]: action.id } : state.usedRefs,
        failed,
      };
    }
    case "identify":
      return { ...state, identifyRef: action.ref };
    case "reset":
      return { ...initialState, connection: state.connection, verified: false };
    case "restore":
      return {
        ...state,
        conversationId: action.conversationId,
        entries: action.entries,
        lastSeq: action.entries.at(-1)?.seq ?? 0,
        used: action.used,
      };
    case "frame":
      return applyFrame(state, action.frame);
    case "frames":
      return action.frames.reduce(applyFrame, state);
  }
}

function applyFrame(state: ConversationState, frame: ServerFrame): ConversationState {
  switch (frame.t) {
    case "welcome": {
      const same = state.conversationId === frame.conversationId;
      const used = same ? state.used : {};
      return {
        ...state,
        conversationId: frame.conversationId,
        verified: frame.verified,
        entries: same ? state.entries : [],
        lastSeq: same ? state.lastSeq : 0,
        used: frame.ratings ? withRatings(used, frame.ratings) : used,
        failed: same ? state.failed : {},
        error: undefined,
        agent: frame.agent,
        // A reply still being written is sent again from its start after the welcome.
        streaming: null,
      };
    }
    case "delta": {
      const s = state.streaming;
      if (s && s.id === frame.id) {
        // The next part in order is appended; a repeated or out-of-order part is left (the stored event follows).
        return frame.at === s.text.length ? { ...state, streaming: { id: s.id, text: s.text + frame.text }, typing: false } : state;
      }
      if (frame.at !== 0 || state.entries.some((e) => e.message.id === frame.id)) return state;
      return { ...state, streaming: { id: frame.id, text: frame.text }, typing: false };
    }
    case "event": {
      if (frame.seq <= state.lastSeq) return state; // already shown: a resume may repeat events
      const entries = [...state.entries, { seq: frame.seq, at: frame.at, message: frame.message }];
      let pending = state.pending;
      const m = frame.message;
      if (m.type === "text" && m.from === "customer") {
        // The gateway echoes the visitor's own message as an event: it replaces the in-flight copy.
        const i = pending.findIndex((p) => p.text === m.text && !p.error);
        if (i >= 0) pending = pending.filter((_, j) => j !== i);
      }
      const typing = m.type === "text" && m.from !== "customer" ? false : state.typing;
      // The reply's stored event replaces its streamed text; so does any later reply or notice of the agent.
      const streaming = state.streaming && (m.id === state.streaming.id || (m.type === "text" && m.from !== "customer")) ? null : state.streaming;
      return { ...state, entries, lastSeq: frame.seq, pending, typing, streaming };
    }
    case "ack":
      if (frame.ref === state.identifyRef) {
        // The server verified the visitor: only now does the header say so.
        return { ...state, identifyRef: undefined, verified: true, verifications: state.verifications + 1, verifiedSeq: state.lastSeq, verifyProblem: undefined };
      }
      return { ...state, pending: state.pending.map((p) => (p.ref === frame.ref ? { ...p, acked: true } : p)) };
    case "error": {
      if (frame.ref !== undefined && frame.ref === state.identifyRef) {
        // Never the verifier's own words ("the header is not base64url-encoded JSON"): a plain sentence by kind.
        return { ...state, identifyRef: undefined, verifyProblem: verifyProblemOf(frame.code) };
      }
      const cardId = frame.ref ? state.usedRefs[frame.ref] : undefined;
      if (cardId !== undefined) {
        // The gateway refused the action: the card becomes usable again and says why.
        const { [cardId]: _, ...used } = state.used;
        return { ...state, used, failed: { ...state.failed, [cardId]: frame.message } };
      }
      if (frame.ref && state.pending.some((p) => p.ref === frame.ref)) {
        return {
          ...state,
          pending: state.pending.map((p) => (p.ref === frame.ref ? { ...p, error: frame.message } : p)),
        };
      }
      return { ...state, error: { code: frame.code, message: frame.message } };
    }
    case "typing":
      return { ...state, typing: frame.on };
    case "pong":
      return state;
  }
}

/** What the visitor used, with their ratings as the server keeps them (a rating only this page remembered is dropped). */
function withRatings(used: Record<string, string>, ratings: NonNullable<Extract<ServerFrame, { t: "welcome" }>["ratings"]>): Record<string, string> {
  const kept = Object.fromEntries(Object.entries(used).filter(([key]) => !key.startsWith(RATING_PREFIX)));
  for (const { seq, rating } of ratings) kept[`${RATING_PREFIX}${seq}`] = rating;
  return kept;
}

/** What an identify error code means for the visitor: their sign-in expired, was not accepted, or could not be checked. */
export function verifyProblemOf(code: string): VerifyProblem {
  if (/expired|too_old|auth_age/.test(code)) return "expired";
  if (code === "internal_error" || code === "rate_limited" || code === "not_started") return "unavailable";
  return "invalid";
}

/** A review card with every later event about its proposal. */
export interface ReviewView {
  review: OutboundOf<"review">;
  /** The state as of the latest review or outcome event. */
  state: OutboundOf<"review">["state"];
  outcomes: OutboundOf<"outcome">[];
}

export type Row =
  | { kind: "message"; entry: Entry }
  | { kind: "review"; entry: Entry; view: ReviewView }
  | { kind: "outcome"; entry: Entry; outcome: OutboundOf<"outcome"> }
  /** A write that was unresolved (pending, unknown, waiting for a step-up) now resolved: said again at the bottom. */
  | { kind: "update"; entry: Entry; view: ReviewView; outcome: OutboundOf<"outcome"> };

/** States the visitor was left waiting in: the outcome that ends them is news, told where the conversation is. */
const UNRESOLVED: ReadonlySet<string> = new Set(["pending", "unknown", "step_up_required"]);

/**
 * What the conversation shows, in order: a proposal's card at its first review event, with its later
 * review states and outcomes folded in (so status-check updates land on the card); progress events
 * are not rows (the status line shows the running ones).
 */
export function rowsOf(entries: Entry[]): Row[] {
  const rows: Row[] = [];
  const cards = new Map<string, ReviewView>();
  for (const entry of entries) {
    const m = entry.message;
    if (m.type === "progress") continue;
    if (m.type === "review") {
      const known = cards.get(m.proposalId);
      if (known) {
        known.state = m.state;
        continue;
      }
      const view: ReviewView = { review: m, state: m.state, outcomes: [] };
      cards.set(m.proposalId, view);
      rows.push({ kind: "review", entry, view });
      continue;
    }
    if (m.type === "outcome") {
      const card = cards.get(m.proposalId);
      if (card) {
        const waited = UNRESOLVED.has(card.state) || card.outcomes.some((o) => UNRESOLVED.has(o.state));
        card.outcomes.push(m);
        card.state = m.state;
        if (waited && !UNRESOLVED.has(m.state) && m.state !== "running") rows.push({ kind: "update", entry, view: card, outcome: m });
      } else rows.push({ kind: "outcome", entry, outcome: m });
      continue;
    }
    rows.push({ kind: "message", entry });
  }
  return rows;
}

/** The static progress labels of tools still running (a start without its end). */
export function runningLabels(entries: Entry[]): string[] {
  const running = new Map<string, string>();
  for (const { message: m } of entries) {
    if (m.type !== "progress") continue;
    if (m.state === "start") running.set(m.callId, m.label ?? "");
    else running.delete(m.callId);
  }
  return [...running.values()];
}

/**
 * Choices and questions the conversation has moved past, so they are not offered again after a reload
 * even when this frame's storage was blocked: choices followed by a visitor message, questions followed
 * by any later event (the tool waits for the answer before anything else happens).
 */
export function settledIds(entries: Entry[]): Record<string, string> {
  const settled: Record<string, string> = {};
  let laterVisitor = false;
  let laterAny = false;
  for (let i = entries.length - 1; i >= 0; i--) {
    const m = entries[i]!.message;
    if (m.type === "result" && m.layout === "choices" && laterVisitor) settled[`choices:${m.id}`] = "settled";
    if (m.type === "question" && laterAny) settled[`question:${m.elicitationId}`] = "settled";
    if (m.type === "text" && m.from === "customer") laterVisitor = true;
    if (m.type !== "progress") laterAny = true;
  }
  return settled;
}
