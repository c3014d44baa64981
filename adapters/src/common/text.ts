// Plain-text rendering shared by every messaging channel: shortening labels visibly, splitting long text,
// and turning reviews, outcomes and result layouts into readable text that is never silently dropped.
import { ELLIPSIS } from "@caplo/shared/channels";
import { cutUnits, MESSAGE_TEXT_MAX, MISLEADING_CHARACTERS } from "@caplo/shared/limits";
import type { OutboundOf, ResultColumn } from "@caplo/shared/messages";

/**
 * Shortens `text` to at most `max` characters, marking the cut with an ellipsis. The cut falls between words
 * ("Fri 4 Dec, 10:00…", never "Fri 4 Dec, 10:00, fitti…"), with the punctuation before it dropped; only a
 * single word longer than the limit is cut inside.
 */
export function shorten(text: string, max: number): string {
  const chars = Array.from(text.trim());
  if (chars.length <= max) return chars.join("");
  const room = Math.max(0, max - 1);
  let head = chars.slice(0, room).join("");
  const nextIsSpace = /\s/.test(chars[room] ?? " ");
  const lastSpace = head.search(/\s\S*$/);
  if (!nextIsSpace && lastSpace > 0) head = head.slice(0, lastSpace);
  const cleaned = head.replace(/[\s,;:.·—–-]+$/u, "");
  return (cleaned || head.trimEnd()) + ELLIPSIS;
}

/** Shortens every label to `max` and keeps them unique (WhatsApp refuses duplicate button titles). */
export function uniqueLabels(labels: string[], max: number): string[] {
  const seen = new Set<string>();
  return labels.map((label) => {
    let candidate = shorten(label, max);
    for (let n = 2; seen.has(candidate.toLowerCase()); n++) {
      const suffix = ` ${n}`;
      candidate = shorten(label, max - suffix.length) + suffix;
    }
    seen.add(candidate.toLowerCase());
    return candidate;
  });
}

/** Character length as platforms count it (code points). */
export function lengthOf(text: string): number {
  return Array.from(text).length;
}

/**
 * Splits text into parts of at most `max` units (measured by `measure`), preferring paragraph, line and
 * word boundaries; nothing is lost.
 */
export function splitText(text: string, max: number, measure: (s: string) => number = lengthOf): string[] {
  const parts: string[] = [];
  let rest = text.trim();
  while (rest.length > 0) {
    if (measure(rest) <= max) {
      parts.push(rest);
      break;
    }
    const chars = Array.from(rest);
    // The longest prefix that fits.
    let lo = 1;
    let hi = chars.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (measure(chars.slice(0, mid).join("")) <= max) lo = mid;
      else hi = mid - 1;
    }
    const prefix = chars.slice(0, lo).join("");
    let cut = -1;
    for (const sep of ["\n\n", "\n", " "]) {
      const at = prefix.lastIndexOf(sep);
      if (at > prefix.length / 2) {
        cut = at;
        break;
      }
    }
    const head = cut > 0 ? prefix.slice(0, cut) : prefix;
    parts.push(head.trimEnd());
    rest = rest.slice(head.length).trimStart();
  }
  return parts;
}

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * A date-time in words in the agent's time zone ("Fri 4 Dec, 10:00"; a date alone "Fri 4 Dec 2026"), or the
 * value as given when it is not an ISO 8601 date or date-time with its offset.
 */
