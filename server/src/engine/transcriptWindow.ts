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
import { parseSetting, TRANSCRIPT_BUDGET_DEFAULT_CHARS } from "../config/index.ts";
import type { ModelMessage, ModelToolCall } from "../model/model.ts";

export { TRANSCRIPT_BUDGET_DEFAULT_CHARS, TRANSCRIPT_BUDGET_MAX_CHARS, TRANSCRIPT_BUDGET_MIN_CHARS } from "../config/index.ts";

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

/**
 * The unit that starts at `messages[index]` (a message that is not a tool result), given that the messages
 * from index + 1 up to `end` are tool results: a tool-calling assistant message takes the results that answer
 * its calls; a result with no such call cannot be sent alone, so it belongs to no unit.
 */
function unitAt(messages: readonly ModelMessage[], index: number, end: number): ModelMessage[] {
  const message = messages[index]!;
  const calls = message.role === "assistant" ? message.toolCalls : undefined;
  if (!calls?.length || end === index + 1) return [message];
  const unit = [message];
  for (let k = index + 1; k < end; k++) {
    const result = messages[k]!;
    if (result.role === "tool" && calls.some((call) => call.id === result.toolCallId)) unit.push(result);
  }
  return unit;
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

/** The units the window keeps, newest first, whether it kept every unit, and where the oldest kept unit starts. */
function windowUnits(messages: readonly ModelMessage[], budgetChars: number, clipNewest = true): { kept: ModelMessage[][]; complete: boolean; start: number } {
  const kept: ModelMessage[][] = [];
  let used = 0;
  let complete = true;
  let start = messages.length;
  // The tool results after the message at `index` run up to `end`.
  let end = messages.length;
  for (let index = messages.length - 1; index >= 0; index--) {
    if (messages[index]!.role === "tool") continue;
    const unit = unitAt(messages, index, end);
    end = index;
    let cost = 0;
    for (const message of unit) cost += messageCost(message);
    if (kept.length === 0) {
      kept.push(cost > budgetChars && clipNewest ? clip(unit, budgetChars) : unit);
      used = Math.min(cost, budgetChars);
      start = index;
      continue;
    }
    if (used + cost > budgetChars) {
      complete = false;
      break;
    }
    kept.push(unit);
    used += cost;
    start = index;
  }
  return { kept, complete, start };
}

/**
 * Where a copy of the transcript kept in memory may start: no window of this budget, now or after more
 * messages are appended, uses a message before this index. (A later window charges the units it shares with
 * this one at least as much, so it stops at or before where this one stopped.) A tool result never starts it.
 */
export function windowStart(messages: readonly ModelMessage[], budgetChars = TRANSCRIPT_BUDGET_DEFAULT_CHARS): number {
  return windowUnits(messages, budgetChars, false).start;
}

/**
 * The transcript to send: the most recent whole units within `budgetChars`, and a note when older ones were
 * left out. Read from the newest message back, so a step costs the window, not the whole conversation.
 * `earlier`: messages before `messages` that the caller no longer holds (cut at `windowStart`), counted in the note.
 */
export function transcriptWindow(messages: readonly ModelMessage[], budgetChars = TRANSCRIPT_BUDGET_DEFAULT_CHARS, earlier = 0): ModelMessage[] {
  const { kept, complete } = windowUnits(messages, budgetChars);
  if (kept.length === 0) return [];
  let count = 0;
  for (const unit of kept) count += unit.length;
  const sent: ModelMessage[] = complete && earlier === 0
    ? []
    : [{ role: "system", content: `[${messages.length + earlier - count} earlier message(s) of this conversation are not shown here, to keep within the context budget.]` }];
  for (let unit = kept.length - 1; unit >= 0; unit--) for (const message of kept[unit]!) sent.push(message);
  return sent;
}

/**
 * The window of a transcript held in memory and appended to, found without reading the window message by
 * message: each unit's cost is added up once, as its messages arrive (`starts`: where each unit begins,
 * `before[k]`: what the units before unit k cost), so a step finds where its window starts by binary
 * search over the units, and sends one slice. The answer is exactly transcriptWindow's; the rare
 * transcripts it does not cover (a newest unit over the budget, which is clipped, or a tool result that
 * answers no call inside the window) are given to transcriptWindow itself.
 */
export class TranscriptWindowIndex {
  private messages: readonly ModelMessage[] | undefined;
  private indexed = 0;
  private starts: number[] = [];
  private before: number[] = [];
  private lastCost = 0;
  private lastCalls: readonly ModelToolCall[] | undefined;
  /** The index of the latest tool result that belongs to no unit (-1: none). */
  private lastOrphan = -1;

  /**
   * transcriptWindow of `messages` followed by `pending`, for `messages` that only grow at the end between calls
   * (a new array starts over). `pending`: messages not stored yet (a step held for the turn's end), indexed for
   * this answer only, so the next call sees `messages` as they are.
   */
  window(messages: readonly ModelMessage[], budgetChars: number, earlier = 0, pending: readonly ModelMessage[] = []): ModelMessage[] {
    this.catchUp(messages);
    if (pending.length === 0) return this.windowOfIndexed(messages, pending, budgetChars, earlier);
    const units = this.starts.length;
    const { lastCost, lastCalls, lastOrphan } = this;
    for (let k = 0; k < pending.length; k++) this.indexMessage(pending[k]!, messages.length + k);
    try {
      return this.windowOfIndexed(messages, pending, budgetChars, earlier);
    } finally {
      this.starts.length = units;
      this.before.length = units;
      this.lastCost = lastCost;
      this.lastCalls = lastCalls;
      this.lastOrphan = lastOrphan;
    }
  }

  /** The window of `messages` then `pending`, every one of them indexed. */
  private windowOfIndexed(messages: readonly ModelMessage[], pending: readonly ModelMessage[], budgetChars: number, earlier: number): ModelMessage[] {
    const units = this.starts.length;
    const whole = () => (pending.length === 0 ? messages : [...messages, ...pending]);
    if (units === 0 || this.lastCost > budgetChars) return transcriptWindow(whole(), budgetChars, earlier);
    // The oldest unit from which every unit to the newest fits the budget (what the units cost from k on falls as k grows).
    const last = units - 1;
    const from = (k: number) => this.before[last]! - this.before[k]! + this.lastCost;
    let low = 0;
    let high = last;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (from(middle) <= budgetChars) high = middle;
      else low = middle + 1;
    }
    const start = this.starts[low]!;
    if (this.lastOrphan >= start) return transcriptWindow(whole(), budgetChars, earlier);
    const sent: ModelMessage[] = low === 0 && earlier === 0 ? [] : [{ role: "system", content: `[${start + earlier} earlier message(s) of this conversation are not shown here, to keep within the context budget.]` }];
    for (let index = start; index < messages.length; index++) sent.push(messages[index]!);
    for (let k = Math.max(0, start - messages.length); k < pending.length; k++) sent.push(pending[k]!);
    return sent;
  }

  private catchUp(messages: readonly ModelMessage[]): void {
    if (messages !== this.messages || messages.length < this.indexed) {
      this.messages = messages;
      this.indexed = 0;
      this.starts = [];
      this.before = [];
      this.lastCost = 0;
      this.lastCalls = undefined;
      this.lastOrphan = -1;
    }
    for (let index = this.indexed; index < messages.length; index++) this.indexMessage(messages[index]!, index);
    this.indexed = messages.length;
  }

  /** Add the message at `index` to the index (after every message before it). */
  private indexMessage(message: ModelMessage, index: number): void {
    if (message.role === "tool") {
      // A result joins the unit of the call it answers (unitAt); one with no such call is sent with no unit.
      const toolCallId = message.toolCallId;
      if (this.lastCalls?.some((call) => call.id === toolCallId)) this.lastCost += messageCost(message);
      else this.lastOrphan = index;
      return;
    }
    this.before.push(this.starts.length === 0 ? 0 : this.before.at(-1)! + this.lastCost);
    this.starts.push(index);
    this.lastCost = messageCost(message);
    this.lastCalls = message.role === "assistant" && message.toolCalls?.length ? message.toolCalls : undefined;
  }
}

/** CAPLO_TRANSCRIPT_BUDGET_CHARS, the default when unset, or the problem (size it to your model's context: about 4 characters a token). */
export function readTranscriptBudget(env: Record<string, string | undefined>): { ok: true; chars: number } | { ok: false; error: { code: string; path: string; message: string } } {
  const chars = parseSetting("CAPLO_TRANSCRIPT_BUDGET_CHARS", env.CAPLO_TRANSCRIPT_BUDGET_CHARS);
  return chars.ok ? { ok: true, chars: chars.value } : chars;
}
