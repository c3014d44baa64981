// Per-address limits of one gateway node: how many widget sockets one client address may hold open at once,
// and how many new conversations it may start per minute (a token bucket: that many at once, then one
// every 60/N seconds). Resuming a conversation is not a new one. Each node counts its own clients.
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
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
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
    const now = this.now();
    const bucket = this.refilled(key, now);
    if (bucket.tokens < 1) return Math.ceil(((1 - bucket.tokens) * 60_000) / perMinute);
    bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    if (this.buckets.size > SWEEP_OVER) this.sweep(now);
    return 0;
  }

  private refilled(key: string, now: number): { tokens: number; at: number } {
    const perMinute = this.limits.conversationsPerMinute;
    const bucket = this.buckets.get(key) ?? { tokens: perMinute, at: now };
    bucket.tokens = Math.min(perMinute, bucket.tokens + ((now - bucket.at) / 60_000) * perMinute);
    bucket.at = now;
    return bucket;
  }

  private sweep(now: number): void {
    for (const key of [...this.buckets.keys()]) if (this.refilled(key, now).tokens >= this.limits.conversationsPerMinute) this.buckets.delete(key);
  }

  /** Open sockets of `key` (for tests and metrics). */
  socketsOf(key: string): number {
    return this.sockets.get(key) ?? 0;
  }
}
