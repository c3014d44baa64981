// The EventBus over Redis pub/sub: one channel per conversation, a subscriber connection of its own,
// background reconnects, and polling of the store while Redis is unreachable.
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import {
  busNoticeSchema,
  clampPollInterval,
  clampSafetyPoll,
  closedResult,
  messageOf,
  parsePublish,
  type BusHealth,
  type BusListener,
  type EventBus,
  type LatestSeqs,
  type PublishResult,
  type Unsubscribe,
} from "./eventBus.ts";
import { LocalFanout, reportListenerError } from "./localFanout.ts";
import { StorePoller, type TransportBusOptions } from "./storePoller.ts";

export const BUS_PREFIX_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
/** SUBSCRIBE at most this many channels per command when re-subscribing after a reconnect. */
const RESUBSCRIBE_BATCH = 1_000;

export type RedisBusOptions = TransportBusOptions & {
  /** `redis://host:port/db` (CAPLO_REDIS_URL). */
  url: string;
  /** Channel names are `<prefix>:conv:<conversationId>`; nodes of one deployment share it. */
  prefix?: string;
};

export class RedisBus implements EventBus {
  readonly transport = "redis" as const;
  #prefix: string;
  #fanout: LocalFanout;
  #poller: StorePoller;
  #pub: Redis;
  #sub: Redis;
  #subscribed = false; // the subscriber connection is ready and has re-subscribed every channel
  #health: BusHealth;
  #pollMs: number;
  #safetyMs: number;
  #lastError = "connecting to Redis";
  #onHealthChange: ((health: BusHealth) => void) | undefined;
  /** This bus's tag on what it publishes, so its own echo is dropped before anything is parsed. */
  #tag = randomBytes(6).toString("base64url");
  #echoSuffix = `,"n":"${this.#tag}"}`;
  /** Notices waiting for this tick's publish: the highest seq per conversation, and who waits for the result. */
  #outbox = new Map<string, number>();
  #flushing: Promise<PublishResult> | undefined;

