// The signed identity token a site owner's backend gives the widget: a JWT (compact JWS) signed with
// HS256 or ES256, verified here against the agent's identity settings and turned into the CallSubject
// that subject-aware tools receive. The algorithm comes from the settings, never from the token.
import { createHmac, createPrivateKey, sign as signData, timingSafeEqual, verify as verifyData, type KeyObject } from "node:crypto";
import { z } from "zod";
import {
  IDENTITY_CLAIM_VALUE_MAX,
  IDENTITY_CLOCK_SKEW_SECONDS,
  IDENTITY_TOKEN_MAX,
  OPERATION_REF_PATTERN,
  STEP_UP_LEVELS,
  type CallSubject,
  type IdentitySettings,
  type StepUpLevel,
} from "@caplo/shared";
import type { VerificationKeys } from "./keys.ts";

export type IdentityErrorCode =
  | "token_malformed"
  | "token_alg_refused"
  | "token_header_invalid"
  | "token_key_unknown"
  | "token_signature_invalid"
  | "token_claims_invalid"
  | "token_expired"
  | "token_not_yet_valid"
  | "token_issued_in_future"
  | "token_too_old"
  | "token_issuer_invalid"
  | "token_audience_invalid"
  | "token_level_unknown";

/** `path` names the header field or claim at fault (`header.alg`, `claims.exp`); messages never echo the token. */
export type IdentityError = { code: IdentityErrorCode; path: string; message: string };
export type IdentityResult = { ok: true; subject: CallSubject } | { ok: false; error: IdentityError };

const numericDate = z.number().finite().nonnegative();
const claimString = z.string().min(1).max(IDENTITY_CLAIM_VALUE_MAX);

const headerSchema = z.looseObject({
  alg: z.string(),
  typ: z.string().optional(),
  kid: z.string().max(200).optional(),
  crit: z.unknown().optional(),
});

const claimsSchema = z.looseObject({
  sub: claimString,
  exp: numericDate,
  iat: numericDate,
  nbf: numericDate.optional(),
  auth_time: numericDate.optional(),
  iss: z.string().optional(),
  aud: z.union([z.string(), z.array(z.string())]).optional(),
  acr: claimString.optional(),
  level: z.string().optional(),
  ref: z.string().regex(OPERATION_REF_PATTERN, "1 to 256 printable ASCII characters").optional(),
});

/** Registered and Caplo claims; any other claim is passed to tools in `subject.claims`. */
const KNOWN_CLAIMS = new Set(["sub", "exp", "iat", "nbf", "auth_time", "iss", "aud", "acr", "level", "ref", "jti"]);

/** Verify a compact JWS against identity settings and their loaded keys, at `now`. */
export function verifyIdentityToken(token: string, settings: IdentitySettings, keys: VerificationKeys, now: Date): IdentityResult {
  if (token.length > IDENTITY_TOKEN_MAX) return fail("token_malformed", "", `the token is longer than ${IDENTITY_TOKEN_MAX} characters`);
  const parts = token.split(".");
  if (parts.length !== 3) return fail("token_malformed", "", "a token has three base64url parts separated by dots (JWS compact serialization)");
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];

  const header = decodeJson(headerPart);
  if (header === undefined) return fail("token_malformed", "header", "the header is not base64url-encoded JSON");
  const headerParsed = headerSchema.safeParse(header);
  if (!headerParsed.success) {
    const field = String(headerParsed.error.issues[0]!.path[0] ?? "alg");
    return fail("token_header_invalid", `header.${field}`, field === "alg" ? "the header needs alg as a string" : `the header's ${field} is invalid`);
  }
  const { alg, typ, kid, crit } = headerParsed.data;
  // The settings decide the algorithm: alg none, or an algorithm other than the configured one, is refused.
  if (alg !== settings.algorithm) {
    return fail("token_alg_refused", "header.alg", `this agent accepts only ${settings.algorithm} tokens, not ${JSON.stringify(alg).slice(0, 20)}`);
  }
  if (typ !== undefined && typ.toUpperCase() !== "JWT") return fail("token_header_invalid", "header.typ", "typ must be JWT when present");
  if (crit !== undefined) return fail("token_header_invalid", "header.crit", "critical header extensions are not supported");

  const signature = decodeSegment(signaturePart);
  if (signature === undefined) return fail("token_malformed", "signature", "the signature is not base64url");
  const signingInput = Buffer.from(`${headerPart}.${payloadPart}`, "ascii");
  const checked = checkSignature(keys, kid, signingInput, signature);
  if (checked) return { ok: false, error: checked };

  const payload = decodeJson(payloadPart);
  if (payload === undefined) return fail("token_malformed", "claims", "the payload is not base64url-encoded JSON");
  const claimsParsed = claimsSchema.safeParse(payload);
  if (!claimsParsed.success) {
    const issue = claimsParsed.error.issues[0]!;
    const field = String(issue.path[0] ?? "");
    const missing = payload !== null && typeof payload === "object" && !(field in payload);
    return fail("token_claims_invalid", `claims.${field}`, missing ? `the ${field} claim is required` : `the ${field} claim is invalid: ${issue.message}`);
  }
  const claims = claimsParsed.data;
  return checkClaims(claims, payload as Record<string, unknown>, settings, now.getTime() / 1000);
}

