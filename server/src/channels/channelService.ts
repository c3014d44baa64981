// The glue between channel webhooks and the engine: webhooks store events durably (webhook.ts), the inbound
// processor turns them into inbound events from the store (inboundProcessor.ts), the outbound sender renders
// each conversation's outbound events in order (outboundSender.ts), and delivery statuses are recorded on
// what was sent (deliveryStatus.ts). This file wires them together and runs their lifecycle.
import type { IncomingMessage } from "node:http";
import type { ChannelAdapter } from "@caplo/adapters/adapter";
import { DeliveryStatuses } from "./deliveryStatus.ts";
import { messageOf, type Glue } from "./glue.ts";
import { InboundProcessor } from "./inboundProcessor.ts";
import { OutboundSender } from "./outboundSender.ts";
import type { Binding, ConversationPort, InboxStore, Platform, TeamAlerts } from "./ports.ts";
import { DEFAULT_RETRY, type RetryPolicy } from "./retry.ts";
import { handleWebhook, toWebhookRequest, type WebhookAnswer } from "./webhook.ts";

export { newToken } from "./outboundSender.ts";

/** Pauses before processing is tried again after the store failed: the first, and the longest. */
const DRAIN_RETRY_FIRST_MS = 500;
const DRAIN_RETRY_MAX_MS = 30_000;

export interface ChannelServiceOptions {
  store: InboxStore;
  port: ConversationPort;
  adapters: ChannelAdapter[];
  alerts?: TeamAlerts;
  retry?: RetryPolicy;
  /** How long processed inbound events (and their dedup keys) are kept; see DEFAULT_RETENTION. */
  retention?: Partial<Retention>;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Operator log lines (an inbound no agent answers); console.warn by default. */
  log?: (line: string) => void;
  /**
   * This server's public https address (`https://caplo.shop.example`): a file the engine delivers at a path
   * of this server (`/v1/files/…`) is sent to the platform at this address. Without it such a file is not sent.
   */
  publicUrl?: string;
  /** Pauses before processing (or handling an outbound event) is tried again after the store failed (first, longest); 500 ms doubling to 30 s. */
  drainRetryMs?: { first: number; max: number };
}

export interface Retention {
  /** Processed inbox rows, sent outbox records and the engine's accepted source ids older than this are deleted. */
  keepMs: number;
  /** How often pruning runs once started. */
  everyMs: number;
}

/**
 * Seven days: far past any platform redelivery (Meta retries an unanswered webhook for hours and
 * unsubscribes an app failing for 8; Twilio retries only briefly), so a late repeat of a MessageSid or mid
 * still finds its dedup key.
 */
export const DEFAULT_RETENTION: Retention = { keepMs: 7 * 24 * 60 * 60 * 1000, everyMs: 60 * 60 * 1000 };

/** `admit`: whether a request whose signature holds may be taken now (the webhook's rate limit); absent, it is. */
export type WebhookHandler = (req: IncomingMessage, rawBody: Buffer, admit?: () => boolean) => Promise<WebhookAnswer>;

export class ChannelService {
  readonly #store: InboxStore;
  readonly #port: ConversationPort;
  readonly #adapters = new Map<Platform, ChannelAdapter>();
  readonly #alerts: TeamAlerts;
  readonly #now: () => number;
  #draining: Promise<void> | null = null;
  readonly #inflight = new Set<Promise<unknown>>();
  #again = false;
  readonly #retention: Retention;
  readonly #log: (line: string) => void;
  readonly #drainRetry: { first: number; max: number };
  readonly #sender: OutboundSender;
  readonly #inbound: InboundProcessor;
  #closed = false;
  #drainTimer: NodeJS.Timeout | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  #drainBackoffMs = 0;
  #pruneTimer: NodeJS.Timeout | undefined;

