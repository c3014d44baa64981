// The agent's reply while the model writes it: each text delta is handed to listeners at once (the widget's
// gateway streams it), the text so far is kept for a client that joins mid-reply, and the visitor may stop
// it. Nothing here is stored: the engine stores the reply once, whole, under the same message id, and
// channels send only stored events, so they keep sending whole messages.

/** `text` goes at character `at` of the reply `id`. */
export type ReplyDelta = { id: string; at: number; text: string };

export type ReplyHandle = {
  readonly id: string;
  /** Aborted when the visitor stops the reply. */
  readonly signal: AbortSignal;
  readonly stopped: boolean;
  push(text: string): void;
  end(): void;
};

type Current = { id: string; text: string; abort: AbortController };

export class ReplyStreams {
  private readonly listeners = new Set<(conversationId: string, delta: ReplyDelta) => void>();
  private readonly current = new Map<string, Current>();

  onDelta(listener: (conversationId: string, delta: ReplyDelta) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A model step of a turn starts writing the reply `id`. */
  begin(conversationId: string, id: string): ReplyHandle {
    const entry: Current = { id, text: "", abort: new AbortController() };
    this.current.set(conversationId, entry);
    const listeners = this.listeners;
    const current = this.current;
    return {
      id,
      signal: entry.abort.signal,
      get stopped() {
        return entry.abort.signal.aborted;
      },
      push(text: string) {
        if (text.length === 0 || entry.abort.signal.aborted) return;
        const delta = { id, at: entry.text.length, text };
        entry.text += text;
        for (const listener of listeners) listener(conversationId, delta);
      },
      end() {
        if (current.get(conversationId) === entry) current.delete(conversationId);
      },
    };
  }

  /** The reply being written in a conversation now, as far as it goes (for a client that joins mid-reply). */
  inProgress(conversationId: string): ReplyDelta | undefined {
    const entry = this.current.get(conversationId);
    return entry && entry.text.length > 0 ? { id: entry.id, at: 0, text: entry.text } : undefined;
  }

  /** Stop the reply being written (true if there was one): the text so far becomes the reply. */
  stop(conversationId: string): boolean {
    const entry = this.current.get(conversationId);
    if (!entry || entry.abort.signal.aborted) return false;
    entry.abort.abort();
    return true;
  }
}
