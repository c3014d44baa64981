// Formatting and safety helpers for values from the server: URLs, masked values, money, times, sizes
// and reply templates. Every value ends up as text; a URL is returned only when it is safe to follow.
import { cutUnits, MESSAGE_TEXT_MAX } from "@caplo/shared/limits";

export type Primitive = string | number | boolean | null;

/** Loopback hosts, where plain http is accepted so the widget can be developed locally. */
const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** True when the widget itself runs on loopback: local development, where http links to loopback are fine. */
export function onLoopback(): boolean {
  return LOOPBACK.has(globalThis.location?.hostname ?? "");
}

/**
 * The URL if it may be used as a link or image source: an absolute https URL, or http on loopback while
 * the widget itself runs on loopback (development). With `base`, a relative URL resolved against it also
 * counts (files the gateway serves). javascript:, data:, blob:, file: and everything else give null.
 */
export function safeUrl(raw: unknown, base?: string, dev = onLoopback()): string | null {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > 2048) return null;
  // Control characters and whitespace inside a URL are a known trick to smuggle a scheme past filters.
  if (/[\u0000-\u0020\u007f]/.test(raw)) return null;
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    return null;
  }
  if (url.username || url.password) return null;
  if (url.protocol === "https:") return url.href;
  if (url.protocol === "http:" && dev && LOOPBACK.has(url.hostname)) return url.href;
  return null;
}

/** The origin of a safe URL, or null. */
export function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/** `display: last4` shows only the final four characters, whatever the server sent. */
export function last4(value: string): string {
  return value.slice(-4);
}

/** Money in its ISO 4217 currency, formatted for the locale; without a valid code, the plain number. */
export function formatMoney(amount: Primitive, currency: string | undefined, locale: string): string {
  if (typeof amount !== "number" || !Number.isFinite(amount)) return cellText(amount);
  if (currency && /^[A-Z]{3}$/.test(currency)) {
    try {
      return new Intl.NumberFormat(locale, { style: "currency", currency }).format(amount);
    } catch {
      // An unknown code is shown beside the number rather than guessed.
    }
    return `${new Intl.NumberFormat(locale).format(amount)} ${currency}`;
  }
  return new Intl.NumberFormat(locale).format(amount);
}

const dateTimeFormats = new Map<string, Intl.DateTimeFormat>();

/**
 * One Intl.DateTimeFormat per locale and options, made once and kept: making one costs about a thousand
 * times formatting with it (Date's toLocale…String makes one per call), and the first loads the locale's data.
 */
export function dateTimeFormat(locale: string, options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const key = formatKey(locale, options);
  let format = dateTimeFormats.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat(locale, options);
    dateTimeFormats.set(key, format);
  }
  return format;
}

const formatKey = (locale: string, options: Intl.DateTimeFormatOptions) => `${locale}|${JSON.stringify(options)}`;

/** Whether dateTimeFormat has made this format already (using it then costs next to nothing). */
export function dateTimeFormatMade(locale: string, options: Intl.DateTimeFormatOptions): boolean {
  return dateTimeFormats.has(formatKey(locale, options));
}

/** A date (YYYY-MM-DD) or date-time string formatted for the locale; anything else as given. */
export function formatTime(value: Primitive, locale: string): string {
  if (typeof value !== "string") return cellText(value);
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const time = Date.parse(dateOnly ? `${value}T00:00:00Z` : value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(time)) return value;
  const options: Intl.DateTimeFormatOptions = dateOnly
    ? { dateStyle: "medium", timeZone: "UTC" }
    : { dateStyle: "medium", timeStyle: "short" };
  try {
    return dateTimeFormat(locale, options).format(new Date(time));
  } catch {
    return value;
  }
}

/** A byte count as B, KB or MB for the locale. */
export function formatSize(bytes: number, locale: string): string {
  if (!Number.isFinite(bytes) || bytes < 0) return "";
  const nf = (n: number, digits: number) => new Intl.NumberFormat(locale, { maximumFractionDigits: digits }).format(n);
  if (bytes < 1024) return `${nf(bytes, 0)} B`;
  if (bytes < 1024 * 1024) return `${nf(bytes / 1024, 1)} KB`;
  return `${nf(bytes / (1024 * 1024), 1)} MB`;
}

/** How a primitive cell reads as text. */
export function cellText(value: Primitive | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "boolean") return value ? "✓" : "✗";
  return String(value);
}

/** The most characters of one value the widget shows; the rest is cut with an ellipsis. */
export const TEXT_SHOWN_MAX = 2000;

/** The first `max` UTF-16 units of text, never half a surrogate pair (shared with the channels' cut). */
export const cutText = cutUnits;

/** Cuts overlong text so one value cannot flood the conversation. */
export function clampText(text: string, max = TEXT_SHOWN_MAX): string {
  return text.length > max ? `${cutText(text, max - 1)}…` : text;
}

/** The inbound message limit (inboundSchema: message text 1 to MESSAGE_TEXT_MAX characters). */
export const MESSAGE_MAX = MESSAGE_TEXT_MAX;

/** A reply action's visitor message: `{name}` inserts the item's value of the column named name. */
export function fillTemplate(template: string, item: Record<string, Primitive>): string {
  const text = template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, key: string) =>
    Object.prototype.hasOwnProperty.call(item, key) ? cellText(item[key]) : whole,
  );
  return cutText(text, MESSAGE_MAX);
}

/** "ending in {digits}" with the digits filled in. */
export function fillLast4(template: string, digits: string): string {
  return template.replace("{digits}", digits);
}
