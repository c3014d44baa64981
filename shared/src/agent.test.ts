import { describe, expect, it } from "vitest";
import { AGENT_ORIGINS_MAX, AGENT_TOOLS_MAX, GREETING_MAX, INSTRUCTIONS_MAX, parseAgentConfig, TOOL_REF_PATTERN } from "./agent.ts";

const base = {
  apiVersion: "v1",
  kind: "Agent",
  name: "shop-assistant",
  instructions: "You help customers of the shop.",
  origins: ["https://shop.example"],
  channels: { web: {} },
};
const parse = (overrides: Record<string, unknown>) => parseAgentConfig({ ...base, ...overrides });
const issues = (overrides: Record<string, unknown>) => {
  const result = parse(overrides);
  return result.ok ? [] : result.issues.map(({ code, path }) => `${code} ${path}`);
};

describe("agent.yaml schema", () => {
  it("accepts a minimal agent and fills defaults: no tools, locale en", () => {
    const result = parseAgentConfig(base);
    expect(result).toMatchObject({ ok: true, agent: { tools: [], locale: "en", origins: ["https://shop.example"] } });
  });

  it("accepts v1, v1.0 and v1.0.0, refuses v2 and kind ToolPackage", () => {
    for (const apiVersion of ["v1", "v1.0", "v1.0.0"]) expect(parse({ apiVersion }).ok).toBe(true);
    expect(issues({ apiVersion: "v2" })).toEqual(["pattern_mismatch apiVersion"]);
    expect(issues({ kind: "ToolPackage" })).toEqual(["value_invalid kind"]);
  });

  it("names an agent like a package: 2 to 40 characters, lowercase, starting with a letter", () => {
    expect(parse({ name: "ab" }).ok).toBe(true);
    expect(parse({ name: `a${"b".repeat(39)}` }).ok).toBe(true);
    expect(issues({ name: `a${"b".repeat(40)}` })).toEqual(["pattern_mismatch name"]);
    expect(issues({ name: "a" })).toEqual(["pattern_mismatch name"]);
    expect(issues({ name: "Shop" })).toEqual(["pattern_mismatch name"]);
    expect(issues({ name: "1shop" })).toEqual(["pattern_mismatch name"]);
  });

  it("refuses fields it does not know, at any depth", () => {
    expect(issues({ temperature: 0.2 })).toEqual(["field_unknown temperature"]);
    expect(issues({ channels: { web: { colour: "red" } } })).toEqual(["field_unknown channels.web.colour"]);
    expect(issues({ channels: { web: {}, telegram: {} } })).toEqual(["field_unknown channels.telegram"]);
  });

  it("reports missing required fields as field_required", () => {
    const { instructions, channels, ...rest } = base;
    const result = parseAgentConfig(rest);
    expect(result.ok ? [] : result.issues.map(({ code, path }) => `${code} ${path}`)).toEqual(["field_required instructions", "field_required channels"]);
  });

  it("limits instructions to 32,000 characters and refuses blank ones", () => {
    expect(parse({ instructions: "x".repeat(INSTRUCTIONS_MAX) }).ok).toBe(true);
    expect(issues({ instructions: "x".repeat(INSTRUCTIONS_MAX + 1) })).toEqual(["too_long instructions"]);
    expect(issues({ instructions: "  \n " })).toEqual(["too_short instructions"]);
  });

  it("takes tools as package/tool references", () => {
    expect(parse({ tools: ["orders/get_order", "order-lookup/get_order"] }).ok).toBe(true);
    for (const ref of ["orders", "orders/", "/get_order", "orders/get-order", "Orders/get_order", "orders/get_order/x", "orders__get_order"]) {
      expect(issues({ tools: [ref] })).toEqual(["pattern_mismatch tools[0]"]);
    }
    expect(TOOL_REF_PATTERN.exec("order-lookup/get_order")?.slice(1)).toEqual(["order-lookup", "get_order"]);
  });

  it("refuses a tool listed twice", () => {
    expect(issues({ tools: ["orders/get_order", "orders/cancel_order", "orders/get_order"] })).toEqual(["tool_duplicate tools[2]"]);
  });

  it("refuses a tool whose model name would be over 64 characters (64 passes, 65 fails)", () => {
    // "<package>__<tool>": a 40-character package leaves 22 characters for the tool.
    const pkg = `p${"a".repeat(39)}`;
    expect(parse({ tools: [`${pkg}/${"t".repeat(22)}`] }).ok).toBe(true);
    expect(issues({ tools: [`${pkg}/${"t".repeat(23)}`] })).toEqual(["tool_name_invalid tools[0]"]);
  });

  it("refuses two references that reach the model under the same name", () => {
    // a--b/c → a__b__c, and a/b__c → a__b__c.
    expect(issues({ tools: ["a--b/c", "ab/x", "aa/b__c"] })).toEqual([]);
    expect(issues({ tools: ["xa--b/c", "xa/b__c"] })).toEqual(["tool_name_conflict tools[1]"]);
  });

  it(`allows at most ${AGENT_TOOLS_MAX} tools`, () => {
    const refs = (n: number) => Array.from({ length: n }, (_, i) => `orders/tool_${i}`);
    expect(parse({ tools: refs(AGENT_TOOLS_MAX) }).ok).toBe(true);
    expect(issues({ tools: refs(AGENT_TOOLS_MAX + 1) })).toEqual(["too_many tools"]);
  });

  it("accepts https origins and http only on localhost, as browsers send them", () => {
    for (const origin of ["https://shop.example", "https://www.shop.example:8443", "http://localhost:5173", "http://127.0.0.1", "http://[::1]:3000"]) {
      expect(parse({ origins: [origin] }).ok, origin).toBe(true);
    }
    for (const origin of ["http://shop.example", "https://shop.example/", "https://shop.example/path", "https://Shop.example", "https://*.shop.example", "shop.example", "ftp://shop.example", "https://shop.example:99999"]) {
      expect(parse({ origins: [origin] }).ok, origin).toBe(false);
    }
  });

  it("refuses an origin with its default port, which would never match the browser's Origin", () => {
    expect(issues({ origins: ["https://shop.example:443"] })).toEqual(["origin_invalid origins[0]"]);
    expect(issues({ origins: ["http://localhost:80"] })).toEqual(["origin_invalid origins[0]"]);
    expect(issues({ origins: ["https://shop.example:65535"] })).toEqual([]);
    expect(issues({ origins: ["https://shop.example:65536"] })).toEqual(["origin_invalid origins[0]"]);
  });

  it(`allows at most ${AGENT_ORIGINS_MAX} origins, each once`, () => {
    const origins = (n: number) => Array.from({ length: n }, (_, i) => `https://s${i}.shop.example`);
    expect(parse({ origins: origins(AGENT_ORIGINS_MAX) }).ok).toBe(true);
    expect(issues({ origins: origins(AGENT_ORIGINS_MAX + 1) })).toEqual(["too_many origins"]);
    expect(issues({ origins: ["https://shop.example", "https://shop.example"] })).toEqual(["origin_duplicate origins[1]"]);
  });

  it("needs at least one channel, and at least one origin for the web channel", () => {
    expect(issues({ channels: {} })).toEqual(["channel_required channels"]);
    expect(issues({ origins: [] })).toEqual(["origins_required origins"]);
    expect(parse({ origins: [], channels: { whatsapp: {} } }).ok).toBe(true);
  });

  it("gives each channel an optional handoff destination", () => {
    const result = parse({
      channels: {
        web: { handoff: { queue: "support", message: "A colleague will answer here shortly." } },
        whatsapp: { handoff: { queue: "support" } },
        messenger: {},
        instagram: { handoff: { queue: "social" } },
      },
    });
    expect(result.ok).toBe(true);
    expect(issues({ channels: { web: { handoff: {} } } })).toEqual(["field_required channels.web.handoff.queue"]);
    expect(issues({ channels: { web: { handoff: { queue: "Support" } } } })).toEqual(["pattern_mismatch channels.web.handoff.queue"]);
    expect(issues({ channels: { web: { handoff: { queue: "s", webhook: "https://hooks.shop.example" } } } })).toEqual(["field_unknown channels.web.handoff.webhook"]);
    expect(issues({ channels: { web: { handoff: { queue: "s", message: "<b>hi</b>" } } } })).toEqual(["pattern_mismatch channels.web.handoff.message"]);
    expect(issues({ channels: { web: {}, whatsapp: { number: "+15551234567" } } })).toEqual(["field_unknown channels.whatsapp.number"]);
  });

  it("takes a provider/model override", () => {
    for (const model of ["openai/gpt-4.1-mini", "openai/llama3.1:8b", "openai/meta-llama/Llama-3.1-8B-Instruct", "scripted/demo"]) {
      expect(parse({ model }).ok, model).toBe(true);
    }
    for (const model of ["gpt-4.1-mini", "anthropic/claude", "openai/", "openai/gpt 4"]) expect(issues({ model })).toEqual(["pattern_mismatch model"]);
  });

  it(`limits the greeting to ${GREETING_MAX} characters of text without markup`, () => {
    expect(parse({ greeting: "Hi!\nHow can I help?" }).ok).toBe(true);
    expect(parse({ greeting: "x".repeat(GREETING_MAX) }).ok).toBe(true);
    expect(issues({ greeting: "x".repeat(GREETING_MAX + 1) })).toEqual(["too_long greeting"]);
    expect(issues({ greeting: "<script>x</script>" })).toEqual(["pattern_mismatch greeting"]);
    expect(issues({ greeting: "" })).toEqual(["too_short greeting"]);
  });

  it("holds every length limit at its boundary: description 500, handoff queue 40 and message 500, locale 35", () => {
    expect(parse({ description: "d".repeat(500) }).ok).toBe(true);
    expect(issues({ description: "d".repeat(501) })).toEqual(["too_long description"]);
    const handoff = (handoff: Record<string, unknown>) => ({ channels: { web: { handoff } } });
    expect(parse(handoff({ queue: `q${"a".repeat(39)}` })).ok).toBe(true);
    expect(issues(handoff({ queue: `q${"a".repeat(40)}` }))).toEqual(["pattern_mismatch channels.web.handoff.queue"]);
    expect(parse(handoff({ queue: "q", message: "m".repeat(500) })).ok).toBe(true);
    expect(issues(handoff({ queue: "q", message: "m".repeat(501) }))).toEqual(["too_long channels.web.handoff.message"]);
    const tag35 = "en-abcdefgh-abcdefgh-abcdefgh-abcd";
    expect(tag35).toHaveLength(34);
    expect(parse({ locale: `${tag35}e` }).ok).toBe(true);
    expect(issues({ locale: `${tag35}ef` })).toEqual(["too_long locale"]);
  });

  it("takes a language tag as locale", () => {
    for (const locale of ["en", "sl", "pt-BR", "zh-Hant-TW"]) expect(parse({ locale }).ok, locale).toBe(true);
    for (const locale of ["english", "e", "en_US", "en-"]) expect(parse({ locale }).ok, locale).toBe(false);
  });
});

