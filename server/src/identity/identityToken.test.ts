import { createHmac, generateKeyPairSync, sign as signData } from "node:crypto";
import { describe, expect, it } from "vitest";
import { identitySchema, type IdentitySettings } from "@caplo/shared";
import { createIdentityVerifier, loadVerificationKeys, mintIdentityToken, verifyIdentityToken, type IdentityResult } from "./index.ts";

const SECRET = "0123456789abcdef0123456789abcdef-widget";
const NOW = new Date("2026-03-01T12:00:00Z");
const NOW_S = NOW.getTime() / 1000;
const hs = (extra: Record<string, unknown> = {}): IdentitySettings => identitySchema.parse({ algorithm: "HS256", secret: "WIDGET_SECRET", ...extra });
const secrets = (name: string) => (name === "WIDGET_SECRET" ? SECRET : undefined);

function verifyHs(token: string, settings = hs(), now = NOW): IdentityResult {
  const loaded = loadVerificationKeys(settings, secrets);
  if (!loaded.ok) throw new Error(loaded.error.message);
  return verifyIdentityToken(token, settings, loaded.keys, now);
}
const mintHs = (claims: Record<string, unknown>, now = NOW, ttlSeconds?: number) =>
  mintIdentityToken({ algorithm: "HS256", secret: SECRET, claims: { sub: "cust-42", ...claims }, now, ...(ttlSeconds !== undefined && { ttlSeconds }) });
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
const codeOf = (result: IdentityResult) => (result.ok ? "ok" : result.error.code);

