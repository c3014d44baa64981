// What Twilio (WhatsApp Content API, Messages) and Meta's Send API accept, as checks that return every
// violation. The fake servers refuse a request that breaks one; the contract suite checks rendered output.
import * as C from "@caplo/shared/channels";

const chars = (s: string) => Array.from(s).length;
const bytes = (s: string) => Buffer.byteLength(s, "utf8");

export type Violations = string[];

const PLACEHOLDER = /\{\{([A-Za-z0-9_]{1,16})\}\}/g;
const isPlaceholder = (text: string | undefined) => text !== undefined && /^\{\{[A-Za-z0-9_]{1,16}\}\}$/.test(text);

/**
 * A Content API create body: `{ friendly_name, language, variables, types: { "twilio/…": … } }`. Every
 * `{{n}}` needs a sample value in `variables` (Twilio asks for one at creation), of at most 255 characters;
 * every list-picker item needs a description (Twilio marks it required). A fixed (not variable) title,
 * item or description is checked against its limit here; a variable one when the message is sent.
 */
export function checkContentCreate(body: unknown): Violations {
  const v: Violations = [];
  const b = body as { friendly_name?: unknown; language?: unknown; variables?: Record<string, unknown>; types?: Record<string, unknown> };
  if (typeof b?.friendly_name !== "string" || b.friendly_name.length === 0) v.push("friendly_name missing");
  if (typeof b?.language !== "string") v.push("language missing");
  const samples = b?.variables ?? {};
  for (const [key, value] of Object.entries(samples)) {
    if (typeof value !== "string" || value.trim() === "") v.push(`variables.${key}: sample value empty`);
    else if (chars(value) > C.TWILIO_VARIABLE_VALUE_MAX) v.push(`variables.${key}: sample over ${C.TWILIO_VARIABLE_VALUE_MAX}`);
  }
  for (const [, key] of JSON.stringify(b?.types ?? {}).matchAll(PLACEHOLDER)) {
    if (!(key! in samples)) v.push(`variable {{${key}}} has no sample value in variables`);
  }
  const types = b?.types ?? {};
  const names = Object.keys(types);
  if (names.length !== 1) v.push(`exactly one content type expected, got ${names.length}`);
  for (const [type, raw] of Object.entries(types)) {
    const t = raw as Record<string, unknown>;
    if (typeof t.body !== "string" || chars(t.body) === 0) v.push(`${type}.body missing`);
    if (type === "twilio/quick-reply") {
      const actions = (t.actions ?? []) as Array<{ title?: string; id?: string }>;
      if (actions.length < 1 || actions.length > C.WHATSAPP_BUTTONS_MAX) v.push(`quick-reply: ${actions.length} buttons (1 to ${C.WHATSAPP_BUTTONS_MAX})`);
      const titles = new Set<string>();
      for (const a of actions) v.push(...checkButton(a, titles));
    } else if (type === "twilio/list-picker") {
      const items = (t.items ?? []) as Array<{ id?: string; item?: string; description?: string }>;
      if (items.length < 1 || items.length > C.WHATSAPP_LIST_ITEMS_MAX) v.push(`list-picker: ${items.length} items (1 to ${C.WHATSAPP_LIST_ITEMS_MAX})`);
      if (typeof t.button !== "string" || chars(t.button) > C.WHATSAPP_LIST_BUTTON_MAX) v.push("list-picker: button text missing or too long");
      const seen = new Set<string>();
      for (const item of items) {
        if (item.description === undefined || item.description === "") v.push(`list-picker: item "${item.item}" has no description (required)`);
        v.push(...checkItem(item, seen));
      }
    } else {
      v.push(`unexpected content type ${type}`);
    }
  }
  return v;
}