export function timeInWords(value: string, timeZone = "UTC"): string {
  const zone = (() => {
    try {
      new Intl.DateTimeFormat("en-GB", { timeZone });
      return timeZone;
    } catch {
      return "UTC";
    }
  })();
  if (ISO_DATE_TIME.test(value)) {
    const at = new Date(value);
    if (Number.isNaN(at.getTime())) return value;
    const parts = new Intl.DateTimeFormat("en-GB", { timeZone: zone, weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).formatToParts(at);
    const part = (type: string) => parts.find((p) => p.type === type)?.value ?? "";
    return `${part("weekday")} ${part("day")} ${part("month")}, ${part("hour")}:${part("minute")}`;
  }
  if (ISO_DATE.test(value)) {
    const at = new Date(`${value}T12:00:00Z`);
    if (Number.isNaN(at.getTime())) return value;
    return new Intl.DateTimeFormat("en-GB", { timeZone: "UTC", weekday: "short", day: "numeric", month: "short", year: "numeric" }).format(at).replace(/,/g, "");
  }
  return value;
}

/** What no URL sent to a messaging customer holds: white space, control characters, joiners, MISLEADING_CHARACTERS. */
const UNSENDABLE_IN_URL = new RegExp(`[\\u0000-\\u0020\\u007f-\\u009f\\u200c\\u200d${MISLEADING_CHARACTERS}]`);

/**
 * A tool result's URL as a messaging customer may be sent it: https only, with no user part, no white space
 * or control characters, its host as the platform will open it (xn-- for a host in another script); else
 * null. The widget shows only such links; a message's text turns whatever it holds into a link.
 */
export function httpsUrl(raw: unknown): string | null {
  if (typeof raw !== "string" || raw.length > 2048 || UNSENDABLE_IN_URL.test(raw)) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  return url.protocol === "https:" && !url.username && !url.password ? url.href : null;
}

/** A value as shown: last4 values are masked with bullets, money with its currency, times in words, links only https. */
export function cellText(column: ResultColumn, item: Record<string, unknown>, timeZone?: string): string {
  const raw = item[column.key];
  if (raw === null || raw === undefined || raw === "") return "";
  const value = String(raw);
  if (column.display === "last4") return `••••${value}`;
  if (column.role === "link" || column.role === "image") return httpsUrl(value) ?? "";
  if (column.role === "time") return timeInWords(value, timeZone);
  if (column.role === "money") {
    const code = column.currency?.code ?? (column.currency?.key ? String(item[column.currency.key] ?? "") : "");
    return code ? `${value} ${code}` : value;
  }
  return value;
}

function columnByRole(columns: ResultColumn[], role: string): ResultColumn | undefined {
  return columns.find((c) => c.role === role);
}

/** The short name of an item: its title column, else its first non-empty column. */
export function itemTitle(result: OutboundOf<"result">, item: Record<string, unknown>, timeZone?: string): string {
  const title = columnByRole(result.columns, "title");
  if (title) {
    const text = cellText(title, item, timeZone);
    if (text) return text;
  }
  for (const column of result.columns) {
    if (["image", "latitude", "longitude", "link"].includes(column.role ?? "")) continue;
    const text = cellText(column, item, timeZone);
    if (text) return text;
  }
  return "Item";
}

/**
 * The columns whose values a reply action sends back to the agent (`{slotId}` in "Book slot {slotId}"):
 * internal ids, left out of what is shown in descriptions and list rows unless one is the title.
 */
function replyKeys(result: OutboundOf<"result">): Set<string> {
  const keys = new Set<string>();
  for (const action of result.actions ?? []) for (const [, key] of (action.template ?? "").matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) keys.add(key!);
  return keys;
}

/** The rest of an item in one line, for list rows and list-picker descriptions: no internal ids. */
export function itemSummary(result: OutboundOf<"result">, item: Record<string, unknown>, timeZone?: string): string {
  const title = columnByRole(result.columns, "title") ?? result.columns[0];
  const ids = replyKeys(result);
  return result.columns
    .filter((c) => c !== title && c.role !== "image" && c.role !== "latitude" && c.role !== "longitude" && !ids.has(c.key))
    .map((c) => cellText(c, item, timeZone))
    .filter((t) => t !== "")
    .join(" · ");
}

/** The map link of a place: its coordinates when given, else its address. */
export function mapLink(result: OutboundOf<"result">, item: Record<string, unknown>): string | undefined {
  const lat = columnByRole(result.columns, "latitude");
  const lng = columnByRole(result.columns, "longitude");
  const latValue = lat ? item[lat.key] : undefined;
  const lngValue = lng ? item[lng.key] : undefined;
  if (typeof latValue === "number" && typeof lngValue === "number") {
    return `https://www.google.com/maps/search/?api=1&query=${latValue},${lngValue}`;
  }
  const address = columnByRole(result.columns, "address");
  const addressValue = address ? cellText(address, item) : "";
  return addressValue ? `https://www.google.com/maps/search/?api=1&query=${encodeURIComponent(addressValue)}` : undefined;
}

/**
 * Fills a reply template's `{name}` slots with the item's values: the customer's message when they tap it,
 * cut as the widget cuts it to a message's limit (a typed message is cut there too; a tool's long value
 * would otherwise become a customer message over it), never inside a character's surrogate pair.
 */
export function fillTemplate(template: string, item: Record<string, unknown>): string {
  const text = template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) =>
    name in item && item[name] !== null ? String(item[name]) : whole,
  );
  return cutUnits(text, MESSAGE_TEXT_MAX);
}

const TIMELINE_MARKS: Record<string, string> = { done: "✓", current: "▶", upcoming: "○", failed: "✗" };

