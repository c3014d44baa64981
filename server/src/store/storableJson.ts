// The JSON text both stores keep for a value (an event, a transcript entry, a write's arguments, a subject).
// PostgreSQL's jsonb refuses a NUL (\u0000) and a lone UTF-16 surrogate (\ud800 without its pair): an append
// holding one failed, so a customer's message or edit with one (a browser's JSON.stringify sends a lone
// surrogate as that escape; a text cut inside an emoji has one), a tool's result or the model's text was
// answered internal_error, again on every retry. Each is kept as U+FFFD, the replacement character, on
// PostgreSQL and SQLite alike, and an append returns what it stored: what is stored, shown and run is the same.

/** An escape JSON.stringify writes for a NUL or a lone surrogate, not itself escaped (an even run of backslashes before it). */
const UNSTORABLE = /(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/g;

/** JSON.stringify(value), with every NUL and lone surrogate in its strings (keys too) as U+FFFD. */
export function storableJson(value: unknown): string {
  return storable(value).json;
}

/** The JSON text kept for `value`, and the value it stands for: `value` itself unless a character was replaced. */
export function storable<T>(value: T): { json: string; stored: T } {
  const json = JSON.stringify(value);
  // Only an escape can be one (JSON.stringify writes a surrogate pair as its characters): most texts have none.
  if (!json.includes("\\u")) return { json, stored: value };
  const kept = json.replace(UNSTORABLE, "$1\\ufffd");
  return kept === json ? { json, stored: value } : { json: kept, stored: JSON.parse(kept) as T };
}

/** A NUL or a lone surrogate in plain text (a note, a search): what no stored text can hold. */
const UNSTORABLE_TEXT = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Plain text as both stores keep it (PostgreSQL's text refuses a NUL): every NUL and lone surrogate as U+FFFD,
 * as storableJson keeps them in JSON. A search for such text looks for what was stored for it.
 */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE_TEXT, "\ufffd");
}

/** Whether `id` can name a stored row: no stored id holds a NUL (PostgreSQL's text cannot), so one with a NUL names none. */
export const storableId = (id: string): boolean => !id.includes("\u0000");

