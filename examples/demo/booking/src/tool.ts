// book_slot: books one appointment slot. A write: the customer reviews it (and may change the name and
// the reminder) before it runs once with its idempotency key; a status check answers later doubts.
import { applied, defineTool, pending, rejected } from "@caplo/tools";
import { shopHeaders, shopUrl } from "./shop.ts";

type Input = { slotId: string; customerName: string; reminder?: "email" | "sms" | "none" };
type Output = { bookingId: string; slotId: string; start: string; time: string; storeName: string; service: string; reminder: string; reminderText: string; status: string };

// The receipt shows values as they are: the time as the customer reads it, in the stores' own time, and
// the reminder in the words the review card's select used.
const REMINDERS: Record<string, string> = { email: "By email", sms: "By text message", none: "No reminder" };
const timeFormat = new Intl.DateTimeFormat("en-GB", { weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", timeZone: "Europe/Ljubljana" });

function toOutput(body: Record<string, unknown>): Output {
  const start = String(body.start);
  const when = new Date(start);
  return {
    bookingId: String(body.bookingId),
    slotId: String(body.slotId),
    start,
    time: Number.isNaN(when.getTime()) ? start : timeFormat.format(when),
    storeName: String(body.storeName),
    service: String(body.service),
    reminder: String(body.reminder),
    reminderText: REMINDERS[String(body.reminder)] ?? String(body.reminder),
    status: String(body.status ?? "booked"),
  };
}

export default defineTool<Input, Output>({
  name: "book_slot",
  description: "Book an appointment slot by its id (from find_slots) for the customer, with an email or text reminder.",
  inputSchema: {
    type: "object",
    properties: {
      slotId: { type: "string", pattern: "^SL-[A-Z0-9]+-[A-Z0-9]+-[a-z]+-[0-9]{8}T[0-9]{2}$", description: "The slot id from find_slots" },
      customerName: { type: "string", minLength: 1, maxLength: 80, description: "The name to book under" },
      reminder: { type: "string", enum: ["email", "sms", "none"], description: "How to remind the customer; email if not said" },
    },
    required: ["slotId", "customerName"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      bookingId: { type: "string" },
      slotId: { type: "string" },
      start: { type: "string", format: "date-time" },
      time: { type: "string" },
      storeName: { type: "string" },
      service: { type: "string" },
      reminder: { type: "string" },
      reminderText: { type: "string" },
      status: { type: "string" },
    },
    required: ["bookingId", "slotId", "start", "time", "storeName", "service", "reminder", "reminderText", "status"],
  },
  async handler({ slotId, customerName, reminder }, { secrets, signal, idempotencyKey, log }) {
    const response = await fetch(shopUrl(secrets, `/slots/${encodeURIComponent(slotId)}/book`), {
      method: "POST",
      headers: shopHeaders(secrets, { "idempotency-key": idempotencyKey ?? "", "content-type": "application/json" }),
      body: JSON.stringify({ customerName, reminder: reminder ?? "email" }),
      signal,
    });
    if (response.status === 200) {
      const booking = toOutput((await response.json()) as Record<string, unknown>);
      log.info("slot booked", { bookingId: booking.bookingId });
      return booking;
    }
    if (response.status === 409) {
      const body = (await response.json()) as { reason?: string };
      return rejected(body.reason ?? "That time is no longer available.");
    }
    if (response.status === 404) return rejected("There is no such appointment slot; search again.");
    throw new Error(`booking failed with ${response.status}`);
  },
  async status({ operationRef }, { secrets, signal, idempotencyKey }) {
    const query = new URLSearchParams({ key: idempotencyKey ?? "", ...(operationRef && { operation: operationRef }) });
    const response = await fetch(shopUrl(secrets, `/operations?${query}`), { headers: shopHeaders(secrets), signal });
    if (!response.ok) throw new Error(`status lookup failed with ${response.status}`);
    const body = (await response.json()) as { status: string; operationId: string; result?: Record<string, unknown> };
    if (body.status === "applied" && body.result) return applied(toOutput(body.result));
    if (body.status === "not_applied") return rejected("The appointment was not booked.");
    if (body.status === "pending") return pending(body.operationId);
    throw new Error(`unexpected status ${body.status}`);
  },
});
