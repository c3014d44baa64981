// The webhook endpoint of a channel: handshake, verification before anything is read, parsing, then one
// durable insert per event and a fast 200. Processing happens later, from the store.
import type { IncomingMessage } from "node:http";
import type { ChannelAdapter, ChannelError, WebhookRequest } from "@caplo/adapters/adapter";
import type { InboxStore } from "./ports.ts";

export interface WebhookAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function errorAnswer(status: number, error: ChannelError): WebhookAnswer {
  return { status, headers: { "content-type": "application/json" }, body: JSON.stringify({ error }) };
}

export function toWebhookRequest(req: IncomingMessage, rawBody: Buffer): WebhookRequest {
  return { method: req.method ?? "GET", url: req.url ?? "/", headers: req.headers, rawBody };
}

/**
 * Answers one webhook request. A bad or missing signature is 403 and nothing is stored; a signed one past the
 * rate (`admit` says no) 429, nothing stored; a bad body 400;
 * otherwise every event is stored once (repeats are ignored atomically) and `onStored` wakes the processor.
 */
export async function handleWebhook(
  adapter: ChannelAdapter,
  store: InboxStore,
  request: WebhookRequest,
  onStored: () => void,
  now: () => number = Date.now,
  admit: () => boolean = () => true,
): Promise<WebhookAnswer> {
  const handshake = adapter.handshake(request);
  if (handshake) {
    return handshake.status === 200
      ? { status: 200, headers: { "content-type": "text/plain" }, body: handshake.body }
      : errorAnswer(403, handshake.error);
  }
  if (request.method !== "POST") {
    return errorAnswer(405, { code: "method_not_allowed", path: "method", message: "Webhooks are POST requests." });
  }
  const verified = adapter.verify(request);
  if (!verified.ok) return errorAnswer(verified.status, verified.error);
  // Only a signed request spends the platform's rate: no one without the credentials can use it up.
  if (!admit()) {
    return { ...errorAnswer(429, { code: "rate_limited", path: "", message: "too many webhook requests per second on this node; retry later" }), headers: { "content-type": "application/json", "retry-after": "1" } };
  }
  const parsed = adapter.parse(request);
  if (!parsed.ok) return errorAnswer(parsed.status, parsed.error);
  let stored = 0;
  for (const event of parsed.events) {
    const receivedAt = now();
    const inserted = await store.insertInbound({
      platform: adapter.platform,
      messageId: event.messageId,
      event: JSON.stringify({ ...event, timestamp: event.timestamp || receivedAt }),
      receivedAt,
    });
    if (inserted) stored++;
  }
  if (stored > 0) onStored();
  // Twilio reads the answer as TwiML: an empty Response sends nothing back by itself.
  return adapter.platform === "whatsapp"
    ? { status: 200, headers: { "content-type": "text/xml" }, body: "<Response/>" }
    : { status: 200, headers: { "content-type": "text/plain" }, body: "EVENT_RECEIVED" };
}
