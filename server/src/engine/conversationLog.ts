// The conversation log as the engine writes it: every step's events and transcript entries appended in one
// transaction, then remembered (the latest events of recent conversations, so delivery rarely reads the
// store) and announced on the bus. Nothing appended here has been shown or acted on before the append returns.
import type { Outbound } from "@caplo/shared";
import type { AppendBatch, AppendedBatch, CheckedAppendBatch, ConversationRecord, StoredEvent } from "../store/store.ts";
import { RECENT_CONVERSATIONS, type Carry } from "./common.ts";
import { EnginePart } from "./core.ts";

const RECENT_EVENTS_PER_CONVERSATION = 32;

/**
 * A conversation's row as this node's last append read it, in that append's own transaction: its resume token
 * hash, how far its log went then, and when (the engine's clock).
 */
type SeenRow = { resumeHash: string | null; lastSeq: number; lastTranscriptSeq: number; at: number };

export class ConversationLog extends EnginePart {
  private readonly recentEvents = new Map<string, StoredEvent[]>();
  private readonly seenRows = new Map<string, SeenRow>();

  /** Store a customer-visible event and notify subscribers (on every node through the bus). */
  async emit(conversationId: string, message: Outbound): Promise<StoredEvent> {
    const event = await this.core.store.appendEvent(conversationId, message, this.core.now());
    this.remember(event);
    const published = await this.core.bus.publish(conversationId, { seq: event.seq });
    if (!published.ok) this.core.log("warn", "event notice not published; subscribers catch up from the store", { code: published.error.code });
    return event;
  }

  /**
   * Store one step's events and transcript entries in ONE transaction, then remember them and notify
   * subscribers. Nothing in the batch has been shown to anyone or given to the model before this returns.
   * A batch with a `resumeHash` that is no longer the conversation's stores nothing: undefined.
   */
  async record(conversationId: string, batch: CheckedAppendBatch): Promise<AppendedBatch | undefined>;
  async record(conversationId: string, batch: AppendBatch): Promise<AppendedBatch>;
  async record(conversationId: string, batch: AppendBatch & { resumeHash?: string }): Promise<AppendedBatch | undefined> {
    const stored = batch.resumeHash !== undefined ? await this.core.store.append(conversationId, batch as CheckedAppendBatch, this.core.now()) : await this.core.store.append(conversationId, batch as AppendBatch, this.core.now());
    if (stored) await this.announce(stored);
    return stored;
  }

  /** What a transaction appended (alone, or with a ledger change): remembered, and its subscribers notified. */
  async announce(stored: AppendedBatch): Promise<void> {
    this.seeRow(stored.conversation);
    for (const entry of stored.transcript) this.core.transcripts.rememberTranscript(entry);
    for (const event of stored.events) this.remember(event);
    const last = stored.events.at(-1);
    if (last) {
      const published = await this.core.bus.publish(last.conversationId, { seq: last.seq });
      if (!published.ok) this.core.log("warn", "event notice not published; subscribers catch up from the store", { code: published.error.code });
    }
  }

  /**
   * Store what a step has waiting (if anything) plus `extra`, in one transaction; the step's carry is emptied.
   * `finish`: the turn ends with this batch and its owed turn is cleared in the same statement.
   */
  async flushCarry(conversationId: string, carry: Carry, extra: Outbound[] = [], finish?: AppendBatch["finish"]): Promise<AppendedBatch | undefined> {
    const events = carry.events.concat(extra);
    if (events.length === 0 && carry.transcript.length === 0 && !finish) return undefined;
    const transcript = carry.transcript;
    carry.events = [];
    carry.transcript = [];
    return this.record(conversationId, { events, transcript, ...(finish && { finish }) });
  }

  /**
   * Keep the row an append read (the newest one seen of each recent conversation: appends of one conversation
   * may settle out of order, and each one's row holds a longer log than the one before it).
   */
  private seeRow(row: ConversationRecord): void {
    const seen = this.seenRows.get(row.id);
    if (seen && (seen.lastSeq > row.lastSeq || (seen.lastSeq === row.lastSeq && seen.lastTranscriptSeq > row.lastTranscriptSeq))) return;
    this.seenRows.delete(row.id); // re-inserted: most recent last
    this.seenRows.set(row.id, { resumeHash: row.resumeHash, lastSeq: row.lastSeq, lastTranscriptSeq: row.lastTranscriptSeq, at: this.core.now() });
    if (this.seenRows.size > RECENT_CONVERSATIONS) this.seenRows.delete(this.seenRows.keys().next().value!);
  }

  /**
   * Whether an append of this node read `resumeHash` as the conversation's at most `maxAgeMs` ago, in a row
   * whose log already held every event up to `seq`: those events were stored while the hash was still the
   * conversation's, as a read of the store would have found it then. False says only "not known": read the store.
   */
  resumeSeen(conversationId: string, resumeHash: string, seq: number, maxAgeMs: number): boolean {
    const seen = this.seenRows.get(conversationId);
    return seen !== undefined && seen.resumeHash === resumeHash && seen.lastSeq >= seq && this.core.now() - seen.at <= maxAgeMs;
  }

  /** The resume hash of the conversation's row as this node's latest append read it (null: none); undefined when no append of this node is remembered. */
  seenResumeHash(conversationId: string): string | null | undefined {
    return this.seenRows.get(conversationId)?.resumeHash;
  }

  /** The conversation's resume hash was replaced: what an append read before no longer answers for it. */
  forgetRow(conversationId: string): void {
    this.seenRows.delete(conversationId);
  }

  /** Keep the latest events of recently active conversations, contiguous by seq, so delivery rarely reads the store. */
  private remember(event: StoredEvent): void {
    let recent = this.recentEvents.get(event.conversationId);
    if (!recent || recent.at(-1)!.seq !== event.seq - 1) recent = [];
    else this.recentEvents.delete(event.conversationId); // re-inserted below: most recent last
    recent.push(event);
    if (recent.length > RECENT_EVENTS_PER_CONVERSATION) recent.shift();
    this.recentEvents.set(event.conversationId, recent);
    if (this.recentEvents.size > RECENT_CONVERSATIONS) this.recentEvents.delete(this.recentEvents.keys().next().value!);
  }

  /** Stored events with seq > after, in order: from memory when it holds all of them, else from the store. */
  async eventsAfter(conversationId: string, after: number, limit = 200): Promise<StoredEvent[]> {
    const recent = this.recentEvents.get(conversationId);
    if (recent && recent[0]!.seq <= after + 1) {
      const last = recent.at(-1)!.seq;
      if (last <= after) {
        // Memory may lag another node's appends: only trust it when the store agrees there is nothing newer.
        return this.core.store.listEvents(conversationId, after, limit);
      }
      return recent.filter((event) => event.seq > after).slice(0, limit);
    }
    return this.core.store.listEvents(conversationId, after, limit);
  }

  async note(conversationId: string, content: string): Promise<void> {
    this.core.transcripts.rememberTranscript(await this.core.store.appendTranscript(conversationId, { role: "system", content }, this.core.now()));
  }
}
