// Keeps secret values out of everything the runner hands on: model text, structured results and log
// lines. Any occurrence of a secret's value (of 4 characters or more) is replaced by [secret:NAME], and so
// is the value as code spells it by accident: percent-encoded in a URL or a form (encodeURIComponent,
// URLSearchParams, either hex case), escaped in JSON text, or base64 (a Basic authorization header, a token
// or state parameter), whatever bytes stand before it. A package that means to leak its secret can still
// spell it some other way; these are the spellings careless code writes into a log line or an error.
const MIN_SECRET_LENGTH = 4;
/** A base64 run shorter than this is not looked for: it would match ordinary text by chance. */
const BASE64_FRAGMENT_MIN = 6;

export type Redactor = (<T>(value: T) => T) & {
  /**
   * Where to cut `text` near `at` (at most `at`) so that no spelling of a secret is cut in two: a part of a
   * secret left before a cut could not be redacted after it (a long log line's kept start).
   */
  cutPoint: (text: string, at: number) => number;
};

/** The longest text one character of a secret is spelled as: three percent-encoded UTF-8 bytes. */
const SPELLING_CHARS_PER_CHAR = 9;

const hexAnyCase = (value: number, digits: number) =>
  value
    .toString(16)
    .padStart(digits, "0")
    .replace(/[a-f]/g, (letter) => `[${letter}${letter.toUpperCase()}]`);
const JSON_SHORT_ESCAPES: Record<string, string> = { '"': '\\\\"', "\\": "\\\\\\\\", "/": "\\\\/", "\b": "\\\\b", "\f": "\\\\f", "\n": "\\\\n", "\r": "\\\\r", "\t": "\\\\t" };

/** The ways one character of a secret may be written: as itself, percent-encoded, JSON-escaped, a space as +. */
function characterPattern(char: string): string {
  const alternatives = new Set<string>([char.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")]);
  alternatives.add([...Buffer.from(char, "utf8")].map((byte) => `%${hexAnyCase(byte, 2)}`).join(""));
  alternatives.add(Array.from({ length: char.length }, (_, at) => `\\\\u${hexAnyCase(char.charCodeAt(at), 4)}`).join(""));
  const short = JSON_SHORT_ESCAPES[char];
  if (short) alternatives.add(short);
  if (char === " ") alternatives.add("\\+");
  return `(?:${[...alternatives].join("|")})`;
}

/** The secret in plain text, in a URL or form, or in JSON text, in any mix of those spellings (a regex source). */
function spellingPattern(secret: string): string {
  return [...secret].map(characterPattern).join("");
}

/**
 * The secret's base64 (and base64url) as it appears after 0, 1 or 2 other bytes: the characters that only
 * the secret's bytes decide. `user:secret` in a Basic header puts the secret at any of the three offsets.
 */
function base64Fragments(secret: string): string[] {
  const bytes = Buffer.from(secret, "utf8");
  const fragments = new Set<string>();
  for (let before = 0; before < 3; before++) {
    const encoded = Buffer.concat([Buffer.alloc(before), bytes]);
    const start = Math.ceil((8 * before) / 6);
    const end = Math.floor((8 * (before + bytes.length)) / 6);
    for (const alphabet of ["base64", "base64url"] as const) {
      const fragment = encoded.toString(alphabet).slice(start, end);
      if (fragment.length >= BASE64_FRAGMENT_MIN) fragments.add(fragment);
    }
  }
  return [...fragments].sort((a, b) => b.length - a.length);
}

/** How many redactors (one per set of secrets) are kept made. */
const REDACTORS_KEPT = 256;
const redactors = new Map<string, Redactor>();

/**
 * The redactor of a set of secrets, made once: its pattern (every spelling of every secret, compiled) costs
 * far more than a call's redaction, and a package's secrets are the same call after call. Kept in this
 * process's memory only, as the secrets themselves are; the least recently used set is dropped past 256.
 */
export function redactorFor(secrets: Record<string, string>): Redactor {
  const key = JSON.stringify(Object.entries(secrets).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  let redactor = redactors.get(key);
  if (redactor) redactors.delete(key);
  else redactor = makeRedactor(secrets);
  redactors.set(key, redactor);
  if (redactors.size > REDACTORS_KEPT) redactors.delete(redactors.keys().next().value!);
  return redactor;
}

export function makeRedactor(secrets: Record<string, string>): Redactor {
  const entries = Object.entries(secrets)
    .filter(([, value]) => value.length >= MIN_SECRET_LENGTH)
    .sort(([, a], [, b]) => b.length - a.length);
  // One pass per string: every spelling of every secret in one alternation, longest secret first, each its
  // own group so the match says whose marker replaces it.
  const alternatives = entries.flatMap(([name, value]) => [
    { marker: `[secret:${name}]`, source: spellingPattern(value) },
    ...base64Fragments(value).map((fragment) => ({ marker: `[secret:${name}]`, source: fragment.replace(/[+/]/g, "\\$&") })),
  ]);
  const pattern = new RegExp(alternatives.map(({ source }) => `(${source})`).join("|"), "g");
  const redactText = (text: string): string =>
    text.replace(pattern, (...groups: unknown[]) => alternatives[groups.slice(1, alternatives.length + 1).findIndex((group) => group !== undefined)]!.marker);
  // Deeper than the walk goes, the rest is redacted as JSON text (a secret as JSON escapes it is one of the
  // spellings), then parsed back; if that cannot be parsed, the whole rest is withheld. Never returned as it came.
  const redactDeep = (value: unknown): unknown => {
    try {
      const text = JSON.stringify(value);
      if (text === undefined) return value;
      return JSON.parse(redactText(text));
    } catch {
      return "[withheld: too deeply nested to check for secrets]";
    }
  };
  const walk = (value: unknown, depth: number): unknown => {
    if (typeof value === "string") return redactText(value);
    if (value === null || typeof value !== "object") return value;
    if (depth > 64) return redactDeep(value);
    if (value instanceof Uint8Array) return value;
    if (Array.isArray(value)) return value.map((item) => walk(item, depth + 1));
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [redactText(key), walk(item, depth + 1)]));
  };
  const reach = SPELLING_CHARS_PER_CHAR * Math.max(0, ...entries.map(([, value]) => value.length));
  const cutPoint = (text: string, at: number): number => {
    if (entries.length === 0 || at >= text.length) return at;
    // Only a spelling that starts within `reach` before the cut can straddle it.
    const from = Math.max(0, at - reach);
    const scan = new RegExp(pattern.source, "g");
    const window = text.slice(from, at + reach);
    for (let match = scan.exec(window); match; match = scan.exec(window)) {
      const start = from + match.index;
      if (start >= at) break;
      if (start + match[0].length > at) return start;
    }
    return at;
  };
  const redactor = <T>(value: T): T => (entries.length === 0 ? value : (walk(value, 0) as T));
  return Object.assign(redactor, { cutPoint });
}