describe("agent.yaml identity settings", () => {
  const jwk = { kty: "EC", crv: "P-256", x: "a".repeat(43), y: "b".repeat(43) };

  it("takes HS256 with a named workspace secret and fills the defaults", () => {
    const result = parse({ identity: { algorithm: "HS256", secret: "WIDGET_IDENTITY_SECRET" } });
    expect(result).toMatchObject({ ok: true, agent: { identity: { algorithm: "HS256", maxTokenAgeSeconds: 600, defaultLevel: "low" } } });
  });

  it("refuses alg none and any algorithm but HS256 and ES256", () => {
    for (const algorithm of ["none", "RS256", "HS512", "hs256"]) expect(parse({ identity: { algorithm, secret: "S" } }).ok, algorithm).toBe(false);
  });

  it("keeps maxTokenAgeSeconds between 1 and 86400", () => {
    const with_ = (maxTokenAgeSeconds: number) => parse({ identity: { algorithm: "HS256", secret: "S", maxTokenAgeSeconds } }).ok;
    expect([with_(0), with_(1), with_(86_400), with_(86_401), with_(1.5)]).toEqual([false, true, true, false, false]);
  });

  it("maps acr values to levels (at most 20) and refuses other levels", () => {
    const levels = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`urn:acr:${i}`, "standard"]));
    expect(parse({ identity: { algorithm: "HS256", secret: "S", levels: levels(20) } }).ok).toBe(true);
    expect(issues({ identity: { algorithm: "HS256", secret: "S", levels: levels(21) } })).toEqual(["too_many identity.levels"]);
    expect(parse({ identity: { algorithm: "HS256", secret: "S", levels: { mfa: "highest" } } }).ok).toBe(false);
  });

  it("needs exactly one of publicKey or jwks for ES256", () => {
    const pem = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n";
    expect(parse({ identity: { algorithm: "ES256", publicKey: pem } }).ok).toBe(true);
    expect(parse({ identity: { algorithm: "ES256", jwks: { keys: [jwk] } } }).ok).toBe(true);
    expect(issues({ identity: { algorithm: "ES256" } })).toEqual(["identity_key_required identity"]);
    expect(issues({ identity: { algorithm: "ES256", publicKey: pem, jwks: { keys: [jwk] } } })).toEqual(["identity_key_required identity"]);
  });

  it("refuses a private key in agent.yaml, as PEM or as a JWK with d", () => {
    const pem = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n";
    expect(issues({ identity: { algorithm: "ES256", publicKey: pem } })).toEqual(["pattern_mismatch identity.publicKey"]);
    expect(issues({ identity: { algorithm: "ES256", jwks: { keys: [{ ...jwk, d: "c".repeat(43) }] } } })).toEqual(["field_unknown identity.jwks.keys[0].d"]);
  });

  it("needs a distinct kid on every key when the JWKS has several", () => {
    expect(parse({ identity: { algorithm: "ES256", jwks: { keys: [{ ...jwk, kid: "a" }, { ...jwk, kid: "b" }] } } }).ok).toBe(true);
    expect(issues({ identity: { algorithm: "ES256", jwks: { keys: [{ ...jwk, kid: "a" }, jwk] } } })).toEqual(["identity_kid_required identity.jwks.keys"]);
    expect(issues({ identity: { algorithm: "ES256", jwks: { keys: [{ ...jwk, kid: "a" }, { ...jwk, kid: "a" }] } } })).toEqual(["identity_kid_duplicate identity.jwks.keys"]);
    const eleven = Array.from({ length: 11 }, (_, i) => ({ ...jwk, kid: `k${i}` }));
    expect(issues({ identity: { algorithm: "ES256", jwks: { keys: eleven } } })).toEqual(["too_many identity.jwks.keys"]);
  });

  it("limits issuer and audience to 255 characters and a JWKS to 10 keys", () => {
    const hs = (extra: Record<string, unknown>) => ({ identity: { algorithm: "HS256", secret: "S", ...extra } });
    expect(parse(hs({ issuer: "i".repeat(255), audience: "a".repeat(255) })).ok).toBe(true);
    expect(issues(hs({ issuer: "i".repeat(256) }))).toEqual(["too_long identity.issuer"]);
    expect(issues(hs({ audience: "a".repeat(256) }))).toEqual(["too_long identity.audience"]);
    const keys = (n: number) => Array.from({ length: n }, (_, i) => ({ ...jwk, kid: `k${i}` }));
    expect(parse({ identity: { algorithm: "ES256", jwks: { keys: keys(10) } } }).ok).toBe(true);
    expect(issues({ identity: { algorithm: "ES256", jwks: { keys: keys(11) } } })).toEqual(["too_many identity.jwks.keys"]);
  });

  it("names the secret, never holds it: a secret must look like a secret name", () => {
    expect(issues({ identity: { algorithm: "HS256", secret: "c2VjcmV0LXZhbHVl+/=" } })).toEqual(["pattern_mismatch identity.secret"]);
  });
});
