// Keeps secret values out of everything the runner hands on: model text, structured results and log
// lines. Any occurrence of a secret's value (of 4 characters or more) is replaced by [secret:NAME].
const MIN_SECRET_LENGTH = 4;

export type Redactor = <T>(value: T) => T;

export function makeRedactor(secrets: Record<string, string>): Redactor {
  const entries = Object.entries(secrets)
    .filter(([, value]) => value.length >= MIN_SECRET_LENGTH)
    .sort(([, a], [, b]) => b.length - a.length);
  const redactText = (text: string): string => {
    let out = text;
    for (const [name, value] of entries) out = out.split(value).join(`[secret:${name}]`);
    return out;
  };
  // Deeper than the walk goes, the rest is redacted as JSON text: a secret as it appears there (JSON
  // escapes quotes, backslashes and control characters), then parsed back; if that cannot be parsed,
  // the whole rest is withheld. Never returned as it came.
  const escapedEntries = entries.map(([name, value]) => [name, JSON.stringify(value).slice(1, -1)] as const);
  const redactDeep = (value: unknown): unknown => {
    try {
      let text = JSON.stringify(value);
      if (text === undefined) return value;
      for (const [name, escaped] of escapedEntries) text = text.split(escaped).join(`[secret:${name}]`);
      return JSON.parse(text);
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
  return <T>(value: T): T => (entries.length === 0 ? value : (walk(value, 0) as T));
}
