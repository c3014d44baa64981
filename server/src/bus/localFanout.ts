// The listeners of one node, per conversation: hands each notice to them once, newest seq only.
//
// Every bus implementation delivers through this, so a notice seen twice (published locally and echoed
// back by Redis or PostgreSQL, or found again by a poll) reaches a listener once, and an older notice
// arriving after a newer one is dropped: the listener reads the store from its own cursor anyway.
import type { BusListener } from "./eventBus.ts";

type Entry = { highest: number; listeners: Set<BusListener> };

export type ListenerErrorHandler = (error: unknown, conversationId: string) => void;

export class LocalFanout {
  #entries = new Map<string, Entry>();
  #onError: ListenerErrorHandler;

  constructor(onError: ListenerErrorHandler) {
    this.#onError = onError;
  }

  /** Register a listener. `first` says whether this node just started caring about the conversation. */
  add(conversationId: string, listener: BusListener): { first: boolean; remove: () => { last: boolean } } {
    let entry = this.#entries.get(conversationId);
    const first = entry === undefined;
    if (!entry) {
      entry = { highest: 0, listeners: new Set() };
      this.#entries.set(conversationId, entry);
    }
    // A wrapper, so the same function subscribed twice is two subscriptions with two removals.
    const own: BusListener = (id, notice) => listener(id, notice);
    entry.listeners.add(own);
    let removed = false;
    return {
      first,
      remove: () => {
        if (removed) return { last: false };
        removed = true;
        const current = this.#entries.get(conversationId);
        if (!current) return { last: false };
        current.listeners.delete(own);
        if (current.listeners.size > 0) return { last: false };
        this.#entries.delete(conversationId);
        return { last: true };
      },
    };
  }

  /**
   * Deliver `seq` to the conversation's listeners if it is newer than any delivered before.
   * Listeners run in a microtask (never inside the publisher's call), each guarded on its own.
   */
  deliver(conversationId: string, seq: number): boolean {
    const entry = this.#entries.get(conversationId);
    if (!entry || seq <= entry.highest) return false;
    entry.highest = seq;
    const listeners = [...entry.listeners];
    queueMicrotask(() => {
      for (const listener of listeners) {
        try {
          listener(conversationId, { seq });
        } catch (error) {
          this.#onError(error, conversationId);
        }
      }
    });
    return true;
  }

  has(conversationId: string): boolean {
    return this.#entries.has(conversationId);
  }

  conversations(): string[] {
    return [...this.#entries.keys()];
  }

  clear(): void {
    this.#entries.clear();
  }
}

/** Default for a listener that throws: say so on stderr with the conversation, never crash the node. */
export function reportListenerError(error: unknown, conversationId: string): void {
  const message = error instanceof Error ? error.message : String(error);
  console.error(`bus_listener_failed: a listener for conversation ${conversationId} threw: ${message}`);
}