function checkSignature(keys: VerificationKeys, kid: string | undefined, input: Buffer, signature: Buffer): IdentityError | undefined {
  if (keys.algorithm === "HS256") {
    const expected = createHmac("sha256", keys.key).update(input).digest();
    const valid = signature.length === expected.length && timingSafeEqual(signature, expected);
    return valid ? undefined : error("token_signature_invalid", "signature", "the signature does not match the agent's HS256 secret");
  }
  const key = pickKey(keys.keys, kid);
  if (!key) {
    return error("token_key_unknown", "header.kid", kid === undefined ? "the token needs a kid: this agent has more than one key" : "no key of this agent has that kid");
  }
  // JWS ES256 signatures are the raw 64-byte r||s pair (IEEE P1363), not DER.
  const valid = signature.length === 64 && verifyData("sha256", input, { key, dsaEncoding: "ieee-p1363" }, signature);
  return valid ? undefined : error("token_signature_invalid", "signature", "the signature does not match the agent's ES256 public key");
}

function pickKey(keys: { kid?: string; key: KeyObject }[], kid: string | undefined): KeyObject | undefined {
  if (kid !== undefined) {
    const named = keys.find((entry) => entry.kid === kid);
    if (named) return named.key;
    // A single key without a kid of its own verifies any token (the kid is then only a label).
    return keys.length === 1 && keys[0]!.kid === undefined ? keys[0]!.key : undefined;
  }
  return keys.length === 1 ? keys[0]!.key : undefined;
}

type Claims = z.infer<typeof claimsSchema>;

function checkClaims(claims: Claims, raw: Record<string, unknown>, settings: IdentitySettings, now: number): IdentityResult {
  const skew = IDENTITY_CLOCK_SKEW_SECONDS;
  if (now >= claims.exp + skew) return fail("token_expired", "claims.exp", "the token has expired: ask your backend for a new one");
  if (claims.nbf !== undefined && now < claims.nbf - skew) return fail("token_not_yet_valid", "claims.nbf", "the token is not valid yet (nbf is in the future)");
  if (claims.iat > now + skew) return fail("token_issued_in_future", "claims.iat", "iat is in the future: check the clock of the backend that signs tokens");
  if (now - claims.iat > settings.maxTokenAgeSeconds) {
    return fail("token_too_old", "claims.iat", `the token was issued more than ${settings.maxTokenAgeSeconds} seconds ago (identity.maxTokenAgeSeconds)`);
  }
  if (claims.auth_time !== undefined && claims.auth_time > now + skew) {
    return fail("token_claims_invalid", "claims.auth_time", "auth_time is in the future");
  }
  if (settings.issuer !== undefined && claims.iss !== settings.issuer) {
    return fail("token_issuer_invalid", "claims.iss", `iss must be ${JSON.stringify(settings.issuer)}`);
  }
  if (settings.audience !== undefined) {
    const audiences = claims.aud === undefined ? [] : Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!audiences.includes(settings.audience)) return fail("token_audience_invalid", "claims.aud", `aud must be or contain ${JSON.stringify(settings.audience)}`);
  }
  const level = resolveLevel(claims, settings);
  if (!level.ok) return { ok: false, error: level.error };

  const extra = Object.fromEntries(Object.entries(raw).filter(([name]) => !KNOWN_CLAIMS.has(name)));
  const subject: CallSubject = {
    id: claims.sub,
    level: level.level,
    authTime: new Date(Math.floor(claims.auth_time ?? claims.iat) * 1000).toISOString(),
    ...(claims.ref !== undefined && { ref: claims.ref }),
    ...(Object.keys(extra).length > 0 && { claims: extra }),
  };
  return { ok: true, subject };
}

