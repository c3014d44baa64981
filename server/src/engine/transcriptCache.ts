// The transcript cache: the model transcript of recently active conversations in memory, checked against
// the conversation's lastTranscriptSeq (read in the step's own append) and topped up from the store when
// another node appended. Bounded per conversation (what the window can still use) and in total.
import type { ModelMessage } from "../model/model.ts";
import type { ConversationRecord, TranscriptEntry } from "../store/store.ts";
import { RECENT_CONVERSATIONS } from "./common.ts";
import { EnginePart } from "./core.ts";
import { messageCost, TranscriptWindowIndex, windowStart } from "./transcriptWindow.ts";

/**
 * The transcript cache, by message cost (messageCost, about characters): a conversation's copy is cut back to
 * what the window can use once it holds twice the transcript budget, and the least recent conversations are
 * dropped while all copies together hold more than this.
 */
export const TRANSCRIPT_CACHE_MAX_CHARS = 16_000_000;

/**
 * A conversation's transcript in memory: the stored entries with seq `dropped + 1`..`lastSeq`, in order. The
 * `dropped` oldest are no longer held: no window of the transcript budget can use them (windowStart).
 * `chars`: what the held messages cost against the budget (messageCost), for the cache's bounds.
 */
type CachedTranscript = { lastSeq: number; messages: ModelMessage[]; dropped: number; chars: number };

export class TranscriptCache extends EnginePart {
  /** The model transcript of recently active conversations (the store stays the truth; see transcriptOf). */
  private readonly transcripts = new Map<string, CachedTranscript>();

  /** The window index of each held transcript array (appended to in place; a cut or a reload makes a new array and index). */
  private readonly windows = new WeakMap<readonly ModelMessage[], TranscriptWindowIndex>();

  /** The cost of every cached transcript together (bounded by TRANSCRIPT_CACHE_MAX_CHARS). */
  private transcriptChars = 0;

  /** Extend the cached transcript of a conversation with a stored entry, when it follows the cached ones. */
  rememberTranscript(entry: TranscriptEntry): void {
    const cached = this.transcripts.get(entry.conversationId);
    if (!cached) {
      if (entry.seq === 1) this.cacheTranscript(entry.conversationId, this.holdTranscript({ lastSeq: 0, messages: [], dropped: 0, chars: 0 }, [entry.message]));
      return;
    }
    if (cached.lastSeq !== entry.seq - 1) return; // a gap (another node appended): the next read tops it up from the store
    this.transcriptChars -= cached.chars;
    this.holdTranscript(cached, [entry.message]);
    this.transcriptChars += cached.chars;
    this.boundTranscripts(entry.conversationId);
  }

  /**
   * Append stored messages (the next seqs) to a cached copy, then cut it back to what the window can use when it
   * holds twice the budget (so the cut, which reads the copy, happens once per budget's worth of messages).
   */
  private holdTranscript(cached: CachedTranscript, messages: readonly ModelMessage[]): CachedTranscript {
    for (const message of messages) {
      cached.messages.push(message);
      cached.chars += messageCost(message);
    }
    cached.lastSeq += messages.length;
    const budget = this.core.transcriptBudget();
    if (cached.chars > 2 * budget) {
      const start = windowStart(cached.messages, budget);
      if (start > 0) {
        // A new array: a caller may still hold the old one for the step it is sending.
        cached.messages = cached.messages.slice(start);
        cached.dropped += start;
        cached.chars = 0;
        for (const message of cached.messages) cached.chars += messageCost(message);
      }
    }
    return cached;
  }

  private cacheTranscript(conversationId: string, cached: CachedTranscript): void {
    const previous = this.transcripts.get(conversationId);
    if (previous) this.transcriptChars -= previous.chars;
    this.transcripts.delete(conversationId); // re-inserted: most recent last
    this.transcripts.set(conversationId, cached);
    this.transcriptChars += cached.chars;
    this.boundTranscripts(conversationId);
  }

  /** Drop the least recent conversations' copies past the count or the total size (never `keep`, the one just used). */
  private boundTranscripts(keep: string): void {
    for (const [id, cached] of this.transcripts) {
      if (this.transcripts.size <= RECENT_CONVERSATIONS && this.transcriptChars <= (this.core.options.transcriptCacheChars ?? TRANSCRIPT_CACHE_MAX_CHARS)) return;
      if (id === keep) continue;
      this.transcripts.delete(id);
      this.transcriptChars -= cached.chars;
    }
  }

  /** What the transcript cache holds now: conversations, messages and their cost (for tests and metrics). */
  transcriptCacheSize(): { conversations: number; messages: number; chars: number } {
    let messages = 0;
    for (const cached of this.transcripts.values()) messages += cached.messages.length;
    return { conversations: this.transcripts.size, messages, chars: this.transcriptChars };
  }

  /**
   * The model transcript of a conversation as stored up to (at least) `conversation.lastTranscriptSeq`, as far
   * back as the window can use (`earlier`: how many older messages are not held): from memory when the cache is
   * that current, else topped up (or read whole) from the store.
   */
  async transcriptOf(conversation: ConversationRecord): Promise<{ messages: readonly ModelMessage[]; earlier: number }> {
    const cached = this.transcripts.get(conversation.id);
    if (cached && cached.lastSeq >= conversation.lastTranscriptSeq) return { messages: cached.messages, earlier: cached.dropped };
    const after = cached?.lastSeq ?? 0;
    const entries = await this.core.store.listTranscript(conversation.id, after);
    let current = this.transcripts.get(conversation.id);
    if (current && current.lastSeq !== after) current = undefined; // changed meanwhile: rebuild below
    if (!current && after > 0) return this.reloadTranscript(conversation.id);
    if (entries.some((entry, index) => entry.seq !== after + index + 1)) return this.reloadTranscript(conversation.id);
    const held = current ? { ...current, messages: current.messages.slice() } : { lastSeq: 0, messages: [], dropped: 0, chars: 0 };
    this.holdTranscript(held, entries.map((entry) => entry.message));
    this.cacheTranscript(conversation.id, held);
    return { messages: held.messages, earlier: held.dropped };
  }

  /**
   * What of the conversation's transcript the model is sent (transcriptWindow of what transcriptOf gives,
   * followed by `pending`: a step held for the turn's end, not stored yet), found from the held copy's window
   * index: a step's cost does not grow with the conversation.
   */
  async windowOf(conversation: ConversationRecord, budgetChars: number, pending: readonly ModelMessage[] = []): Promise<ModelMessage[]> {
    const { messages, earlier } = await this.transcriptOf(conversation);
    let index = this.windows.get(messages);
    if (!index) this.windows.set(messages, (index = new TranscriptWindowIndex()));
    return index.window(messages, budgetChars, earlier, pending);
  }

  private async reloadTranscript(conversationId: string): Promise<{ messages: readonly ModelMessage[]; earlier: number }> {
    const entries = await this.core.store.listTranscript(conversationId);
    const held = this.holdTranscript({ lastSeq: 0, messages: [], dropped: 0, chars: 0 }, entries.map((entry) => entry.message));
    held.lastSeq = entries.at(-1)?.seq ?? 0;
    this.cacheTranscript(conversationId, held);
    return { messages: held.messages, earlier: held.dropped };
  }
}
