// Delivery statuses the platforms report about messages we sent — Twilio's status callbacks (queued, sent,
// delivered, read, failed, undelivered with an error code) and Meta's delivery and read receipts — kept on
// the part they are about, with their times. A failure is also recorded on the part, told to the team and
// noted in the history; one refused for the 24-hour window (63016) sends the agent's approved template.
import type { ChannelEvent } from "@caplo/adapters/adapter";
import { TWILIO_ERROR_OUTSIDE_WINDOW } from "@caplo/shared/channels";
import type { Glue } from "./glue.ts";
import type { OutboundSender } from "./outboundSender.ts";
import type { DeliveryStatus, OutboxRecord, Platform } from "./ports.ts";

export type StatusEvent = Extract<ChannelEvent, { kind: "status" }>;

/** Statuses that mean the message will not reach the customer. */
const FAILURES = new Set(["failed", "undelivered"]);

/**
 * How far along a part is, by its statuses: the furthest one reached. A failure ranks above sent (it ends a
 * send) and below delivered (a part the customer got was delivered, whatever a late callback says).
 */
const RANK: Readonly<Record<string, number>> = { accepted: 0, scheduled: 0, queued: 0, sending: 1, sent: 2, failed: 3, undelivered: 3, delivered: 4, read: 5 };

/** The current status of a part: the furthest of its statuses (the latest among equals), or undefined for none. */
export function currentStatus(statuses: readonly DeliveryStatus[]): DeliveryStatus | undefined {
  let best: DeliveryStatus | undefined;
  for (const s of statuses) if (!best || (RANK[s.status] ?? -1) >= (RANK[best.status] ?? -1)) best = s;
  return best;
}

/** How long a failure about a part not recorded yet waits for the sends under way (its record follows the platform's answer). */
const UNRECORDED_WAIT_MS = 2_000;

export class DeliveryStatuses {
  readonly #glue: Glue;
  readonly #sender: OutboundSender;

  constructor(glue: Glue, sender: OutboundSender) {
    this.#glue = glue;
    this.#sender = sender;
  }

  async record(platform: Platform, event: StatusEvent): Promise<void> {
    const status: DeliveryStatus = { status: event.status, at: event.timestamp, ...(event.errorCode !== undefined ? { errorCode: event.errorCode } : {}) };
    if (event.watermark !== undefined) return this.#watermark(platform, event, event.watermark, status);
    if (!event.about) return;
    const fresh = await this.#glue.store.recordStatus(platform, event.about, status);
    if (!fresh || !FAILURES.has(event.status)) return;
    const outsideWindow = event.errorCode === TWILIO_ERROR_OUTSIDE_WINDOW;
    const code = outsideWindow ? "outside_window" : "undelivered";
    const message = outsideWindow
      ? "Not delivered: more than 24 hours since the customer's last message (Twilio 63016)."
      : `Not delivered (${event.status}${event.errorCode ? `, error ${event.errorCode}` : ""}).`;
    const record = await this.#markFailed(event.about, code, message);
    this.#glue.alerts.alert({ platform, ...(record ? { conversationId: record.conversationId } : {}), code, message });
    if (!record) return;
    this.#glue.recordUndelivered(platform, record.conversationId, message);
    if (outsideWindow) {
      const binding = await this.#glue.store.findBindingByConversation(record.conversationId);
      if (binding) void this.#sender.inOrder(binding, () => this.#sender.sendOutsideWindowTemplate(binding, record.seq));
    }
  }

  /**
   * A failure may be reported before the part's record is stored (the callback raced the platform's answer
   * to our send): the sends under way are waited for, a bounded time, before the part is looked for again.
   */
  async #markFailed(platformId: string, code: string, message: string): Promise<OutboxRecord | undefined> {
    const found = await this.#glue.store.markFailedByPlatformId(platformId, code, message);
    if (found) return found;
    const pending = this.#sender.pending();
    if (pending.length === 0) return undefined;
    await Promise.race([Promise.all(pending), new Promise((resolve) => setTimeout(resolve, UNRECORDED_WAIT_MS).unref?.())]);
    return this.#glue.store.markFailedByPlatformId(platformId, code, message);
  }

  /**
   * A Meta watermark (a Messenger read receipt, a delivery receipt without mids): every part sent to this
   * customer whose send began at or before it gets the status, once.
   */
  async #watermark(platform: Platform, event: StatusEvent, watermark: number, status: DeliveryStatus): Promise<void> {
    const binding = await this.#glue.store.findBinding({ platform, account: event.to, externalId: event.from });
    if (!binding) return;
    for (const record of await this.#glue.store.listOutbox(binding.conversationId)) {
      if (record.state !== "sent" || !record.platformId || record.at > watermark) continue;
      // Only messages have statuses of their own (a typing indicator has none).
      const statuses = record.statuses ?? [];
      if (statuses.length === 0 || statuses.some((s) => s.status === status.status)) continue;
      await this.#glue.store.recordStatus(platform, record.platformId, status);
    }
  }
}