const isLevel = (value: string): value is StepUpLevel => (STEP_UP_LEVELS as readonly string[]).includes(value);

function resolveLevel(claims: Claims, settings: IdentitySettings): { ok: true; level: StepUpLevel } | { ok: false; error: IdentityError } {
  let fromLevel: StepUpLevel | undefined;
  if (claims.level !== undefined) {
    if (!isLevel(claims.level)) return { ok: false, error: error("token_claims_invalid", "claims.level", "level must be low, standard or high") };
    fromLevel = claims.level;
  }
  let fromAcr: StepUpLevel | undefined;
  if (claims.acr !== undefined) {
    const mapped = settings.levels?.[claims.acr] ?? (isLevel(claims.acr) ? claims.acr : undefined);
    if (mapped === undefined) {
      return { ok: false, error: error("token_level_unknown", "claims.acr", "this acr value is not mapped to a level in identity.levels") };
    }
    fromAcr = mapped;
  }
  if (fromLevel !== undefined && fromAcr !== undefined && fromLevel !== fromAcr) {
    return { ok: false, error: error("token_claims_invalid", "claims.level", `level ${fromLevel} disagrees with acr, which maps to ${fromAcr}`) };
  }
  return { ok: true, level: fromLevel ?? fromAcr ?? settings.defaultLevel };
}

function decodeSegment(segment: string): Buffer | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(segment)) return undefined;
  const bytes = Buffer.from(segment, "base64url");
  // Only the canonical encoding is accepted, so one token has exactly one spelling.
  return bytes.toString("base64url") === segment ? bytes : undefined;
}

function decodeJson(segment: string): unknown {
  const bytes = decodeSegment(segment);
  if (bytes === undefined || bytes.length === 0) return undefined;
  try {
    const value: unknown = JSON.parse(bytes.toString("utf8"));
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function error(code: IdentityErrorCode, path: string, message: string): IdentityError {
  return { code, path, message };
}

function fail(code: IdentityErrorCode, path: string, message: string): IdentityResult {
  return { ok: false, error: error(code, path, message) };
}

/** What a test or the demo signs: any claims; iat and exp default to now and now + 5 minutes. */
export type MintInput = {
  claims: Record<string, unknown> & { sub: string };
  now?: Date;
  ttlSeconds?: number;
} & ({ algorithm: "HS256"; secret: string | KeyObject } | { algorithm: "ES256"; privateKey: KeyObject | string; kid?: string });

/**
 * Sign an identity token. FOR TESTS AND THE DEMO ONLY: in production the site owner's backend signs
 * tokens with its own JWT library (see docs/identity.md); Caplo never holds an ES256 private key.
 */
export function mintIdentityToken(input: MintInput): string {
  const iat = Math.floor((input.now ?? new Date()).getTime() / 1000);
  const claims = { iat, exp: iat + (input.ttlSeconds ?? 300), ...input.claims };
  const header = input.algorithm === "ES256" && input.kid !== undefined ? { alg: "ES256", typ: "JWT", kid: input.kid } : { alg: input.algorithm, typ: "JWT" };
  const signingInput = `${encodeJson(header)}.${encodeJson(claims)}`;
  const signature =
    input.algorithm === "HS256"
      ? createHmac("sha256", input.secret).update(signingInput).digest()
      : signData("sha256", Buffer.from(signingInput), { key: typeof input.privateKey === "string" ? createPrivateKey(input.privateKey) : input.privateKey, dsaEncoding: "ieee-p1363" });
  return `${signingInput}.${signature.toString("base64url")}`;
}

function encodeJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value), "utf8").toString("base64url");
}
