// Parses a verified Twilio WhatsApp webhook (form-encoded) into channel events: messages, button and list
// replies, media, and delivery statuses. Pure: no SDK, no I/O.
import { z } from "zod";
import type { ChannelEvent, ParseResult, WebhookRequest } from "../adapter.ts";
import { formParams } from "./verify.ts";

const sid = z.string().regex(/^[A-Z]{2}[0-9a-fA-F]{32}$/, "a Twilio SID");
const address = z.string().min(1).max(64);

const webhookSchema = z.looseObject({
  MessageSid: sid,
  AccountSid: sid,
  From: address,
  To: address,
  Body: z.string().max(4096).optional(),
  ButtonPayload: z.string().max(1000).optional(),
  ButtonText: z.string().max(256).optional(),
  ListId: z.string().max(200).optional(),
  ListTitle: z.string().max(256).optional(),
  NumMedia: z.string().regex(/^\d{1,2}$/).optional(),
  ProfileName: z.string().max(256).optional(),
  MessageStatus: z.string().max(32).optional(),
  ErrorCode: z.string().regex(/^\d{1,6}$/).optional(),
});

function one(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function parseTwilio(request: WebhookRequest): ParseResult {
  const contentType = (request.headers["content-type"] ?? "").toString();
  if (!contentType.includes("application/x-www-form-urlencoded")) {
    return { ok: false, status: 400, error: { code: "body_invalid", path: "headers.content-type", message: "A Twilio webhook is form-encoded (application/x-www-form-urlencoded)." } };
  }
  const params = formParams(request.rawBody);
  const flat: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(params)) flat[key] = one(value);
  const parsed = webhookSchema.safeParse(flat);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, status: 400, error: { code: "body_invalid", path: issue.path.join(".") || "body", message: issue.message } };
  }
  const p = parsed.data;
  const now = Date.now();
  if (p.MessageStatus) {
    const event: ChannelEvent = {
      kind: "status",
      // One delivery status per message and state: a repeat of the same callback is the same event.
      messageId: `${p.MessageSid}:${p.MessageStatus}`,
      about: p.MessageSid,
      from: p.To,
      to: p.From,
      timestamp: now,
      status: p.MessageStatus,
      ...(p.ErrorCode ? { errorCode: Number(p.ErrorCode) } : {}),
    };
    return { ok: true, events: [event] };
  }
  const media: Array<{ url: string; contentType?: string }> = [];
  const count = Number(p.NumMedia ?? "0");
  for (let i = 0; i < count; i++) {
    const url = flat[`MediaUrl${i}`];
    if (!url) continue;
    const type = flat[`MediaContentType${i}`];
    media.push(type ? { url, contentType: type } : { url });
  }
  const payload = p.ButtonPayload ?? p.ListId;
  const title = p.ButtonText ?? p.ListTitle;
  const text = p.Body && p.Body.trim() !== "" ? p.Body : undefined;
  const event: ChannelEvent = {
    kind: "message",
    messageId: p.MessageSid,
    from: p.From,
    to: p.To,
    timestamp: now,
    ...(text !== undefined ? { text } : {}),
    ...(payload ? { payload } : {}),
    ...(title ? { payloadTitle: title } : {}),
    ...(media.length ? { media } : {}),
    ...(p.ProfileName ? { profileName: p.ProfileName } : {}),
  };
  return { ok: true, events: [event] };
}