/** A result layout as readable text: every item the layout holds, no markup. */
export function resultText(result: OutboundOf<"result">, timeZone?: string): string {
  const lines: string[] = [result.title];
  const items = result.items;
  const linkActions = (result.actions ?? []).filter((a) => a.kind === "link" && a.key);
  const links = (item: Record<string, unknown>) =>
    linkActions.map((a) => {
      const url = httpsUrl(item[a.key!]);
      return url ? `${a.label}: ${url}` : "";
    }).filter(Boolean);
  switch (result.layout) {
    case "list":
    case "choices":
      items.forEach((item, i) => {
        const summary = itemSummary(result, item, timeZone);
        lines.push(`${i + 1}. ${itemTitle(result, item, timeZone)}${summary ? ` — ${summary}` : ""}`);
      });
      break;
    case "table":
      lines.push(result.columns.map((c) => c.label).join(" | "));
      for (const item of items) lines.push(result.columns.map((c) => cellText(c, item, timeZone) || "—").join(" | "));
      break;
    case "cards":
    case "comparison":
      for (const item of items) {
        lines.push("");
        lines.push(itemTitle(result, item, timeZone));
        for (const column of result.columns) {
          if (column.role === "title" || column.role === "image") continue;
          const text = cellText(column, item, timeZone);
          if (text) lines.push(result.layout === "comparison" ? `${column.label}: ${text}` : text);
        }
        lines.push(...links(item));
      }
      break;
    case "detail":
      for (const item of items) {
        for (const column of result.columns) {
          const text = cellText(column, item, timeZone);
          if (text) lines.push(`${column.label}: ${text}`);
        }
        lines.push(...links(item));
      }
      break;
    case "timeline": {
      const status = result.columns.find((c) => c.role === "status");
      for (const item of items) {
        const state = status?.statuses?.[String(item[status.key])] ?? "upcoming";
        const summary = itemSummary(result, item, timeZone);
        lines.push(`${TIMELINE_MARKS[state] ?? "•"} ${itemTitle(result, item, timeZone)}${summary ? ` — ${summary}` : ""}`);
      }
      break;
    }
    case "map":
      items.forEach((item, i) => {
        const address = result.columns.find((c) => c.role === "address");
        const addressText = address ? cellText(address, item) : "";
        const link = mapLink(result, item);
        lines.push(`${i + 1}. ${itemTitle(result, item, timeZone)}${addressText ? ` — ${addressText}` : ""}`);
        if (link) lines.push(`   ${link}`);
        lines.push(...links(item).map((l) => `   ${l}`));
      });
      break;
    case "page": {
      const item = items[0] ?? {};
      // Only a page from one of the listed origins, as the widget opens it.
      const key = result.page?.urlKey;
      const url = key ? httpsUrl(item[key]) : null;
      const listed = url !== null && (result.page?.origins ?? []).includes(new URL(url).origin);
      lines.push(`${result.page?.label ?? "Open"}: ${listed ? url : "(no link)"}`);
      break;
    }
  }
  return lines.join("\n").trim();
}

/** A field's value as shown: last4 masked, a date-time in words, "none" for an empty one (never "Reason: "). */
/**
 * A field's value on its own line: a line break inside it shows as ↵, so a value cannot add lines that read
 * as other fields of the card ("Gift\nAmount: 5.00 EUR") or as a note under it.
 */
function fieldValue(display: string, value: string, timeZone?: string): string {
  if (value.trim() === "") return "none";
  return ownLine(display === "last4" ? `••••${value}` : timeInWords(value, timeZone));
}

/** A card's or receipt's value kept on its line: each line break in it shown as ↵. */
function ownLine(value: string): string {
  return value.replace(/\r\n|[\n\r\v\f\u0085\u2028\u2029]/g, " ↵ ");
}

/** How a platform must write a card's or receipt's value to show it as it is (default: as it is). */
export type LiteralValue = (shown: string) => string;
const asIs: LiteralValue = (shown) => shown;

/** A review as text: the title and every presented field (last4 values stay masked, empty ones say none). */
export function reviewText(review: OutboundOf<"review">, timeZone?: string, literal: LiteralValue = asIs): string {
  const lines = [review.title];
  for (const field of review.fields) lines.push(`${field.label}: ${literal(fieldValue(field.display, field.value, timeZone))}`);
  return lines.join("\n");
}

const STATE_WORDS: Record<string, string> = {
  proposed: "waiting for your confirmation",
  running: "in progress",
  applied: "done",
  not_applied: "not done",
  pending: "not confirmed yet",
  unknown: "not confirmed yet",
  declined: "cancelled by you",
  cancelled: "cancelled",
  expired: "expired",
  step_up_required: "needs you to verify again",
};

/** A review that no longer waits for a decision, as one status line. */
export function reviewStateText(review: OutboundOf<"review">, timeZone?: string, literal: LiteralValue = asIs): string {
  return `${reviewText(review, timeZone, literal)}\nStatus: ${STATE_WORDS[review.state] ?? review.state}`;
}

export function outcomeText(outcome: OutboundOf<"outcome">, timeZone?: string, literal: LiteralValue = asIs): string {
  const lines = [outcome.message];
  // A receipt field with no value is left out; a value (the tool's) cannot add lines that read as other fields.
  for (const field of outcome.receipt ?? []) if (field.value.trim() !== "") lines.push(`${field.label}: ${literal(ownLine(timeInWords(field.value, timeZone)))}`);
  return lines.join("\n");
}

/** A question's options as numbered lines, so a typed number or label answers it. */
export function numberedOptions(options: Array<{ label: string }>): string {
  return options.map((o, i) => `${i + 1}. ${o.label}`).join("\n");
}

export const CONFIRM_LABEL = "Confirm";
export const CANCEL_LABEL = "Cancel";
export const AGENT_DISCLOSURE =
  "You are chatting with an automated assistant. You can ask for a person at any time.";