describe("HS256 identity tokens", () => {
  it("turns a valid token into the subject: sub, level, auth_time and ref", () => {
    const token = mintHs({ level: "standard", auth_time: NOW_S - 60, ref: "cust-42/orders", plan: "gold" });
    const result = verifyHs(token);
    expect(result).toEqual({
      ok: true,
      subject: { id: "cust-42", level: "standard", authTime: "2026-03-01T11:59:00.000Z", ref: "cust-42/orders", claims: { plan: "gold" } },
    });
  });

  it("uses iat as the auth time and defaultLevel when the token carries no level", () => {
    const result = verifyHs(mintHs({}));
    expect(result).toEqual({ ok: true, subject: { id: "cust-42", level: "low", authTime: NOW.toISOString() } });
    const standard = verifyHs(mintHs({}), hs({ defaultLevel: "standard" }));
    expect(standard.ok && standard.subject.level).toBe("standard");
  });

  it("refuses a token signed with another secret", () => {
    const token = mintIdentityToken({ algorithm: "HS256", secret: `${SECRET}x`, claims: { sub: "a" }, now: NOW });
    expect(verifyHs(token)).toMatchObject({ ok: false, error: { code: "token_signature_invalid", path: "signature" } });
  });

  it("refuses a token whose claims were changed after signing", () => {
    const [header, , signature] = mintHs({ level: "low" }).split(".");
    const forged = `${header}.${b64({ sub: "cust-42", level: "high", iat: NOW_S, exp: NOW_S + 300 })}.${signature}`;
    expect(codeOf(verifyHs(forged))).toBe("token_signature_invalid");
  });

  it("refuses alg none, with or without a signature", () => {
    const claims = b64({ sub: "a", iat: NOW_S, exp: NOW_S + 60 });
    expect(verifyHs(`${b64({ alg: "none" })}.${claims}.`)).toMatchObject({ ok: false, error: { code: "token_alg_refused", path: "header.alg" } });
    expect(codeOf(verifyHs(`${b64({ alg: "none", typ: "JWT" })}.${claims}.${Buffer.from("x").toString("base64url")}`))).toBe("token_alg_refused");
  });

  it("refuses an algorithm other than the configured one (ES256 or HS512 token for an HS256 agent)", () => {
    const claims = b64({ sub: "a", iat: NOW_S, exp: NOW_S + 60 });
    for (const alg of ["ES256", "HS512", "RS256", "hs256"]) {
      const input = `${b64({ alg })}.${claims}`;
      const signature = createHmac("sha256", SECRET).update(input).digest("base64url");
      expect(codeOf(verifyHs(`${input}.${signature}`))).toBe("token_alg_refused");
    }
  });

  it("refuses critical header extensions and a typ other than JWT", () => {
    const sign = (header: unknown) => {
      const input = `${b64(header)}.${b64({ sub: "a", iat: NOW_S, exp: NOW_S + 60 })}`;
      return `${input}.${createHmac("sha256", SECRET).update(input).digest("base64url")}`;
    };
    expect(verifyHs(sign({ alg: "HS256", crit: ["exp"] }))).toMatchObject({ ok: false, error: { code: "token_header_invalid", path: "header.crit" } });
    expect(verifyHs(sign({ alg: "HS256", typ: "at+jwt" }))).toMatchObject({ ok: false, error: { code: "token_header_invalid", path: "header.typ" } });
    expect(codeOf(verifyHs(sign({ alg: "HS256", typ: "jwt" })))).toBe("ok");
  });

  it("refuses malformed tokens: parts, base64url, JSON and length", () => {
    const good = mintHs({});
    expect(codeOf(verifyHs("abc"))).toBe("token_malformed");
    expect(codeOf(verifyHs(`${good}.extra`))).toBe("token_malformed");
    expect(codeOf(verifyHs(`%%%.${good.split(".")[1]}.${good.split(".")[2]}`))).toBe("token_malformed");
    expect(codeOf(verifyHs(`${Buffer.from("not json").toString("base64url")}.e30.AA`))).toBe("token_malformed");
    expect(codeOf(verifyHs(`${"a".repeat(8193)}`))).toBe("token_malformed");
    // Padding is not base64url: a token has exactly one spelling.
    expect(codeOf(verifyHs(`${good}=`))).toBe("token_malformed");
  });

  it("accepts a token of exactly 8192 characters and refuses one of 8193 unread", () => {
    const base = mintHs({ pad: "" });
    const padFor = (length: number) => {
      let pad = "x".repeat(Math.max(0, Math.floor(((length - base.length) * 3) / 4)));
      let token = mintHs({ pad });
      while (token.length < length) token = mintHs({ pad: (pad += "x") });
      while (token.length > length) token = mintHs({ pad: (pad = pad.slice(0, -1)) });
      return token;
    };
    const at8192 = padFor(8192);
    // base64url grows in steps, so the nearest length at or under 8192 is the boundary we can hit.
    expect(at8192.length).toBeLessThanOrEqual(8192);
    expect(at8192.length).toBeGreaterThan(8186);
    expect(codeOf(verifyHs(at8192))).toBe("ok");
    expect(codeOf(verifyHs(`${at8192}${"A".repeat(8193 - at8192.length)}`))).toBe("token_malformed");
  });

  it("requires sub, exp and iat", () => {
    const sign = (claims: unknown) => {
      const input = `${b64({ alg: "HS256" })}.${b64(claims)}`;
      return `${input}.${createHmac("sha256", SECRET).update(input).digest("base64url")}`;
    };
    expect(verifyHs(sign({ iat: NOW_S, exp: NOW_S + 60 }))).toMatchObject({ ok: false, error: { code: "token_claims_invalid", path: "claims.sub" } });
    expect(verifyHs(sign({ sub: "a", iat: NOW_S }))).toMatchObject({ ok: false, error: { code: "token_claims_invalid", path: "claims.exp" } });
    expect(verifyHs(sign({ sub: "a", exp: NOW_S + 60 }))).toMatchObject({ ok: false, error: { code: "token_claims_invalid", path: "claims.iat" } });
    expect(verifyHs(sign({ sub: "", iat: NOW_S, exp: NOW_S + 60 }))).toMatchObject({ ok: false, error: { code: "token_claims_invalid", path: "claims.sub" } });
    expect(verifyHs(sign({ sub: "a", iat: "now", exp: NOW_S + 60 }))).toMatchObject({ ok: false, error: { code: "token_claims_invalid", path: "claims.iat" } });
    expect(verifyHs(sign({ sub: "a", iat: NOW_S, exp: NOW_S + 60, ref: "" }))).toMatchObject({ ok: false, error: { code: "token_claims_invalid", path: "claims.ref" } });
  });

  it("takes sub up to 255 characters and ref up to 256 printable ASCII characters", () => {
    expect(codeOf(verifyHs(mintHs({ sub: "s".repeat(255), ref: "r".repeat(256) })))).toBe("ok");
    expect(verifyHs(mintHs({ sub: "s".repeat(256) }))).toMatchObject({ ok: false, error: { code: "token_claims_invalid", path: "claims.sub" } });
    expect(verifyHs(mintHs({ ref: "r".repeat(257) }))).toMatchObject({ ok: false, error: { code: "token_claims_invalid", path: "claims.ref" } });
    expect(verifyHs(mintHs({ ref: "acc\n7" }))).toMatchObject({ ok: false, error: { code: "token_claims_invalid", path: "claims.ref" } });
  });

  it("expires at exp plus 30 seconds of clock skew: 29 s after exp passes, 30 s after fails", () => {
    const token = mintHs({ iat: NOW_S - 100, exp: NOW_S });
    expect(codeOf(verifyHs(token, hs(), new Date((NOW_S + 29) * 1000)))).toBe("ok");
    expect(verifyHs(token, hs(), new Date((NOW_S + 30) * 1000))).toMatchObject({ ok: false, error: { code: "token_expired", path: "claims.exp" } });
  });

  it("is not valid before nbf minus 30 seconds", () => {
    const token = mintHs({ iat: NOW_S, nbf: NOW_S + 100 });
    expect(codeOf(verifyHs(token, hs(), new Date((NOW_S + 70) * 1000)))).toBe("ok");
    expect(codeOf(verifyHs(token, hs(), new Date((NOW_S + 69) * 1000)))).toBe("token_not_yet_valid");
  });

  it("refuses iat more than 30 seconds in the future", () => {
    expect(codeOf(verifyHs(mintHs({ iat: NOW_S + 30, exp: NOW_S + 300 })))).toBe("ok");
    expect(codeOf(verifyHs(mintHs({ iat: NOW_S + 31, exp: NOW_S + 300 })))).toBe("token_issued_in_future");
  });

  it("refuses a token older than maxTokenAgeSeconds, at the boundary (600 passes, 601 fails)", () => {
    const token = mintHs({ iat: NOW_S - 600, exp: NOW_S + 3600 });
    expect(codeOf(verifyHs(token))).toBe("ok");
    const older = mintHs({ iat: NOW_S - 601, exp: NOW_S + 3600 });
    expect(verifyHs(older)).toMatchObject({ ok: false, error: { code: "token_too_old", path: "claims.iat" } });
    expect(codeOf(verifyHs(older, hs({ maxTokenAgeSeconds: 601 })))).toBe("ok");
  });

  it("refuses auth_time in the future", () => {
    expect(codeOf(verifyHs(mintHs({ auth_time: NOW_S + 31 })))).toBe("token_claims_invalid");
  });

  it("checks issuer and audience when configured", () => {
    const settings = hs({ issuer: "https://shop.example", audience: "caplo:shop" });
    expect(codeOf(verifyHs(mintHs({ iss: "https://shop.example", aud: "caplo:shop" }), settings))).toBe("ok");
    expect(codeOf(verifyHs(mintHs({ iss: "https://shop.example", aud: ["other", "caplo:shop"] }), settings))).toBe("ok");
    expect(codeOf(verifyHs(mintHs({ iss: "https://evil.example", aud: "caplo:shop" }), settings))).toBe("token_issuer_invalid");
    expect(codeOf(verifyHs(mintHs({ aud: "caplo:shop" }), settings))).toBe("token_issuer_invalid");
    expect(codeOf(verifyHs(mintHs({ iss: "https://shop.example", aud: "other" }), settings))).toBe("token_audience_invalid");
    expect(codeOf(verifyHs(mintHs({ iss: "https://shop.example" }), settings))).toBe("token_audience_invalid");
  });

  it("maps acr through identity.levels, takes a level claim as it is, and refuses unknown or conflicting ones", () => {
    const settings = hs({ levels: { "urn:shop:password": "standard", "urn:shop:mfa": "high" } });
    const level = (claims: Record<string, unknown>) => {
      const result = verifyHs(mintHs(claims), settings);
      return result.ok ? result.subject.level : result.error.code;
    };
    expect(level({ acr: "urn:shop:mfa" })).toBe("high");
    expect(level({ acr: "urn:shop:password" })).toBe("standard");
    expect(level({ acr: "standard" })).toBe("standard");
    expect(level({ acr: "urn:shop:sms" })).toBe("token_level_unknown");
    expect(level({ level: "high" })).toBe("high");
    expect(level({ level: "HIGH" })).toBe("token_claims_invalid");
    expect(level({ level: "high", acr: "urn:shop:mfa" })).toBe("high");
    expect(level({ level: "high", acr: "urn:shop:password" })).toBe("token_claims_invalid");
  });

  it("never puts the token or the secret into an error message", () => {
    const token = mintIdentityToken({ algorithm: "HS256", secret: `${SECRET}x`, claims: { sub: "a" }, now: NOW });
    const result = verifyHs(token);
    expect(result.ok).toBe(false);
    const text = JSON.stringify(result);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(token.split(".")[2]);
  });
});

