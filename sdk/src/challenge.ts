// Reads an RFC 9470 step-up challenge (`WWW-Authenticate: Bearer error="insufficient_user_authentication",
// acr_values="...", max_age=300`) into stepUpRequired; any other header gives undefined.
import { MAX_AUTH_AGE_SECONDS_MAX, STEP_UP_LEVELS } from "@caplo/shared/limits";
import type { StepUpLevel } from "@caplo/shared/outcome";
import { stepUpRequired, type StepUpRequired } from "./outcome.ts";

type Challenge = { scheme: string; params: Map<string, string> };

const TOKEN = /[!#$%&'*+\-.^_`|~0-9A-Za-z]+/y;
const TOKEN68 = /[A-Za-z0-9\-._~+/]+=*/y;

/**
 * Parse a WWW-Authenticate value into its challenges (RFC 9110 §11.6.1): a scheme followed by
 * comma-separated auth-params whose values are tokens or quoted strings (with backslash escapes).
 */
export function parseChallenges(header: string): Challenge[] {
  const challenges: Challenge[] = [];
  let i = 0;
  const skip = () => {
    while (i < header.length && (header[i] === " " || header[i] === "\t")) i++;
  };
  const match = (re: RegExp): string | undefined => {
    re.lastIndex = i;
    const m = re.exec(header);
    if (!m) return undefined;
    i = re.lastIndex;
    return m[0];
  };
  const quoted = (): string | undefined => {
    if (header[i] !== '"') return undefined;
    let out = "";
    for (i++; i < header.length; i++) {
      const c = header[i]!;
      if (c === "\\" && i + 1 < header.length) out += header[++i];
      else if (c === '"') {
        i++;
        return out;
      } else out += c;
    }
    return undefined; // unterminated
  };
  while (i < header.length) {
    skip();
    if (header[i] === ",") {
      i++;
      continue;
    }
    const scheme = match(TOKEN);
    if (!scheme) return challenges; // malformed: keep what was read
    const challenge: Challenge = { scheme: scheme.toLowerCase(), params: new Map() };
    challenges.push(challenge);
    skip();
    // token68 credentials (`Negotiate abc123==`) stand alone right after the scheme.
    const start68 = i;
    if (match(TOKEN68) !== undefined) {
      skip();
      if (i >= header.length || header[i] === ",") continue;
      i = start68;
    }
    // auth-params until the next scheme (a token not followed by "=").
    for (;;) {
      skip();
      const start = i;
      const name = match(TOKEN);
      if (!name) {
        if (header[i] === ",") {
          i++;
          continue;
        }
        break;
      }
      skip();
      if (header[i] !== "=") {
        i = start; // a new challenge's scheme
        break;
      }
      i++;
      skip();
      const value = header[i] === '"' ? quoted() : match(TOKEN);
      if (value === undefined) return challenges;
      const key = name.toLowerCase();
      if (!challenge.params.has(key)) challenge.params.set(key, value);
      skip();
      if (header[i] === ",") i++;
    }
  }
  return challenges;
}

/** The level named by acr_values: the strongest of our levels it lists (space-separated, RFC 9470). */
function levelOf(acrValues: string | undefined): StepUpLevel {
  const listed = (acrValues ?? "").split(/\s+/).filter(Boolean);
  for (const level of [...STEP_UP_LEVELS].reverse()) if (listed.includes(level)) return level;
  // An acr this SDK does not know still asks for more than what the customer has: ask for high.
  return listed.length > 0 ? "high" : "standard";
}

/**
 * stepUpRequired from an RFC 9470 challenge, or undefined when the header is absent or is any other
 * challenge. acr_values picks the level (low, standard or high; an unknown value asks for high);
 * max_age becomes maxAuthAgeSeconds (clamped to 0..86400; ignored when not a number).
 */
export function stepUpFromChallenge(wwwAuthenticate: string | null | undefined): StepUpRequired | undefined {
  if (typeof wwwAuthenticate !== "string" || wwwAuthenticate.length > 8192) return undefined;
  const bearer = parseChallenges(wwwAuthenticate).find(
    (challenge) => challenge.scheme === "bearer" && challenge.params.get("error") === "insufficient_user_authentication",
  );
  if (!bearer) return undefined;
  const level = levelOf(bearer.params.get("acr_values"));
  const maxAge = bearer.params.get("max_age");
  if (maxAge !== undefined && /^[0-9]{1,12}$/.test(maxAge)) {
    return stepUpRequired({ level, maxAuthAgeSeconds: Math.min(Number(maxAge), MAX_AUTH_AGE_SECONDS_MAX) });
  }
  return stepUpRequired({ level });
}
