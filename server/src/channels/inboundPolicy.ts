// The write policy on a chat app, as pure decisions: a tapped button acts only through its stored
// reference, and typed text never confirms; typed text answers an open question only by number or label.
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

/** Typed text against an open questions elicitation: the option's number or its exact label (any case). */
export function matchTypedAnswer(text: string, question: OpenQuestion): string | undefined {
  const typed = text.trim();
  if (/^\d{1,2}$/.test(typed)) {
    const option = question.options[Number(typed) - 1];
    return option?.value;
  }
  const lower = typed.toLowerCase();
  return question.options.find((o) => o.label.trim().toLowerCase() === lower)?.value;
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
      if (proposalState !== "proposed") {
        const why = FINISHED[proposalState ?? ""] ?? "is no longer waiting for a decision";
        return { kind: "notice", code: "proposal_decided", text: `That request ${why}. Nothing was changed.` };
      }
      return { kind: "forward", inbound: ref.kind === "confirm" ? { type: "confirm", proposalId: ref.targetId } : { type: "decline", proposalId: ref.targetId } };
    }
    case "answer": {
      if (!openQuestion || openQuestion.elicitationId !== ref.targetId) {
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

/** Typed text: an answer when it matches an open question, otherwise a plain message (never a confirm). */
export function decideText(text: string, openQuestion: OpenQuestion | undefined): Decision {
  if (openQuestion) {
    const value = matchTypedAnswer(text, openQuestion);
    if (value !== undefined) {
      return { kind: "forward", closesQuestion: true, inbound: { type: "answer", elicitationId: openQuestion.elicitationId, action: "accept", content: { [openQuestion.field]: value } } };
    }
  }
  return { kind: "forward", inbound: { type: "message", text: text.slice(0, 4000) } };
}
