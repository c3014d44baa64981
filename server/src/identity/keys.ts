// The verification keys of an agent's identity settings: the HS256 workspace secret, or the ES256 public
// key (PEM) or inline JWKS, loaded with node:crypto and checked once, so a bad key is an error value
// when the agent is validated and never a surprise when a customer signs in.
import { createPublicKey, createSecretKey, type KeyObject } from "node:crypto";
import type { IdentitySettings } from "@caplo/shared";

/** RFC 7518 §3.2: an HS256 key must be at least as long as the hash output, 256 bits. */
export const HS256_SECRET_MIN_BYTES = 32;

export type IdentityKeyError = { code: "identity_key_invalid" | "identity_secret_missing" | "identity_secret_weak"; path: string; message: string };

/** The keys a token may be verified with; `kid` is set for JWKS keys that name one. */
export type VerificationKeys =
  | { algorithm: "HS256"; key: KeyObject }
  | { algorithm: "ES256"; keys: { kid?: string; key: KeyObject }[] };

export type KeysResult = { ok: true; keys: VerificationKeys } | { ok: false; error: IdentityKeyError };

/** Where workspace secrets come from: a name in, the value (or undefined) out. */
export type SecretLookup = (name: string) => string | undefined;

/** Load and check the keys of identity settings. The secret's value never appears in an error. */
export function loadVerificationKeys(settings: IdentitySettings, secrets: SecretLookup): KeysResult {
  if (settings.algorithm === "HS256") {
    const value = secrets(settings.secret);
    if (value === undefined || value === "") {
      return fail("identity_secret_missing", "identity.secret", `the workspace secret ${settings.secret} has no value`);
    }
    const bytes = Buffer.from(value, "utf8");
    if (bytes.length < HS256_SECRET_MIN_BYTES) {
      return fail(
        "identity_secret_weak",
        "identity.secret",
        `the workspace secret ${settings.secret} is ${bytes.length} bytes; HS256 needs at least ${HS256_SECRET_MIN_BYTES} random bytes`,
      );
    }
    return { ok: true, keys: { algorithm: "HS256", key: createSecretKey(bytes) } };
  }
  return loadPublicKeys(settings);
}

/** ES256 keys need no secret, so they can be checked when the agent file is validated. */
export function loadPublicKeys(settings: Extract<IdentitySettings, { algorithm: "ES256" }>): KeysResult {
  const keys: { kid?: string; key: KeyObject }[] = [];
  if (settings.publicKey !== undefined) {
    const key = tryKey(() => createPublicKey({ key: settings.publicKey!, format: "pem" }));
    const problem = key ? checkP256(key) : "it is not a PEM public key";
    if (!key || problem) return fail("identity_key_invalid", "identity.publicKey", `publicKey cannot be used for ES256: ${problem}`);
    keys.push({ key });
  }
  for (const [index, jwk] of (settings.jwks?.keys ?? []).entries()) {
    const key = tryKey(() => createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, format: "jwk" }));
    const problem = key ? checkP256(key) : "x and y are not a point of P-256";
    if (!key || problem) return fail("identity_key_invalid", `identity.jwks.keys[${index}]`, `this key cannot be used for ES256: ${problem}`);
    keys.push(jwk.kid === undefined ? { key } : { kid: jwk.kid, key });
  }
  return { ok: true, keys: { algorithm: "ES256", keys } };
}

function checkP256(key: KeyObject): string | undefined {
  if (key.asymmetricKeyType !== "ec") return `it is a ${key.asymmetricKeyType ?? "unknown"} key, not an EC key`;
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return curve === "prime256v1" ? undefined : `its curve is ${curve ?? "unknown"}, not P-256`;
}

function tryKey(make: () => KeyObject): KeyObject | undefined {
  try {
    return make();
  } catch {
    return undefined;
  }
}

function fail(code: IdentityKeyError["code"], path: string, message: string): KeysResult {
  return { ok: false, error: { code, path, message } };
}