  constructor(options: ChannelServiceOptions) {
    this.#store = options.store;
    this.#port = options.port;
    for (const adapter of options.adapters) this.#adapters.set(adapter.platform, adapter);
    this.#alerts = options.alerts ?? { alert: () => {} };
    this.#now = options.now ?? Date.now;
    this.#retention = { ...DEFAULT_RETENTION, ...options.retention };
    this.#log = options.log ?? ((line) => console.warn(line));
    this.#drainRetry = options.drainRetryMs ?? { first: DRAIN_RETRY_FIRST_MS, max: DRAIN_RETRY_MAX_MS };
    const glue: Glue = {
      store: this.#store,
      port: this.#port,
      alerts: this.#alerts,
      log: this.#log,
      now: this.#now,
      adapter: (platform) => this.#adapter(platform),
      closed: () => this.#closed,
      track: (work) => this.#track(work),
      recordUndelivered: (platform, conversationId, text) => this.#recordUndelivered(platform, conversationId, text),
    };
    this.#sender = new OutboundSender(glue, {
      retry: options.retry ?? DEFAULT_RETRY,
      sleep: options.sleep,
      publicUrl: options.publicUrl?.replace(/\/$/, ""),
      retryFirstMs: this.#drainRetry.first,
    });
    this.#inbound = new InboundProcessor(glue, this.#sender, new DeliveryStatuses(glue, this.#sender));
  }

  /** The webhook handler of one platform: `(req, rawBody) → {status, headers, body}`. */
  webhook(platform: Platform): WebhookHandler {
    const adapter = this.#adapter(platform);
    return (req, rawBody, admit) => handleWebhook(adapter, this.#store, toWebhookRequest(req, rawBody), () => this.#kick(), this.#now, admit);
  }

  /**
   * Starts processing in the background. If the store fails meanwhile (unreachable, busy), the stored
   * events stay received and processing is tried again after a growing pause (0.5 s doubling to 30 s):
   * they do not wait for the next webhook, and the failure never ends the process.
   */
  #kick(): void {
    if (this.#closed) return;
    this.drain().then(
      () => {
        this.#drainBackoffMs = 0;
      },
      (error: unknown) => {
        if (this.#drainTimer || this.#closed) return;
        this.#drainBackoffMs = Math.min(this.#drainRetry.max, this.#drainBackoffMs === 0 ? this.#drainRetry.first : this.#drainBackoffMs * 2);
        this.#log(`caplo channels: processing stored events failed (${messageOf(error)}); trying again in ${this.#drainBackoffMs} ms`);
        this.#drainTimer = setTimeout(() => {
          this.#drainTimer = undefined;
          this.#kick();
        }, this.#drainBackoffMs);
        this.#drainTimer.unref?.();
      },
    );
  }

  /** After a restart: rows a crash left in processing are processed again, and every binding resubscribes. */
  async resume(bindings: Binding[]): Promise<void> {
    await this.#store.requeueProcessing();
    for (const binding of bindings) this.#sender.ensureSubscribed(binding);
    await this.drain();
  }

  /** Processes every stored inbound event, oldest first; concurrent calls share one pass. */
  drain(): Promise<void> {
    if (this.#draining) {
      this.#again = true;
      return this.#draining;
    }
    this.#draining = (async () => {
      try {
        do {
          this.#again = false;
          for (;;) {
            const rows = await this.#store.claimInbound(20);
            if (rows.length === 0) break;
            for (const row of rows) await this.#inbound.process(row);
          }
        } while (this.#again);
      } finally {
        this.#draining = null;
      }
    })();
    return this.#draining;
  }

  /** Resolves when no inbound processing, engine hand-off or outbound sending is under way. */
  async idle(): Promise<void> {
    for (;;) {
      const pending = [this.#draining, ...this.#inflight, ...this.#sender.pending()].filter(Boolean);
      await Promise.all(pending);
      const still = [this.#draining, ...this.#inflight, ...this.#sender.pending()].filter(Boolean);
      if (still.length === pending.length && still.every((p, i) => p === pending[i])) return;
    }
  }

  close(): void {
    this.#closed = true;
    if (this.#drainTimer) clearTimeout(this.#drainTimer);
    this.#drainTimer = undefined;
    if (this.#sweepTimer) clearInterval(this.#sweepTimer);
    this.#sweepTimer = undefined;
    this.stopPruning();
    this.#sender.unsubscribeAll();
  }

  /**
   * Retention: deletes what is older than the retention window and no longer needed — processed inbox rows
   * (done or failed; never one still waiting), sent outbox records and the engine's accepted source ids.
   * A row received exactly `keepMs` ago is kept.
   */
  async prune(): Promise<{ inbox: number; outbox: number; sources: number }> {
    const before = this.#now() - this.#retention.keepMs;
    const { inbox, outbox } = await this.#store.prune(before);
    const sources = await this.#port.pruneSources(before);
    return { inbox, outbox, sources };
  }

  /** Prunes now and then every `everyMs`; the timer never keeps the process alive. */
  startPruning(): void {
    if (this.#pruneTimer) return;
    const run = () => {
      this.prune().catch((error: unknown) => this.#log(`caplo channels: pruning failed: ${messageOf(error)}`));
    };
    run();
    this.#pruneTimer = setInterval(run, this.#retention.everyMs);
    this.#pruneTimer.unref?.();
  }

  /**
   * Looks for stored events every `everyMs` even when no webhook arrives: an event whose claim a lost node
   * held (PostgreSQL: claimable again when that node's liveness lease ends) or one stored by a node that
   * stopped before processing it is processed without waiting for the next message. The timer never keeps
   * the process alive; a failing pass is retried as after a webhook.
   */
  startSweeping(everyMs: number): void {
    if (this.#sweepTimer || this.#closed) return;
    this.#sweepTimer = setInterval(() => {
      if (!this.#draining) this.#kick();
    }, everyMs);
    this.#sweepTimer.unref?.();
  }

  stopPruning(): void {
    if (this.#pruneTimer) clearInterval(this.#pruneTimer);
    this.#pruneTimer = undefined;
  }

  #adapter(platform: Platform): ChannelAdapter {
    const adapter = this.#adapters.get(platform);
    if (!adapter) throw new Error(`no adapter for ${platform}`);
    return adapter;
  }

  #track(work: Promise<unknown>): void {
    const settled = work.finally(() => this.#inflight.delete(settled));
    this.#inflight.add(settled);
  }

  #recordUndelivered(platform: Platform, conversationId: string, text: string): void {
    const failed = (message: string) => this.#alerts.alert({ platform, conversationId, code: "record_failed", message: `Could not record an undelivered message: ${message}` });
    this.#track(
      this.#port
        .recordUndelivered(conversationId, text)
        .then((result) => {
          if (!result.ok) failed(`${result.code}: ${result.message}`);
        })
        .catch((error: unknown) => failed(messageOf(error))),
    );
  }
}