describe("HS256 keys", () => {
  it("needs the named workspace secret to have a value", () => {
    const result = createIdentityVerifier(hs({ secret: "MISSING" }), secrets);
    expect(result).toMatchObject({ ok: false, error: { code: "identity_secret_missing", path: "identity.secret" } });
  });

  it("refuses a secret under 32 bytes and accepts one of exactly 32 (RFC 7518)", () => {
    const weak = createIdentityVerifier(hs(), () => "x".repeat(31));
    expect(weak).toMatchObject({ ok: false, error: { code: "identity_secret_weak" } });
    expect(JSON.stringify(weak)).not.toContain("x".repeat(31));
    const verifier = createIdentityVerifier(hs(), () => "y".repeat(32));
    expect(verifier.ok).toBe(true);
    if (verifier.ok) {
      const token = mintIdentityToken({ algorithm: "HS256", secret: "y".repeat(32), claims: { sub: "a" }, now: NOW });
      expect(codeOf(verifier.verify(token, NOW))).toBe("ok");
    }
  });
});

describe("ES256 identity tokens", () => {
  const pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const other = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const pem = pair.publicKey.export({ type: "spki", format: "pem" }).toString();
  const jwk = (key: typeof pair.publicKey, kid?: string) => {
    const { kty, crv, x, y } = key.export({ format: "jwk" });
    return { kty, crv, x, y, ...(kid && { kid }) };
  };
  const verifier = (settings: Record<string, unknown>) => {
    const created = createIdentityVerifier(identitySchema.parse({ algorithm: "ES256", ...settings }), () => undefined);
    if (!created.ok) throw new Error(created.error.message);
    return created.verify;
  };
  const mintEs = (privateKey = pair.privateKey, kid?: string) =>
    mintIdentityToken({ algorithm: "ES256", privateKey, claims: { sub: "cust-7", acr: "high" }, now: NOW, ...(kid && { kid }) });

  it("verifies with a PEM public key", () => {
    expect(verifier({ publicKey: pem })(mintEs(), NOW)).toMatchObject({ ok: true, subject: { id: "cust-7", level: "high" } });
  });

  it("refuses a token signed by another key, or with a DER signature instead of r||s", () => {
    expect(codeOf(verifier({ publicKey: pem })(mintEs(other.privateKey), NOW))).toBe("token_signature_invalid");
    const [header, payload] = mintEs().split(".");
    const der = signData("sha256", Buffer.from(`${header}.${payload}`), pair.privateKey).toString("base64url");
    expect(codeOf(verifier({ publicKey: pem })(`${header}.${payload}.${der}`, NOW))).toBe("token_signature_invalid");
  });

  it("refuses an HS256 token signed with the public key as an HMAC secret (algorithm confusion)", () => {
    const token = mintIdentityToken({ algorithm: "HS256", secret: pem, claims: { sub: "cust-7" }, now: NOW });
    expect(codeOf(verifier({ publicKey: pem })(token, NOW))).toBe("token_alg_refused");
  });

  it("never takes a key from the token: an embedded jwk or jku header does not make a forged token valid", () => {
    const attacker = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const header = { alg: "ES256", typ: "JWT", jwk: jwk(attacker.publicKey), jku: "https://evil.example/jwks.json" };
    const input = `${b64(header)}.${b64({ sub: "admin", level: "high", iat: NOW_S, exp: NOW_S + 60 })}`;
    const signature = signData("sha256", Buffer.from(input), { key: attacker.privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url");
    expect(codeOf(verifier({ publicKey: pem })(`${input}.${signature}`, NOW))).toBe("token_signature_invalid");
  });

  it("picks the JWKS key by kid, and needs a kid when there are several keys", () => {
    const verify = verifier({ jwks: { keys: [jwk(pair.publicKey, "k1"), jwk(other.publicKey, "k2")] } });
    expect(codeOf(verify(mintEs(pair.privateKey, "k1"), NOW))).toBe("ok");
    expect(codeOf(verify(mintEs(other.privateKey, "k2"), NOW))).toBe("ok");
    expect(codeOf(verify(mintEs(other.privateKey, "k1"), NOW))).toBe("token_signature_invalid");
    expect(verify(mintEs(pair.privateKey, "k3"), NOW)).toMatchObject({ ok: false, error: { code: "token_key_unknown", path: "header.kid" } });
    expect(codeOf(verify(mintEs(pair.privateKey), NOW))).toBe("token_key_unknown");
  });

  it("uses a single JWKS key without a kid for any token", () => {
    const verify = verifier({ jwks: { keys: [jwk(pair.publicKey)] } });
    expect(codeOf(verify(mintEs(), NOW))).toBe("ok");
    expect(codeOf(verify(mintEs(pair.privateKey, "label"), NOW))).toBe("ok");
  });

  it("refuses a public key that is not P-256", () => {
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey.export({ type: "spki", format: "pem" }).toString();
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({ type: "spki", format: "pem" }).toString();
    for (const publicKey of [p384, rsa]) {
      const created = createIdentityVerifier(identitySchema.parse({ algorithm: "ES256", publicKey }), () => undefined);
      expect(created).toMatchObject({ ok: false, error: { code: "identity_key_invalid", path: "identity.publicKey" } });
    }
  });

  it("refuses JWKS coordinates that are not a point on the curve", () => {
    const bad = { ...jwk(pair.publicKey), y: jwk(other.publicKey).y };
    const created = createIdentityVerifier(identitySchema.parse({ algorithm: "ES256", jwks: { keys: [bad] } }), () => undefined);
    expect(created).toMatchObject({ ok: false, error: { code: "identity_key_invalid", path: "identity.jwks.keys[0]" } });
  });
});
