// schemas/agent.schema.json is generated from the zod schema (caplo agent schema) and checked in: this
// test fails when the two drift apart, and holds the file against a standard validator (Ajv, draft
// 2020-12) on a corpus of agent files, so an editor tells authors what `caplo agent validate` tells them.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";
import { parseAgentConfig } from "@caplo/shared";
import { agentJsonSchemaText } from "../../server/src/agents/agentSchema.ts";

const SCHEMA_FILE = fileURLToPath(new URL("../../schemas/agent.schema.json", import.meta.url));
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;
const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);
const checkedIn = readFileSync(SCHEMA_FILE, "utf8");
const validate = ajv.compile(JSON.parse(checkedIn) as Record<string, unknown>);

const base = {
  apiVersion: "v1",
  kind: "Agent",
  name: "shop-assistant",
  instructions: "Help customers.",
  origins: ["https://shop.example"],
  channels: { web: {} },
};
const jwk = { kty: "EC", crv: "P-256", x: "a".repeat(43), y: "b".repeat(43) };
const pem = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n";

/** Cases both validators must decide alike. */
const corpus: [string, Record<string, unknown>, boolean][] = [
  ["minimal", base, true],
  ["every field", {
    ...base,
    description: "The shop's assistant",
    model: "openai/gpt-4.1-mini",
    tools: ["orders/get_order", "orders/cancel_order"],
    channels: {
      web: { handoff: { queue: "support", message: "A colleague will take over." } },
      whatsapp: {},
      messenger: {},
      instagram: { handoff: { queue: "social" } },
    },
    identity: { algorithm: "HS256", secret: "WIDGET_SECRET", issuer: "https://shop.example", audience: "caplo", maxTokenAgeSeconds: 300, levels: { mfa: "high" }, defaultLevel: "standard" },
    greeting: "Hi!",
    locale: "sl",
  }, true],
  ["ES256 with a PEM key", { ...base, identity: { algorithm: "ES256", publicKey: pem } }, true],
  ["ES256 with a JWKS", { ...base, identity: { algorithm: "ES256", jwks: { keys: [{ ...jwk, kid: "k1", use: "sig", alg: "ES256" }] } } }, true],
  ["unknown field", { ...base, temperature: 1 }, false],
  ["wrong kind", { ...base, kind: "ToolPackage" }, false],
  ["apiVersion v2", { ...base, apiVersion: "v2" }, false],
  ["name of 41 characters", { ...base, name: `a${"b".repeat(40)}` }, false],
  ["missing instructions", { ...base, instructions: undefined }, false],
  ["instructions of 32,001 characters", { ...base, instructions: "x".repeat(32_001) }, false],
  ["tool reference without a slash", { ...base, tools: ["orders__get_order"] }, false],
  ["a tool listed twice", { ...base, tools: ["orders/get_order", "orders/get_order"] }, false],
  ["129 tools", { ...base, tools: Array.from({ length: 129 }, (_, i) => `orders/t${i}`) }, false],
  ["an http origin", { ...base, origins: ["http://shop.example"] }, false],
  ["an origin with a path", { ...base, origins: ["https://shop.example/"] }, false],
  ["21 origins", { ...base, origins: Array.from({ length: 21 }, (_, i) => `https://s${i}.example`) }, false],
  ["no channels", { ...base, channels: {} }, false],
  ["an unknown channel", { ...base, channels: { telegram: {} } }, false],
  ["handoff without queue", { ...base, channels: { web: { handoff: {} } } }, false],
  ["alg none", { ...base, identity: { algorithm: "none" } }, false],
  ["HS256 without a secret name", { ...base, identity: { algorithm: "HS256" } }, false],
  ["ES256 with both keys", { ...base, identity: { algorithm: "ES256", publicKey: pem, jwks: { keys: [jwk] } } }, false],
  ["ES256 with neither key", { ...base, identity: { algorithm: "ES256" } }, false],
  ["a private JWK", { ...base, identity: { algorithm: "ES256", jwks: { keys: [{ ...jwk, d: "c".repeat(43) }] } } }, false],
  ["maxTokenAgeSeconds 86401", { ...base, identity: { algorithm: "HS256", secret: "S", maxTokenAgeSeconds: 86_401 } }, false],
  ["21 acr mappings", { ...base, identity: { algorithm: "HS256", secret: "S", levels: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`a${i}`, "low"])) } }, false],
  ["greeting with markup", { ...base, greeting: "<b>Hi</b>" }, false],
  ["locale en_US", { ...base, locale: "en_US" }, false],
  ["model without provider", { ...base, model: "gpt-4.1" }, false],
];

/** Rules JSON Schema cannot state; `caplo agent validate` enforces them, the editor does not. */
const zodOnly: [string, Record<string, unknown>][] = [
  ["a model name over 64 characters", { ...base, tools: [`p${"a".repeat(39)}/${"t".repeat(23)}`] }],
  ["two references with one model name", { ...base, tools: ["xa--b/c", "xa/b__c"] }],
  ["web channel without origins", { ...base, origins: [] }],
  ["an origin with its default port", { ...base, origins: ["https://shop.example:443"] }],
  ["blank instructions", { ...base, instructions: "   " }],
  ["several JWKS keys without kids", { ...base, identity: { algorithm: "ES256", jwks: { keys: [jwk, jwk] } } }],
];

describe("schemas/agent.schema.json", () => {
  it("is exactly what the zod schema generates (regenerate: node bin/caplo.mjs agent schema > schemas/agent.schema.json)", () => {
    expect(checkedIn).toBe(agentJsonSchemaText());
  });

  it("declares draft 2020-12 and its published address", () => {
    const schema = JSON.parse(checkedIn) as Record<string, unknown>;
    expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(schema.$id).toBe("https://docs.caplo.si/schemas/agent.schema.json");
  });

  it.each(corpus)("decides like the zod schema: %s", (_name, document, valid) => {
    const clean = JSON.parse(JSON.stringify(document)) as Record<string, unknown>;
    expect(parseAgentConfig(clean).ok).toBe(valid);
    expect(validate(clean)).toBe(valid);
  });

  it.each(zodOnly)("leaves to caplo agent validate what JSON Schema cannot say: %s", (_name, document) => {
    expect(validate(document)).toBe(true);
    expect(parseAgentConfig(document).ok).toBe(false);
  });
});
