// Parses a verified Messenger or Instagram webhook (JSON) into channel events: messages, quick-reply
// payloads, postbacks, attachments and delivery or read receipts. Pure: no SDK, no I/O.
import { createHash } from "node:crypto";
import { z } from "zod";
import type { ChannelEvent, ParseResult, WebhookRequest } from "../adapter.ts";

const idSchema = z.string().min(1).max(128);
const messagingSchema = z.looseObject({
  sender: z.looseObject({ id: idSchema }),
  recipient: z.looseObject({ id: idSchema }),
  timestamp: z.number().int().nonnegative(),
  message: z
    .looseObject({
      mid: z.string().min(1).max(512),
      text: z.string().max(8000).optional(),
      is_echo: z.boolean().optional(),
      quick_reply: z.looseObject({ payload: z.string().max(1000) }).optional(),
      attachments: z.array(z.looseObject({ type: z.string(), payload: z.looseObject({ url: z.string().optional() }).nullable().optional() })).optional(),
    })
    .optional(),
  postback: z.looseObject({ mid: z.string().max(512).optional(), title: z.string().max(256).optional(), payload: z.string().max(1000) }).optional(),
  // Messenger's message_deliveries (mids, and a watermark) and message_reads (a watermark); Instagram's
  // messaging_seen says which message was read by its mid.
  delivery: z.looseObject({ mids: z.array(z.string().min(1).max(512)).max(100).optional(), watermark: z.number().int().nonnegative() }).optional(),
  read: z
    .looseObject({ watermark: z.number().int().nonnegative().optional(), mid: z.string().min(1).max(512).optional() })
    .refine((read) => read.watermark !== undefined || read.mid !== undefined, "a read receipt has a watermark or a mid")
    .optional(),
});
const webhookSchema = z.object({
  object: z.string(),
  entry: z.array(z.looseObject({ id: idSchema, time: z.number(), messaging: z.array(messagingSchema).optional() })),
});

export function parseMeta(request: WebhookRequest, expectedObject: "page" | "instagram"): ParseResult {
  let json: unknown;
  try {
    json = JSON.parse(request.rawBody.toString("utf8"));
  } catch {
    return { ok: false, status: 400, error: { code: "body_invalid", path: "body", message: "The body is not JSON." } };
  }
  const parsed = webhookSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, status: 400, error: { code: "body_invalid", path: issue.path.join(".") || "body", message: issue.message } };
  }
  if (parsed.data.object !== expectedObject) {
    return { ok: false, status: 400, error: { code: "body_invalid", path: "object", message: `Expected object "${expectedObject}", got "${parsed.data.object}".` } };
  }
  const events: ChannelEvent[] = [];
  for (const entry of parsed.data.entry) {
    for (const m of entry.messaging ?? []) {
      const base = { from: m.sender.id, to: m.recipient.id, timestamp: m.timestamp };
      if (m.message) {
        if (m.message.is_echo) continue; // our own message echoed back
        const media = (m.message.attachments ?? [])
          .filter((a) => a.payload?.url)
          .map((a) => ({ url: a.payload!.url!, contentType: a.type }));
        const text = m.message.text && m.message.text.trim() !== "" ? m.message.text : undefined;
        events.push({
          kind: "message",
          messageId: m.message.mid,
          ...base,
          ...(text !== undefined ? { text } : {}),
          ...(m.message.quick_reply ? { payload: m.message.quick_reply.payload, ...(text ? { payloadTitle: text } : {}) } : {}),
          ...(media.length ? { media } : {}),
        });
      } else if (m.postback) {
        // Older postbacks carry no mid: a digest of who, when and what is the same for a redelivery.
        const messageId =
          m.postback.mid ??
          `pb_${createHash("sha256").update(`${m.sender.id}|${m.timestamp}|${m.postback.payload}`).digest("hex").slice(0, 40)}`;
        events.push({ kind: "message", messageId, ...base, payload: m.postback.payload, ...(m.postback.title ? { payloadTitle: m.postback.title } : {}) });
      } else if (m.delivery) {
        // One status per message the receipt names; without mids, its watermark says which were delivered.
        const mids = m.delivery.mids ?? [];
        for (const mid of mids) events.push({ kind: "status", messageId: `delivered_${mid}`, about: mid, ...base, status: "delivered" });
        if (mids.length === 0) {
          events.push({ kind: "status", messageId: `delivered_${m.sender.id}_${m.delivery.watermark}`, about: "", watermark: m.delivery.watermark, ...base, status: "delivered" });
        }
      } else if (m.read) {
        if (m.read.mid !== undefined) events.push({ kind: "status", messageId: `read_${m.read.mid}`, about: m.read.mid, ...base, status: "read" });
        else events.push({ kind: "status", messageId: `read_${m.sender.id}_${m.read.watermark}`, about: "", watermark: m.read.watermark!, ...base, status: "read" });
      }
    }
  }
  return { ok: true, events };
}
