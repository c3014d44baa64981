// The EventBus over PostgreSQL LISTEN/NOTIFY, for deployments without Redis: one channel for the whole
// deployment, a listening connection of its own that is re-made (and LISTENs again) after it drops, and
// polling of the store while it is down.
//
// One channel, not one per conversation: PostgreSQL channel names are identifiers of at most 63 bytes,
// and a backend's LISTEN list is scanned per notification. Every node therefore sees every notice and
// keeps those it has listeners for, which is cheap for the few nodes this path is meant for (use Redis
// for more).
import pg from "pg";
import {
  clampPollInterval,
  clampSafetyPoll,
  closedResult,
  messageOf,
  conversationIdSchema,
  busNoticeSchema,
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
import { z } from "zod";

export const PG_CHANNEL_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** The NOTIFY payload: short keys, it is sent once per event to every node. */
const payloadSchema = z.object({ c: conversationIdSchema, s: busNoticeSchema.shape.seq }).strict();

export type PostgresBusOptions = TransportBusOptions & {
  /** `postgres://user@host:port/db` (CAPLO_DATABASE_URL). */
  connectionString: string;
  /** LISTEN/NOTIFY channel shared by the nodes of one deployment. */
  channel?: string;
  /** How long a publish may wait for a connection before it is reported as failed. */
  connectTimeoutMs?: number;
};

export class PostgresBus implements EventBus {
  readonly transport = "postgres" as const;
  #options: PostgresBusOptions;
  #channel: string;
  #fanout: LocalFanout;
  #poller: StorePoller;
  #pool: pg.Pool;
  #listener: pg.Client | undefined;
  #attempt = 0;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #health: BusHealth;
  #pollMs: number;
  #safetyMs: number;
  #connectTimeoutMs: number;
  #lastError = "connecting to PostgreSQL";

  constructor(options: PostgresBusOptions) {
    const channel = options.channel ?? "caplo_events";
    if (!PG_CHANNEL_PATTERN.test(channel)) throw new Error(`bus channel '${channel}' must match ${PG_CHANNEL_PATTERN}`);
    this.#options = options;
    this.#channel = channel;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 3_000;
    this.#fanout = new LocalFanout(options.onListenerError ?? reportListenerError);
    this.#pollMs = clampPollInterval(options.pollIntervalMs);
    this.#safetyMs = clampSafetyPoll(options.safetyPollMs);
    this.#poller = new StorePoller({
      latestSeqs: options.latestSeqs,
      fanout: this.#fanout,
      onError: (error) => this.#noteError(`polling the store failed: ${messageOf(error)}`),
    });
    this.#pool = new pg.Pool({ connectionString: options.connectionString, max: 2, connectionTimeoutMillis: this.#connectTimeoutMs, application_name: "caplo-bus-notify" });
    // An idle pooled connection that dies emits here; the next publish gets a fresh one.
    this.#pool.on("error", (error) => this.#noteError(messageOf(error)));
    this.#health = { transport: "postgres", state: "degraded", since: Date.now(), reason: "connecting to PostgreSQL", polling: true };
    this.#poller.run(this.#pollMs, true);
    void this.#connect();
  }

  async publish(conversationId: string, notice: { seq: number }): Promise<PublishResult> {
    const parsed = parsePublish(conversationId, notice);
    if (!parsed.ok) return parsed;
    if (this.#health.state === "closed") return closedResult();
    this.#fanout.deliver(parsed.conversationId, parsed.notice.seq);
    try {
      await this.#pool.query("SELECT pg_notify($1, $2)", [this.#channel, JSON.stringify({ c: parsed.conversationId, s: parsed.notice.seq })]);
      return { ok: true };
    } catch (error) {
      return { ok: false, error: { code: "bus_unavailable", path: "", message: `PostgreSQL NOTIFY failed: ${messageOf(error)}` } };
    }
  }

  subscribe(conversationId: string, listener: BusListener): Unsubscribe {
    const noop = Object.assign(() => {}, { ready: Promise.resolve() });
    if (this.#health.state === "closed") return noop;
    // One LISTEN covers every conversation: when healthy it is already live; when degraded, the
    // poller picks this conversation up on its next round.
    const { remove } = this.#fanout.add(conversationId, listener);
    return Object.assign(() => void remove(), { ready: Promise.resolve() });
  }

  health(): BusHealth {
    return { ...this.#health };
  }

  async close(): Promise<void> {
    if (this.#health.state === "closed") return;
    this.#setHealth({ transport: "postgres", state: "closed", since: Date.now(), polling: false });
    this.#poller.stop();
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    this.#fanout.clear();
    const listener = this.#listener;
    this.#listener = undefined;
    await Promise.allSettled([listener?.end(), this.#pool.end()]);
  }

  async #connect(): Promise<void> {
    if (this.#health.state === "closed") return;
    const client = new pg.Client({ connectionString: this.#options.connectionString, connectionTimeoutMillis: this.#connectTimeoutMs, application_name: "caplo-bus-listen" });
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (error) this.#noteError(messageOf(error));
      client.removeAllListeners("notification");
      client.end().catch(() => undefined); // already broken; ending only frees the socket
      if (this.#listener === client) this.#listener = undefined;
      this.#degrade();
      this.#scheduleReconnect();
    };
    client.on("error", onLost);
    client.on("end", () => onLost());
    client.on("notification", (message) => this.#onNotification(message.channel, message.payload));
    try {
      await client.connect();
      // The channel matches PG_CHANNEL_PATTERN, so it is a plain identifier; quoting keeps it exact.
      await client.query(`LISTEN "${this.#channel}"`);
    } catch (error) {
      onLost(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    if (lost) return;
    if (this.#isClosed()) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#listener = client;
    this.#attempt = 0;
    this.#poller.run(this.#safetyMs, false); // the safety net only (or nothing, if 0)
    this.#setHealth({ transport: "postgres", state: "healthy", since: Date.now(), polling: false });
    // Events stored while nothing listened: one last look at the store.
    void this.#poller.pollOnce();
  }

  #isClosed(): boolean {
    return this.#health.state === "closed";
  }

  #scheduleReconnect(): void {
    if (this.#health.state === "closed" || this.#reconnectTimer) return;
    const min = Math.max(10, this.#options.reconnectMinMs ?? 100);
    const max = Math.max(min, this.#options.reconnectMaxMs ?? 5_000);
    const delay = Math.min(max, min * 2 ** Math.min(this.#attempt, 16));
    this.#attempt += 1;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      void this.#connect();
    }, delay);
    this.#reconnectTimer.unref();
  }

  #onNotification(channel: string, payload: string | undefined): void {
    if (channel !== this.#channel) return;
    let body: unknown;
    try {
      body = JSON.parse(payload ?? "");
    } catch {
      body = undefined;
    }
    const parsed = payloadSchema.safeParse(body);
    if (!parsed.success) {
      console.warn(`bus_notice_malformed: dropped a NOTIFY on ${channel} that is not {"c":id,"s":seq}`);
      return;
    }
    this.#fanout.deliver(parsed.data.c, parsed.data.s);
  }

  #degrade(): void {
    if (this.#health.state !== "healthy") return;
    this.#setHealth({ transport: "postgres", state: "degraded", since: Date.now(), reason: this.#lastError, polling: true });
    this.#poller.run(this.#pollMs, true);
  }

  #noteError(message: string): void {
    this.#lastError = message;
    if (this.#health.state === "degraded" && this.#health.reason !== message) this.#setHealth({ ...this.#health, reason: message });
  }

  #setHealth(health: BusHealth): void {
    this.#health = health;
    this.#options.onHealthChange?.({ ...health });
  }
}