/** A quick-reply button as the customer sees it (fixed, or with its variables resolved). */
function checkButton(a: { title?: string; id?: string }, titles: Set<string>): Violations {
  const v: Violations = [];
  if (isPlaceholder(a.title) && isPlaceholder(a.id)) return v;
  if (!isPlaceholder(a.title)) {
    if (!a.title || chars(a.title) > C.WHATSAPP_BUTTON_TITLE_MAX) v.push(`quick-reply: title "${a.title}" over ${C.WHATSAPP_BUTTON_TITLE_MAX}`);
    if (a.title && titles.has(a.title)) v.push(`quick-reply: duplicate title "${a.title}"`);
    if (a.title) titles.add(a.title);
  }
  if (!isPlaceholder(a.id) && (!a.id || chars(a.id) > C.WHATSAPP_LIST_ITEM_ID_MAX)) v.push(`quick-reply: id over ${C.WHATSAPP_LIST_ITEM_ID_MAX}`);
  return v;
}

/** A list-picker item as the customer sees it (fixed, or with its variables resolved). */
function checkItem(item: { id?: string; item?: string; description?: string }, seen: Set<string>): Violations {
  const v: Violations = [];
  if (!isPlaceholder(item.item)) {
    if (!item.item || chars(item.item) > C.WHATSAPP_LIST_ITEM_TITLE_MAX) v.push(`list-picker: item "${item.item}" over ${C.WHATSAPP_LIST_ITEM_TITLE_MAX}`);
    if (item.item && seen.has(item.item)) v.push(`list-picker: duplicate item "${item.item}"`);
    if (item.item) seen.add(item.item);
  }
  if (item.description !== undefined && !isPlaceholder(item.description) && (item.description.trim() === "" || chars(item.description) > C.WHATSAPP_LIST_ITEM_DESCRIPTION_MAX)) v.push(`list-picker: description "${item.description}" empty or over ${C.WHATSAPP_LIST_ITEM_DESCRIPTION_MAX}`);
  if (!isPlaceholder(item.id) && (!item.id || chars(item.id) > C.WHATSAPP_LIST_ITEM_ID_MAX)) v.push(`list-picker: id over ${C.WHATSAPP_LIST_ITEM_ID_MAX}`);
  return v;
}

/** Substitutes `{{n}}` variables as Twilio does. */
export function resolveVariables(text: string, variables: Record<string, string>): string {
  return text.replace(/\{\{(\d+)\}\}/g, (_, n: string) => variables[n] ?? "");
}

/** A content template with its variables as the customer will see it. */
export function checkResolvedContent(types: Record<string, unknown>, variables: Record<string, string>): Violations {
  const v: Violations = [];
  for (const [key, value] of Object.entries(variables)) {
    if (typeof value !== "string") v.push(`ContentVariables.${key} is not a string`);
    else if (chars(value) > C.TWILIO_VARIABLE_VALUE_MAX) v.push(`ContentVariables.${key}: ${chars(value)} characters, over ${C.TWILIO_VARIABLE_VALUE_MAX}`);
  }
  for (const [type, raw] of Object.entries(types)) {
    const t = raw as { body: string; actions?: Array<{ title: string; id: string }>; items?: Array<{ id: string; item: string; description?: string }> };
    const resolve = (text: string | undefined) => (text === undefined ? undefined : resolveVariables(text, variables));
    const titles = new Set<string>();
    for (const a of t.actions ?? []) v.push(...checkButton({ title: resolve(a.title)!, id: resolve(a.id)! }, titles));
    const seen = new Set<string>();
    for (const item of t.items ?? []) {
      const description = resolve(item.description);
      if (description === undefined || description.trim() === "") v.push(`${type}: item "${resolve(item.item)}" has an empty description`);
      v.push(...checkItem({ id: resolve(item.id)!, item: resolve(item.item)!, ...(description !== undefined ? { description } : {}) }, seen));
    }
    // Twilio error 21656: a variable used in the body is empty, or holds a newline, a tab or 5+ spaces in a row.
    for (const [, n] of t.body.matchAll(/\{\{(\d+)\}\}/g)) {
      const value = variables[n!] ?? "";
      if (value.trim() === "") v.push(`${type}: body variable {{${n}}} empty`);
      if (/[\r\n\t]| {5,}/.test(value)) v.push(`${type}: body variable {{${n}}} holds a newline, a tab or more than four spaces in a row`);
    }
    const body = resolveVariables(t.body, variables);
    if (chars(body) === 0) v.push(`${type}: empty body after variables`);
    if (chars(body) > C.WHATSAPP_INTERACTIVE_BODY_MAX) v.push(`${type}: body ${chars(body)} over ${C.WHATSAPP_INTERACTIVE_BODY_MAX}`);
    for (const x of [...(t.actions ?? []), ...(t.items ?? [])]) {
      const id = resolveVariables(x.id, variables);
      if (chars(id) === 0 || chars(id) > C.WHATSAPP_LIST_ITEM_ID_MAX) v.push(`${type}: id "${id}" empty or over ${C.WHATSAPP_LIST_ITEM_ID_MAX}`);
    }
  }
  return v;
}

