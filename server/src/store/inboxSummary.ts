// The team inbox's summary of a conversation, kept by the store as events are appended (conversations'
// last_message_seq and waiting_seq, migration 11), so the inbox reads one row per conversation instead of its
// events: the last message shown (a text, a handoff notice or an outcome), and the first customer message still
// unanswered. Anything but progress and the customer's own words answers the customer (a reply, a review card,
// a result, a team member's message, a handoff notice).
import type { Outbound } from "@caplo/shared";

/** Whether the inbox shows this event as a conversation's last message. */
export const shownInInbox = (message: Outbound): boolean => message.type === "text" || message.type === "handoff" || message.type === "outcome";

const fromCustomer = (message: Outbound): boolean => message.type === "text" && message.from === "customer";
const answers = (message: Outbound): boolean => message.type !== "progress" && !fromCustomer(message);

/**
 * What appending `messages` (in order, the first taking the conversation's next seq) changes in its summary, by
 * index into `messages`: `lastMessage` the newest shown event (null: unchanged); `waiting` keep (no customer
 * message and no answer), clear (answered), set (the first customer message after the batch's last answer), or
 * start (a customer message and no answer in the batch: waiting since the earlier unanswered one if any, else it).
 */
export type SummaryChange = { lastMessage: number | null; waiting: "keep" | "clear" | "set" | "start"; waitingFrom: number | null };

export function summaryChange(messages: readonly Outbound[]): SummaryChange {
  let lastMessage: number | null = null;
  let answered = false;
  let firstUnanswered: number | null = null;
  messages.forEach((message, index) => {
    if (shownInInbox(message)) lastMessage = index;
    if (fromCustomer(message)) firstUnanswered ??= index;
    else if (answers(message)) {
      answered = true;
      firstUnanswered = null;
    }
  });
  if (firstUnanswered !== null) return { lastMessage, waiting: answered ? "set" : "start", waitingFrom: firstUnanswered };
  return { lastMessage, waiting: answered ? "clear" : "keep", waitingFrom: null };
}

/**
 * The SQL of the summary's columns in an append's UPDATE of its conversation, in either dialect: `lastIndex`,
 * `mode`, `fromIndex` are the placeholders of summaryChange's values; `lastSeq` is the conversation's last seq
 * before the append (the old value, as an UPDATE's SET reads it), so index i is seq lastSeq + 1 + i.
 */
export function summaryColumns(lastIndex: string, mode: string, fromIndex: string, lastSeq = "last_seq"): string {
  return `last_message_seq = CASE WHEN ${lastIndex} IS NULL THEN last_message_seq ELSE ${lastSeq} + 1 + ${lastIndex} END,
    waiting_seq = CASE ${mode} WHEN 'clear' THEN NULL WHEN 'set' THEN ${lastSeq} + 1 + ${fromIndex} WHEN 'start' THEN COALESCE(waiting_seq, ${lastSeq} + 1 + ${fromIndex}) ELSE waiting_seq END`;
}
