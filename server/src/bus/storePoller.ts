// The slower path while a bus transport is down: ask the store for the latest seq of every conversation
// subscribed on this node, at a bounded interval, and hand anything new to the local listeners. While the
// transport is up it also runs, far less often, as a safety net for a notice another node failed to send.
import type { BusHealth, LatestSeqs } from "./eventBus.ts";
import type { ListenerErrorHandler, LocalFanout } from "./localFanout.ts";

export type StorePollerOptions = {
  latestSeqs: LatestSeqs;
  fanout: LocalFanout;
  /** A poll that failed (the store is unreachable too); the poller tries again next interval. */
  onError: (error: unknown) => void;
};

export class StorePoller {
  #options: StorePollerOptions;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #intervalMs = 0;
  #inFlight: Promise<void> | undefined;

  constructor(options: StorePollerOptions) {
    this.#options = options;
  }

  get running(): boolean {
    return this.#running;
  }

  get intervalMs(): number {
    return this.#running ? this.#intervalMs : 0;
  }

  /**
   * Poll every `intervalMs` (already clamped by the bus), one poll at a time; `now` also polls at once.
   * Calling it again changes the interval. Zero stops polling.
   */
  run(intervalMs: number, now: boolean): void {
    if (intervalMs <= 0) return this.stop();
    const changed = !this.#running || intervalMs !== this.#intervalMs;
    this.#running = true;
    this.#intervalMs = intervalMs;
    if (!changed && !now) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#schedule(now ? 0 : intervalMs);
  }

  stop(): void {
    this.#running = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** One poll now (also used to catch up after the transport comes back). Never rejects. */
  pollOnce(): Promise<void> {
    // Polls never overlap: a caller during a poll waits for it and then polls again, so nothing written
    // after the earlier poll began is missed.
    const previous = this.#inFlight ?? Promise.resolve();
    const next = previous.then(() => this.#poll());
    this.#inFlight = next;
    void next.finally(() => {
      if (this.#inFlight === next) this.#inFlight = undefined;
    });
    return next;
  }

  async #poll(): Promise<void> {
    const { fanout, latestSeqs, onError } = this.#options;
    const ids = fanout.conversations();
    if (ids.length === 0) return;
    let latest: ReadonlyMap<string, number>;
    try {
      latest = await latestSeqs(ids);
    } catch (error) {
      onError(error);
      return;
    }
    for (const [id, seq] of latest) {
      // The callback is outside code: take only whole positive numbers for conversations asked about.
      if (Number.isSafeInteger(seq) && seq >= 1) fanout.deliver(id, seq);
    }
  }

  #schedule(delay: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#running) return;
      void this.pollOnce().then(() => {
        if (this.#running && !this.#timer) this.#schedule(this.#intervalMs);
      });
    }, delay);
    this.#timer.unref();
  }
}

/** The options every networked bus transport shares: store polling, reconnect backoff and callbacks. */
export type TransportBusOptions = {
  /** Where notices come from while the transport is down: the store's latest seq per conversation. */
  latestSeqs: LatestSeqs;
  /** How often to poll the store while the transport is down (50 ms to 60 s, default 1 s). */
  pollIntervalMs?: number;
  /** How often to poll the store while healthy, for notices another node failed to send (0 = never; 1 s to 10 min, default 30 s). */
  safetyPollMs?: number;
  /** Reconnect backoff: doubles from min to max, forever, until `close()`. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  onHealthChange?: (health: BusHealth) => void;
  onListenerError?: ListenerErrorHandler;
};
