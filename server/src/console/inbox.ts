// The team inbox's rows and search (docs/console.md): each conversation's summary as the store keeps it
// (store/inboxSummary.ts: one indexed query for the whole page, not the conversations' events), the member's
// unread mark from their read seq, and a search on the server whose candidates the store finds by SQL and whose
// event candidates are kept only when the event's words (not its JSON keys) hold the text.
import type { Outbound } from "@caplo/shared";
import type { ConsoleInboxPort, ConversationRecord, InboxEntry, StoredEvent } from "../store/store.ts";

/** How many conversations the inbox lists (the newest), and how many a search finds at most. */
export const INBOX_MAX = 200;
/** The longest search text. */
export const SEARCH_MAX = 200;

export const iso = (at: number | null | undefined) => (at === null || at === undefined ? null : new Date(at).toISOString());

/** The words of an event, for the inbox's last message and its search. */
export function eventText(message: Outbound): string {
  switch (message.type) {
    case "text":
    case "handoff":
      return message.text;
    case "review":
      return [message.title, ...message.fields.map((field) => `${field.label} ${String(field.value ?? "")}`)].join(" ");
    case "outcome":
      return message.message;
    case "file":
      return message.name;
    default:
      return JSON.stringify(message).slice(0, 2000);
  }
}

function customerOf(conversation: ConversationRecord) {
  return { verified: conversation.subject !== null, id: conversation.subject?.id ?? conversation.externalId ?? null };
}

/** A conversation's row in the inbox (and the head of its record), from its stored summary. */
export function summaryOf(entry: InboxEntry) {
  const { conversation, lastMessage: last } = entry;
  // Waiting: handed off and not yet taken (since the handoff), or the customer's first message not answered since.
  const waitingSince = conversation.handoff?.state === "requested" ? conversation.handoff.at : entry.waitingSince;
  return {
    id: conversation.id,
    agent: conversation.agent,
    channel: conversation.channel,
    customer: customerOf(conversation),
    handoff: conversation.handoff ? { state: conversation.handoff.state, queue: conversation.handoff.queue ?? null, member: conversation.handoff.member ?? null, at: iso(conversation.handoff.at) } : null,
    lastMessage: last ? { from: last.message.type === "text" ? last.message.from : "system", text: eventText(last.message).slice(0, 200), at: iso(last.at) } : null,
    lastSeq: conversation.lastSeq,
    readSeq: entry.readSeq,
    createdAt: iso(conversation.createdAt),
    waitingSince: iso(waitingSince),
    unknownWrites: entry.unresolvedWrites,
    followUps: entry.followUps,
  };
}

/**
 * The ids of a workspace's conversations matching `text` (case-insensitive), newest first, at most INBOX_MAX: on
 * their id, customer or a write's arguments as the store matched them, or on the words of one of their events.
 */
export async function searchInbox(inbox: ConsoleInboxPort, workspaceId: string, text: string): Promise<string[]> {
  const needle = text.toLowerCase();
  const ids = new Set<string>();
  for (const hit of await inbox.searchConversations(workspaceId, text, INBOX_MAX)) {
    if (ids.size >= INBOX_MAX) break;
    if (!hit.event || eventText(hit.event.message).toLowerCase().includes(needle)) ids.add(hit.conversationId);
  }
  return [...ids];
}

/** How many events a page of a conversation's history holds (the newest page first, older ones on request). */
export const EVENTS_PAGE = 200;

/**
 * The page of a conversation's events just before seq `before` (oldest first, at most EVENTS_PAGE), and the seq
 * the next older page is asked before (null: this page starts at the first event). Events are numbered 1, 2, 3, …
 * without gaps, so a page is one range read by key.
 */
export async function eventsBefore(inbox: ConsoleInboxPort, conversationId: string, before: number): Promise<{ events: StoredEvent[]; olderBefore: number | null }> {
  const from = Math.max(0, before - 1 - EVENTS_PAGE);
  const events = before > 1 ? await inbox.listEvents(conversationId, from, before - 1 - from) : [];
  return { events, olderBefore: from > 0 ? from + 1 : null };
}

export const eventView = (event: StoredEvent) => ({ seq: event.seq, at: iso(event.at), message: event.message });
