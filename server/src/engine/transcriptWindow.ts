// The transcript window: what of a conversation's stored transcript is sent to the model on each step, so
// that a long conversation stays within the model's context. The stored transcript and events are never
// changed; only the request is trimmed. The agent's instructions always go (they are the system message
// the engine puts first, outside this window); of the transcript, the most recent messages go, whole
// units at a time, within a budget of characters:
//   - an assistant message that called tools travels with all its tool results, and a tool result never
//     goes without the call it answers (OpenAI-compatible APIs refuse either half alone);
//   - the newest unit always goes; if it alone is over the budget, its longest contents are clipped, with
//     a marker saying so;
//   - when anything older is left out, a system note at the start says how many messages were.
import type { ModelMessage } from "../model/model.ts";

/**
 * The default budget: 48,000 characters of transcript, about 12,000 tokens of English text at roughly
 * four characters a token. With the instructions (at most 32,000 characters) and the tool definitions
 * this fits comfortably in a 32k-token context, and leaves room for the answer.
 */
export const TRANSCRIPT_BUDGET_DEFAULT_CHARS = 48_000;
/** The smallest budget accepted: room for a few turns and a clipped tool result. */
export const TRANSCRIPT_BUDGET_MIN_CHARS = 2_000;
/** Counted per message besides its text (role, ids, the API's own framing). */
export const MESSAGE_OVERHEAD_CHARS = 16;

export const CLIP_MARKER = "\n[...clipped: this was too long to send in full]";

/** The characters a message costs against the budget. */
export function messageCost(message: ModelMessage): number {
  let cost = MESSAGE_OVERHEAD_CHARS + message.content.length;
  if (message.role === "assistant") for (const call of message.toolCalls ?? []) cost += MESSAGE_OVERHEAD_CHARS + call.name.length + call.id.length + call.arguments.length;
  if (message.role === "tool") cost += message.toolCallId.length + message.name.length;
  return cost;
}

/** Messages grouped so that a tool-calling assistant message and its tool results stay together. */
function units(messages: readonly ModelMessage[]): ModelMessage[][] {
  const grouped: ModelMessage[][] = [];
  let open: { unit: ModelMessage[]; ids: Set<string> } | undefined;
  for (const message of messages) {
    if (message.role === "tool") {
      // A result belongs to the open call that asked for it; one with no such call cannot be sent alone.
      if (open?.ids.has(message.toolCallId)) open.unit.push(message);
      continue;
    }
    open = undefined;
    const unit = [message];
    grouped.push(unit);
    if (message.role === "assistant" && message.toolCalls?.length) open = { unit, ids: new Set(message.toolCalls.map((call) => call.id)) };
  }
  return grouped;
}

/** Clip the longest contents of a unit until it fits the budget (the newest unit always goes). */
function clip(unit: ModelMessage[], budget: number): ModelMessage[] {
  const copy = unit.map((message) => ({ ...message }));
  let over = copy.reduce((sum, message) => sum + messageCost(message), 0) - budget;
  while (over > 0) {
    const longest = copy.reduce((best, message) => (message.content.length > best.content.length ? message : best));
    // Nothing left to clip but call arguments, which must stay valid JSON: send it as it is.
    if (longest.content.length <= CLIP_MARKER.length) break;
    const keep = Math.max(0, longest.content.length - over - CLIP_MARKER.length);
    const before = longest.content.length;
    longest.content = `${longest.content.slice(0, keep)}${CLIP_MARKER}`;
    over -= before - longest.content.length;
  }
  return copy;
}

/** The transcript to send: the most recent whole units within `budgetChars`, and a note when older ones were left out. */
export function transcriptWindow(messages: readonly ModelMessage[], budgetChars = TRANSCRIPT_BUDGET_DEFAULT_CHARS): ModelMessage[] {
  const all = units(messages);
  if (all.length === 0) return [];
  const kept: ModelMessage[][] = [];
  let used = 0;
  for (let index = all.length - 1; index >= 0; index--) {
    const unit = all[index]!;
    const cost = unit.reduce((sum, message) => sum + messageCost(message), 0);
    if (kept.length === 0) {
      kept.unshift(cost > budgetChars ? clip(unit, budgetChars) : unit);
      used = Math.min(cost, budgetChars);
      continue;
    }
    if (used + cost > budgetChars) break;
    kept.unshift(unit);
    used += cost;
  }
  const sent = kept.flat();
  const left = messages.length - sent.length;
  if (kept.length === all.length) return sent;
  return [{ role: "system", content: `[${left} earlier message(s) of this conversation are not shown here, to keep within the context budget.]` }, ...sent];
}

export const TRANSCRIPT_BUDGET_MAX_CHARS = 2_000_000;

/** CAPLO_TRANSCRIPT_BUDGET_CHARS, the default when unset, or the problem (size it to your model's context: about 4 characters a token). */
export function readTranscriptBudget(env: Record<string, string | undefined>): { ok: true; chars: number } | { ok: false; error: { code: string; path: string; message: string } } {
  const text = env.CAPLO_TRANSCRIPT_BUDGET_CHARS;
  if (text === undefined || text === "") return { ok: true, chars: TRANSCRIPT_BUDGET_DEFAULT_CHARS };
  const chars = Number(text);
  if (!/^[0-9]+$/.test(text) || chars < TRANSCRIPT_BUDGET_MIN_CHARS || chars > TRANSCRIPT_BUDGET_MAX_CHARS) {
    return {
      ok: false,
      error: { code: "transcript_budget_invalid", path: "CAPLO_TRANSCRIPT_BUDGET_CHARS", message: `a whole number of characters from ${TRANSCRIPT_BUDGET_MIN_CHARS} to ${TRANSCRIPT_BUDGET_MAX_CHARS}` },
    };
  }
  return { ok: true, chars };
}
