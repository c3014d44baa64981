// Test helpers shared by the adapter contract suite and the channel tests: one case per adapter with its
// signer, fixtures and a reader of what a rendered message shows and which taps it offers.
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { getExpectedTwilioSignature } from "twilio/lib/webhooks/webhooks.js";
import type { Outbound } from "@caplo/shared/messages";
import type { ChannelAdapter, RenderRefs, WebhookRequest } from "./adapter.ts";
import { createInstagramAdapter } from "./instagram/index.ts";
import { sendBody, type GraphMessage } from "./meta/api.ts";
import { createMessengerAdapter } from "./messenger/index.ts";
import { createWhatsAppAdapter } from "./whatsapp/index.ts";
import type { WhatsAppMessage } from "./whatsapp/format.ts";

export const fixture = (name: string): Buffer => readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url));

export interface Tap {
  title: string;
  payload: string;
  description?: string;
  /** How the option is offered: a reply button, a list item, a quick reply, a template postback. */
  as: "button" | "list" | "quick_reply" | "postback";
}

export interface AdapterCase {
  name: "whatsapp" | "messenger" | "instagram";
  adapter: ChannelAdapter;
  /** A signed webhook request for this body. */
  signed(rawBody: Buffer, url?: string): WebhookRequest;
  fixtures: { text: string; confirmTap: string; optionTap: string };
  /** The visible text of rendered messages. */
  textOf(messages: unknown[]): string;
  tapsOf(messages: unknown[]): Tap[];
  /** Resolves a WhatsApp template's variables; Meta messages are sent as they are. */
  customerId: string;
}

export const PUBLIC_URL = "https://shop.example/caplo/webhooks/whatsapp";
export const APP_SECRET = "meta-app-secret-for-tests";
export const VERIFY_TOKEN = "verify-token-for-tests";
export const TWILIO_AUTH_TOKEN = "0123456789abcdef0123456789abcdef";

function resolve(text: string, variables: Record<string, string>): string {
  return text.replace(/\{\{(\d+)\}\}/g, (_, n: string) => variables[n] ?? "");
}

export function whatsappText(messages: unknown[]): string {
  return (messages as WhatsAppMessage[])
    .map((m) => (m.kind === "text" ? m.body : m.kind === "media" ? `${m.body ?? ""} ${m.mediaUrl}` : resolve(m.template.body, m.variables)))
    .join("\n");
}

export function whatsappTaps(messages: unknown[]): Tap[] {
  const taps: Tap[] = [];
  for (const m of messages as WhatsAppMessage[]) {
    if (m.kind !== "content") continue;
    if (m.template.type === "twilio/quick-reply") {
      for (const a of m.template.actions) taps.push({ title: resolve(a.title, m.variables), payload: resolve(a.id, m.variables), as: "button" });
    } else {
      for (const i of m.template.items) taps.push({ title: resolve(i.item, m.variables), payload: resolve(i.id, m.variables), as: "list", description: resolve(i.description, m.variables) });
    }
  }
  return taps;
}

export function metaText(messages: unknown[]): string {
  const parts: string[] = [];
  for (const m of messages as GraphMessage[]) {
    if (m.kind !== "message") continue;
    const msg = m.message as { text?: string; attachment?: { type: string; payload: { text?: string; url?: string } } };
    if (msg.text) parts.push(msg.text);
    if (msg.attachment?.payload.text) parts.push(msg.attachment.payload.text);
    if (msg.attachment?.payload.url) parts.push(msg.attachment.payload.url);
  }
  return parts.join("\n");
}

export function metaTaps(messages: unknown[]): Tap[] {
  const taps: Tap[] = [];
  for (const m of messages as GraphMessage[]) {
    if (m.kind !== "message") continue;
    const msg = m.message as { quick_replies?: Array<{ title: string; payload: string }>; attachment?: { payload: { buttons?: Array<{ title: string; payload: string }> } } };
    for (const q of msg.quick_replies ?? []) taps.push({ title: q.title, payload: q.payload, as: "quick_reply" });
    for (const b of msg.attachment?.payload.buttons ?? []) taps.push({ title: b.title, payload: b.payload, as: "postback" });
  }
  return taps;
}

export function metaSigned(rawBody: Buffer, url = "/webhooks/meta", secret = APP_SECRET): WebhookRequest {
  const signature = `sha256=${createHmac("sha256", secret).update(rawBody).digest("hex")}`;
  return { method: "POST", url, headers: { "content-type": "application/json", "x-hub-signature-256": signature }, rawBody };
}

export function twilioSignature(rawBody: Buffer, url: string, authToken = TWILIO_AUTH_TOKEN): string {
  const params: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(rawBody.toString("utf8"))) params[k] = v;
  return getExpectedTwilioSignature(authToken, url, params);
}

export function twilioSigned(rawBody: Buffer, url = "/webhooks/whatsapp", authToken = TWILIO_AUTH_TOKEN, publicUrl = PUBLIC_URL): WebhookRequest {
  return {
    method: "POST",
    url,
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": twilioSignature(rawBody, publicUrl, authToken) },
    rawBody,
  };
}

/** The three adapters, configured for tests (sending goes to `apiBase`, unused when only rendering). */
export function adapterCases(apiBase = "http://127.0.0.1:9"): AdapterCase[] {
  return [
    {
      name: "whatsapp",
      adapter: createWhatsAppAdapter({ accountSid: `AC${"0".repeat(32)}`, authToken: TWILIO_AUTH_TOKEN, from: "whatsapp:+14155238886", publicUrl: PUBLIC_URL, apiBaseUrl: apiBase }),
      signed: (raw, url) => twilioSigned(raw, url),
      fixtures: { text: "whatsapp-text.form", confirmTap: "whatsapp-button.form", optionTap: "whatsapp-list.form" },
      textOf: whatsappText,
      tapsOf: whatsappTaps,
      customerId: "whatsapp:+38640111222",
    },
    {
      name: "messenger",
      adapter: createMessengerAdapter({ accessToken: "token", graphBaseUrl: apiBase, appSecret: APP_SECRET, verifyToken: VERIFY_TOKEN }),
      signed: (raw, url) => metaSigned(raw, url),
      fixtures: { text: "messenger-text.json", confirmTap: "messenger-postback.json", optionTap: "messenger-quick-reply.json" },
      textOf: metaText,
      tapsOf: metaTaps,
      customerId: "7000000000000001",
    },
    {
      name: "instagram",
      adapter: createInstagramAdapter({ accessToken: "token", graphBaseUrl: apiBase, appSecret: APP_SECRET, verifyToken: VERIFY_TOKEN }),
      signed: (raw, url) => metaSigned(raw, url),
      fixtures: { text: "instagram-text.json", confirmTap: "instagram-postback.json", optionTap: "instagram-quick-reply.json" },
      textOf: metaText,
      tapsOf: metaTaps,
      customerId: "1780000000000001",
    },
  ];
}

/** Refs that remember what each payload stands for, as the glue's store does. */
export function recordingRefs(): RenderRefs & { meaning: Map<string, string> } {
  const meaning = new Map<string, string>();
  let n = 0;
  const make = (what: string) => {
    const token = `c1.${String(n++).padStart(22, "0")}`;
    meaning.set(token, what);
    return token;
  };
  return {
    meaning,
    proposal: (id, decision) => make(`${decision}:${id}`),
    answer: (id, field, value) => make(`answer:${id}:${field}=${value}`),
    reply: (text) => make(`reply:${text}`),
  };
}

export { sendBody };
export type { Outbound };
