// Per-address limits of one gateway node: how many widget sockets one client address may hold open at once,
// and how many new conversations it may start per minute (that many at once, then one every 60/N seconds:
// a token bucket kept as the time it is full again, GCRA, so the boundary is exact in milliseconds).
// Resuming a conversation is not a new one. Each node counts its own clients.
export type AddressLimits = {
  /** Open sockets per address (an IPv6 client counts by its /64). */
  socketsPerAddress: number;
  /** New conversations per address per minute, and the burst. */
  conversationsPerMinute: number;
};

/**
 * The defaults: enough for the tabs of an office or a mobile carrier's shared address, far below a flood.
 * Raise them with CAPLO_WIDGET_SOCKETS_PER_ADDRESS / CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE.
 */
export const DEFAULT_ADDRESS_LIMITS: AddressLimits = { socketsPerAddress: 30, conversationsPerMinute: 20 };

/** Buckets of addresses beyond this many are swept of full ones (they hold nothing to remember). */
const SWEEP_OVER = 10_000;

export class AddressCounter {
  private readonly sockets = new Map<string, number>();
  /** Per address: when its allowance of new conversations is whole again (the "theoretical arrival time"). */
  private readonly fullAt = new Map<string, number>();
  readonly limits: AddressLimits;
  private readonly now: () => number;

  constructor(limits: AddressLimits, now: () => number = Date.now) {
    this.limits = limits;
    this.now = now;
  }

  /** Take a socket slot for `key`, or false when it already holds the limit. Give it back with `closeSocket`. */
  openSocket(key: string): boolean {
    const open = this.sockets.get(key) ?? 0;
    if (open >= this.limits.socketsPerAddress) return false;
    this.sockets.set(key, open + 1);
    return true;
  }

  closeSocket(key: string): void {
    const open = (this.sockets.get(key) ?? 0) - 1;
    if (open > 0) this.sockets.set(key, open);
    else this.sockets.delete(key);
  }

  /** Take one new conversation for `key`: 0 when allowed, else the milliseconds until one is. */
  startConversation(key: string): number {
    const perMinute = this.limits.conversationsPerMinute;
    const interval = 60_000 / perMinute;
    const now = this.now();
    const fullAt = Math.max(this.fullAt.get(key) ?? now, now);
    // Allowed while the allowance holds at least one: at most perMinute - 1 intervals already taken ahead.
    const wait = fullAt - (perMinute - 1) * interval - now;
    if (wait > 0) return Math.ceil(wait);
    this.fullAt.set(key, fullAt + interval);
    if (this.fullAt.size > SWEEP_OVER) for (const [other, at] of this.fullAt) if (at <= now) this.fullAt.delete(other);
    return 0;
  }

  /** Open sockets of `key` (for tests and metrics). */
  socketsOf(key: string): number {
    return this.sockets.get(key) ?? 0;
  }
}