/** A free-form WhatsApp message (Body, MediaUrl). */
export function checkTwilioMessage(params: URLSearchParams): Violations {
  const v: Violations = [];
  const to = params.get("To") ?? "";
  if (!/^whatsapp:\+\d{6,15}$/.test(to)) v.push(`To "${to}" is not a WhatsApp address`);
  if (!params.get("From") && !params.get("MessagingServiceSid")) v.push("From or MessagingServiceSid missing");
  const body = params.get("Body");
  const media = params.getAll("MediaUrl");
  const contentSid = params.get("ContentSid");
  if (!body && media.length === 0 && !contentSid) v.push("Body, MediaUrl or ContentSid required");
  if (body && chars(body) > C.WHATSAPP_TEXT_MAX) v.push(`Body ${chars(body)} over ${C.WHATSAPP_TEXT_MAX}`);
  for (const url of media) if (!/^https:\/\//.test(url)) v.push(`MediaUrl "${url}" is not https`);
  if (contentSid && !/^HX[0-9a-f]{32}$/.test(contentSid)) v.push(`ContentSid "${contentSid}" malformed`);
  return v;
}

export interface MetaRules {
  platform: "messenger" | "instagram";
  textMax: number;
  measure: (s: string) => number;
  quickRepliesMax: number;
  quickReplyTitleMax: number;
  buttonTextMax: number;
  buttonsMax: number;
  buttonTitleMax: number;
  attachmentTypes: string[];
}

export const MESSENGER_RULES: MetaRules = {
  platform: "messenger",
  textMax: C.MESSENGER_TEXT_MAX,
  measure: chars,
  quickRepliesMax: C.MESSENGER_QUICK_REPLIES_MAX,
  quickReplyTitleMax: C.MESSENGER_QUICK_REPLY_TITLE_MAX,
  buttonTextMax: C.MESSENGER_BUTTON_TEXT_MAX,
  buttonsMax: C.MESSENGER_BUTTONS_MAX,
  buttonTitleMax: C.MESSENGER_BUTTON_TITLE_MAX,
  attachmentTypes: ["image", "file", "template"],
};

export const INSTAGRAM_RULES: MetaRules = {
  platform: "instagram",
  textMax: C.INSTAGRAM_TEXT_BYTES_MAX,
  measure: bytes,
  quickRepliesMax: C.INSTAGRAM_QUICK_REPLIES_MAX,
  quickReplyTitleMax: C.INSTAGRAM_QUICK_REPLY_TITLE_MAX,
  buttonTextMax: C.INSTAGRAM_BUTTON_TEXT_MAX,
  buttonsMax: C.INSTAGRAM_BUTTONS_MAX,
  buttonTitleMax: C.INSTAGRAM_BUTTON_TITLE_MAX,
  attachmentTypes: ["image", "template"],
};

/** A Send API message object (what goes under `message`). */
export function checkMetaMessage(message: unknown, rules: MetaRules): Violations {
  const v: Violations = [];
  const m = message as { text?: string; quick_replies?: Array<Record<string, string>>; attachment?: { type?: string; payload?: Record<string, unknown> } };
  if (!m || (m.text === undefined) === (m.attachment === undefined)) v.push("message needs exactly one of text or attachment");
  if (m?.text !== undefined) {
    if (m.text.length === 0) v.push("empty text");
    if (rules.measure(m.text) > rules.textMax) v.push(`text ${rules.measure(m.text)} over ${rules.textMax}`);
  }
  if (m?.quick_replies) {
    if (m.quick_replies.length < 1 || m.quick_replies.length > rules.quickRepliesMax) v.push(`${m.quick_replies.length} quick replies (1 to ${rules.quickRepliesMax})`);
    for (const q of m.quick_replies) {
      if (q.content_type !== "text") v.push(`quick reply content_type ${q.content_type} (text only)`);
      if (!q.title || chars(q.title) > rules.quickReplyTitleMax) v.push(`quick reply title "${q.title}" over ${rules.quickReplyTitleMax}`);
      if (!q.payload || chars(q.payload) > C.META_PAYLOAD_MAX) v.push(`quick reply payload over ${C.META_PAYLOAD_MAX}`);
    }
  }
  if (m?.attachment) {
    const type = m.attachment.type ?? "";
    if (!rules.attachmentTypes.includes(type)) v.push(`attachment type ${type} not sent on ${rules.platform}`);
    const p = m.attachment.payload ?? {};
    if (type === "template") {
      if (p.template_type !== "button") v.push(`template_type ${String(p.template_type)}`);
      const text = String(p.text ?? "");
      if (chars(text) === 0 || chars(text) > rules.buttonTextMax) v.push(`button template text ${chars(text)} (1 to ${rules.buttonTextMax})`);
      const buttons = (p.buttons ?? []) as Array<Record<string, string>>;
      if (buttons.length < C.MESSENGER_BUTTONS_MIN || buttons.length > rules.buttonsMax) v.push(`${buttons.length} buttons (1 to ${rules.buttonsMax})`);
      for (const b of buttons) {
        if (b.type !== "postback") v.push(`button type ${b.type}`);
        if (!b.title || chars(b.title) > rules.buttonTitleMax) v.push(`button title "${b.title}" over ${rules.buttonTitleMax}`);
        if (!b.payload || chars(b.payload) > C.META_PAYLOAD_MAX) v.push(`button payload over ${C.META_PAYLOAD_MAX}`);
      }
    } else if (typeof p.url !== "string" || !p.url.startsWith("https://")) {
      v.push("attachment url must be https");
    }
  }
  return v;
}

/** A whole Send API request body. */
export function checkSendBody(body: unknown, rules: MetaRules): Violations {
  const v: Violations = [];
  const b = body as { recipient?: { id?: string }; messaging_type?: string; tag?: string; message?: unknown; sender_action?: string };
  if (!b?.recipient?.id) v.push("recipient.id missing");
  if (b?.sender_action !== undefined) {
    if (!["typing_on", "typing_off", "mark_seen"].includes(b.sender_action)) v.push(`sender_action ${b.sender_action}`);
    if (b.message !== undefined) v.push("sender_action cannot carry a message");
    return v;
  }
  if (!["RESPONSE", "UPDATE", "MESSAGE_TAG"].includes(b?.messaging_type ?? "")) v.push(`messaging_type ${b?.messaging_type}`);
  if ((b?.messaging_type === "MESSAGE_TAG") !== (b?.tag !== undefined)) v.push("tag goes with MESSAGE_TAG only");
  if (b?.tag !== undefined && b.tag !== "HUMAN_AGENT") v.push(`tag ${b.tag}`);
  v.push(...checkMetaMessage(b?.message, rules));
  return v;
}
