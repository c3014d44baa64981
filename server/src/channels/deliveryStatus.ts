// Delivery statuses the platforms report about messages we sent (Twilio status callbacks, Meta delivery and
// read receipts): a failure is recorded on the outbound part, told to the team and noted in the history.
import type { ChannelEvent } from "@caplo/adapters/adapter";
import { TWILIO_ERROR_OUTSIDE_WINDOW } from "@caplo/shared/channels";
import type { Glue } from "./glue.ts";
import type { Platform } from "./ports.ts";

export type StatusEvent = Extract<ChannelEvent, { kind: "status" }>;

export class DeliveryStatuses {
  readonly #glue: Glue;

  constructor(glue: Glue) {
    this.#glue = glue;
  }

  async record(platform: Platform, event: StatusEvent): Promise<void> {
    if (!["failed", "undelivered"].includes(event.status) || !event.about) return;
    const outsideWindow = event.errorCode === TWILIO_ERROR_OUTSIDE_WINDOW;
    const code = outsideWindow ? "outside_window" : "undelivered";
    const message = outsideWindow
      ? "Not delivered: more than 24 hours since the customer's last message (Twilio 63016)."
      : `Not delivered (${event.status}${event.errorCode ? `, error ${event.errorCode}` : ""}).`;
    const record = await this.#glue.store.markFailedByPlatformId(event.about, code, message);
    this.#glue.alerts.alert({ platform, ...(record ? { conversationId: record.conversationId } : {}), code, message });
    if (record) this.#glue.recordUndelivered(platform, record.conversationId, message);
  }
}