  constructor(options: RedisBusOptions) {
    const prefix = options.prefix ?? "caplo";
    if (!BUS_PREFIX_PATTERN.test(prefix)) throw new Error(`bus prefix '${prefix}' must match ${BUS_PREFIX_PATTERN}`);
    this.#prefix = prefix;
    this.#onHealthChange = options.onHealthChange;
    this.#fanout = new LocalFanout(options.onListenerError ?? reportListenerError);
    this.#pollMs = clampPollInterval(options.pollIntervalMs);
    this.#safetyMs = clampSafetyPoll(options.safetyPollMs);
    this.#poller = new StorePoller({
      latestSeqs: options.latestSeqs,
      fanout: this.#fanout,
      onError: (error) => this.#noteError(`polling the store failed: ${messageOf(error)}`),
    });
    const min = Math.max(10, options.reconnectMinMs ?? 100);
    const max = Math.max(min, options.reconnectMaxMs ?? 5_000);
    const retryStrategy = (times: number) => Math.min(max, min * 2 ** Math.min(times - 1, 16));
    // Publishing fails at once while Redis is down instead of queueing: the store has the events, and a
    // queued notice replayed minutes later would only be noise.
    this.#pub = new Redis(options.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy, lazyConnect: true });
    // Subscriptions are re-made by this class after each reconnect, so it knows when they are live.
    this.#sub = new Redis(options.url, { enableOfflineQueue: false, autoResubscribe: false, maxRetriesPerRequest: 0, retryStrategy, lazyConnect: true });
    this.#health = { transport: "redis", state: "degraded", since: Date.now(), reason: this.#lastError, polling: true };
    this.#poller.run(this.#pollMs, true);

    for (const connection of [this.#pub, this.#sub]) {
      connection.on("error", (error: Error) => this.#noteError(messageOf(error)));
      connection.on("close", () => this.#onConnectionLost());
    }
    this.#pub.on("ready", () => this.#recompute());
    this.#sub.on("ready", () => void this.#resubscribe());
    this.#sub.on("message", (channel: string, message: string) => this.#onMessage(channel, message));
    // lazyConnect + connect(): a failed first attempt is retried by retryStrategy like any other.
    this.#pub.connect().catch((error: unknown) => this.#noteError(messageOf(error)));
    this.#sub.connect().catch((error: unknown) => this.#noteError(messageOf(error)));
  }

  async publish(conversationId: string, notice: { seq: number }): Promise<PublishResult> {
    const parsed = parsePublish(conversationId, notice);
    if (!parsed.ok) return parsed;
    if (this.#health.state === "closed") return closedResult();
    // Local listeners first: they do not depend on Redis, and the echo is dropped as already seen.
    this.#fanout.deliver(parsed.conversationId, parsed.notice.seq);
    // Merged per conversation per tick of the event loop: one PUBLISH of the highest seq each, all in one pipeline.
    const queued = this.#outbox.get(parsed.conversationId);
    if (queued === undefined || parsed.notice.seq > queued) this.#outbox.set(parsed.conversationId, parsed.notice.seq);
    this.#flushing ??= new Promise<PublishResult>((resolve) => setImmediate(() => void this.#flush().then(resolve)));
    return this.#flushing;
  }

  async #flush(): Promise<PublishResult> {
    const outbox = this.#outbox;
    this.#outbox = new Map();
    this.#flushing = undefined;
    const pipeline = this.#pub.pipeline();
    for (const [conversationId, seq] of outbox) pipeline.publish(this.#channel(conversationId), `{"seq":${seq}${this.#echoSuffix}`);
    try {
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([error]) => error);
      if (failed) throw failed[0];
      return { ok: true };
    } catch (error) {
      return { ok: false, error: { code: "bus_unavailable", path: "", message: `Redis publish failed: ${messageOf(error)}` } };
    }
  }

  subscribe(conversationId: string, listener: BusListener): Unsubscribe {
    if (this.#health.state === "closed") return Object.assign(() => {}, { ready: Promise.resolve() });
    const { first, remove } = this.#fanout.add(conversationId, listener);
    let ready = Promise.resolve();
    // While not subscribed, the poller covers this conversation and #resubscribe will include it.
    if (first && this.#subscribed) {
      ready = this.#sub.subscribe(this.#channel(conversationId)).then(
        () => undefined,
        (error: unknown) => this.#noteError(messageOf(error)),
      );
    }
    const unsubscribe = () => {
      const { last } = remove();
      if (last && this.#subscribed) {
        this.#sub.unsubscribe(this.#channel(conversationId)).catch((error: unknown) => this.#noteError(messageOf(error)));
      }
    };
    return Object.assign(unsubscribe, { ready });
  }

  health(): BusHealth {
    return { ...this.#health };
  }

  async close(): Promise<void> {
    if (this.#health.state === "closed") return;
    this.#subscribed = false;
    this.#poller.stop();
    this.#setHealth({ transport: "redis", state: "closed", since: Date.now(), polling: false });
    this.#fanout.clear();
    this.#pub.disconnect();
    this.#sub.disconnect();
  }

  #channel(conversationId: string): string {
    return `${this.#prefix}:conv:${conversationId}`;
  }

  #onMessage(channel: string, message: string): void {
    // This node's own notice, already delivered locally when it was published: dropped unparsed.
    if (message.endsWith(this.#echoSuffix)) return;
    const head = `${this.#prefix}:conv:`;
    if (!channel.startsWith(head)) return;
    let body: unknown;
    try {
      body = JSON.parse(message);
    } catch {
      body = undefined;
    }
    // Another node's notice: {"seq":N} with that node's tag (or without one).
    const { n, ...notice } = (typeof body === "object" && body !== null ? body : {}) as { n?: unknown };
    const parsed = busNoticeSchema.safeParse(notice);
    if (!parsed.success || (n !== undefined && typeof n !== "string")) {
      console.warn(`bus_notice_malformed: dropped a Redis message on ${channel} that is not {"seq":N}`);
      return;
    }
    this.#fanout.deliver(channel.slice(head.length), parsed.data.seq);
  }

  async #resubscribe(): Promise<void> {
    // Listeners may come and go while the SUBSCRIBEs are on their way: repeat until what Redis has
    // matches what this node wants, then go live (after which subscribe/unsubscribe talk to Redis).
    const live = new Set<string>();
    try {
      for (;;) {
        const wanted = new Set(this.#fanout.conversations());
        const add = [...wanted].filter((id) => !live.has(id));
        const drop = [...live].filter((id) => !wanted.has(id));
        if (add.length === 0 && drop.length === 0) break;
        for (let start = 0; start < add.length; start += RESUBSCRIBE_BATCH) {
          const batch = add.slice(start, start + RESUBSCRIBE_BATCH);
          await this.#sub.subscribe(...batch.map((id) => this.#channel(id)));
          for (const id of batch) live.add(id);
        }
        for (let start = 0; start < drop.length; start += RESUBSCRIBE_BATCH) {
          const batch = drop.slice(start, start + RESUBSCRIBE_BATCH);
          await this.#sub.unsubscribe(...batch.map((id) => this.#channel(id)));
          for (const id of batch) live.delete(id);
        }
      }
    } catch (error) {
      // The connection dropped again; its next "ready" starts over.
      this.#noteError(messageOf(error));
      return;
    }
    if (this.#health.state === "closed" || this.#sub.status !== "ready") return;
    this.#subscribed = true;
    this.#recompute();
  }

  #onConnectionLost(): void {
    if (this.#health.state === "closed") return;
    if (this.#sub.status !== "ready") this.#subscribed = false;
    this.#recompute();
  }

  #noteError(message: string): void {
    this.#lastError = message;
    if (this.#health.state === "degraded" && this.#health.reason !== message) {
      this.#setHealth({ ...this.#health, reason: message });
    }
  }

  /** Healthy only when both connections are up and every subscription is live; otherwise poll. */
  #recompute(): void {
    if (this.#health.state === "closed") return;
    const healthy = this.#subscribed && this.#pub.status === "ready";
    if (healthy && this.#health.state !== "healthy") {
      this.#poller.run(this.#safetyMs, false); // the safety net only (or nothing, if 0)
      this.#setHealth({ transport: "redis", state: "healthy", since: Date.now(), polling: false });
      // Anything stored while notices could not arrive: one last look at the store.
      void this.#poller.pollOnce();
    } else if (!healthy && this.#health.state !== "degraded") {
      const reason = this.#pub.status !== "ready" && this.#subscribed ? `publish connection down: ${this.#lastError}` : this.#lastError;
      this.#setHealth({ transport: "redis", state: "degraded", since: Date.now(), reason, polling: true });
      this.#poller.run(this.#pollMs, true);
    }
  }

  #setHealth(health: BusHealth): void {
    this.#health = health;
    this.#onHealthChange?.({ ...health });
  }
}
