// The write policy on a chat app, as pure decisions: a tapped button acts only through its stored
// reference, and typed text never confirms; typed text answers an open question only by number or label.
import { cutUnits, MESSAGE_TEXT_MAX } from "@caplo/shared/limits";
import type { Inbound } from "@caplo/shared/messages";
import type { ButtonRef, OpenQuestion } from "./ports.ts";

export type Decision =
  | { kind: "forward"; inbound: Inbound; closesQuestion?: boolean }
  | { kind: "notice"; text: string; code: string };

const FINISHED: Record<string, string> = {
  running: "is already running",
  applied: "was already done",
  not_applied: "was already tried and not done",
  pending: "was already sent and is not confirmed yet",
  unknown: "was already sent and is not confirmed yet",
  declined: "was already cancelled",
  cancelled: "was already cancelled",
  expired: "has expired",
  step_up_required: "is waiting for you to verify again",
};

/** What a tap on a request that no longer waits for a decision is told: where the request stands (the engine's state of it). */
export function decidedRequestText(proposalState: string | undefined): string {
  return `That request ${FINISHED[proposalState ?? ""] ?? "is no longer waiting for a decision"}. Nothing was changed.`;
}

/** Typed text against an open questions elicitation (or numbered replies): the option's number or its exact label (any case). */
export function matchTypedAnswer(text: string, question: OpenQuestion): string | undefined {
  const typed = text.trim();
  const lower = typed.toLowerCase();
  // A label first: options may be numbers themselves (sizes 38 to 44), and the label is what the customer saw.
  const byLabel = question.options.find((o) => o.label.trim().toLowerCase() === lower);
  if (byLabel) return byLabel.value;
  if (/^\d{1,2}$/.test(typed)) return question.options[Number(typed) - 1]?.value;
  return undefined;
}

/** A tap on a button: what it stands for, checked against the tapping customer's conversation. */
export function decideTap(
  ref: ButtonRef | undefined,
  conversationId: string,
  proposalState: string | undefined,
  openQuestion: OpenQuestion | undefined,
): Decision {
  if (!ref) return { kind: "notice", code: "button_unknown", text: "That button is no longer valid. Nothing was changed." };
  if (ref.conversationId !== conversationId) {
    return { kind: "notice", code: "button_foreign", text: "That button does not belong to this conversation. Nothing was changed." };
  }
  switch (ref.kind) {
    case "confirm":
    case "decline": {
      if (proposalState !== "proposed") return { kind: "notice", code: "proposal_decided", text: decidedRequestText(proposalState) };
      return { kind: "forward", inbound: ref.kind === "confirm" ? { type: "confirm", proposalId: ref.targetId } : { type: "decline", proposalId: ref.targetId } };
    }
    case "answer": {
      if (!openQuestion || openQuestion.kind === "replies" || openQuestion.elicitationId !== ref.targetId) {
        return { kind: "notice", code: "question_closed", text: "That question was already answered or has closed. Nothing was changed." };
      }
      return {
        kind: "forward",
        closesQuestion: true,
        inbound: { type: "answer", elicitationId: ref.targetId, action: "accept", content: { [ref.field ?? openQuestion.field]: ref.value ?? "" } },
      };
    }
    case "reply":
      return { kind: "forward", inbound: { type: "message", text: ref.value ?? "" } };
  }
}

/** Words that, alone, say "go ahead": typed while a proposal waits, they are what only a tap may mean. */
const CONSENT_WORDS = new Set([
  "yes", "y", "yeah", "yea", "yep", "yup", "ya", "ok", "okay", "k", "kk", "sure", "confirm", "confirmed", "confirming",
  "proceed", "approve", "approved", "agree", "agreed", "correct", "accept", "accepted", "da", "ja", "si", "sí", "oui", "potrdi", "potrjujem",
]);
/** Words that may stand beside a consent word without changing what it says ("yes please", "ok, do it"). */
const FILLER_WORDS = new Set(["please", "pls", "i", "it", "do", "go", "ahead", "that", "thats", "is", "fine", "right", "good", "great", "thanks", "thank", "you", "sounds", "the", "request", "order", "now", "and"]);
const CONSENT_SYMBOLS = /[\u{1F44D}\u{1F44C}\u2705\u2714\u2611]/gu;

/**
 * Typed consent: a message made only of consent words ("yes", "OK", "confirm", "go ahead", "yes please",
 * 👍), at least one of them a consent word proper. Anything more ("yes but size L") is an ordinary message.
 */
export function isTypedConsent(text: string): boolean {
  const normalized = text
    .normalize("NFKC")
    .toLowerCase()
    .replace(CONSENT_SYMBOLS, " yes ")
    .replace(/['\u2019]/g, "")
    .replace(/\bgo ahead\b|\bdo it\b/g, " yes ")
    .replace(/[\p{P}\p{S}\uFE0F]/gu, " ")
    .trim();
  if (normalized === "" || normalized.length > 60) return false;
  const words = normalized.split(/\s+/);
  return words.some((w) => CONSENT_WORDS.has(w)) && words.every((w) => CONSENT_WORDS.has(w) || FILLER_WORDS.has(w));
}

export const TAP_CONFIRM_NOTICE = "A typed message cannot confirm a change. To go ahead, tap Confirm on the request above; to stop, tap Cancel.";

/**
 * Typed text: an answer when it matches an open question; typed consent while a proposal waits is
 * answered by the channel itself (tap Confirm) and handed to nobody; otherwise a plain message. Never a confirm.
 */
export function decideText(text: string, openQuestion: OpenQuestion | undefined, proposalWaiting = false): Decision {
  if (openQuestion) {
    const value = matchTypedAnswer(text, openQuestion);
    // A numbered reply action: the customer sends its text, as a tap on it would.
    if (value !== undefined && openQuestion.kind === "replies") return { kind: "forward", closesQuestion: true, inbound: { type: "message", text: value } };
    if (value !== undefined) {
      return { kind: "forward", closesQuestion: true, inbound: { type: "answer", elicitationId: openQuestion.elicitationId, action: "accept", content: { [openQuestion.field]: value } } };
    }
  }
  if (proposalWaiting && isTypedConsent(text)) return { kind: "notice", code: "tap_to_confirm", text: TAP_CONFIRM_NOTICE };
  return { kind: "forward", inbound: { type: "message", text: cutUnits(text, MESSAGE_TEXT_MAX) } };
}
