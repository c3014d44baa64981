// Channel settings from the environment: a platform is on only with all of its credentials, and a missing
// or malformed one is a clear error naming the variable.
import { describe, expect, it } from "vitest";
import { CHANNEL_VARIABLES, neutralCapabilities, readChannelSettings, webhookUrls } from "./channelSetup.ts";

const whatsapp = {
  CAPLO_PUBLIC_URL: "https://caplo.shop.example/",
  CAPLO_TWILIO_ACCOUNT_SID: `AC${"a".repeat(32)}`,
  CAPLO_TWILIO_AUTH_TOKEN: "b".repeat(32),
  CAPLO_WHATSAPP_FROM: "whatsapp:+14155238886",
};
const meta = { CAPLO_META_APP_SECRET: "c".repeat(32), CAPLO_META_VERIFY_TOKEN: "a-long-verify-token-123" };

describe("readChannelSettings", () => {
  it("no channel variables: no channels, no error", () => {
    expect(readChannelSettings({})).toEqual({ ok: true, settings: {} });
  });
  it("WhatsApp with every credential: the webhook URL is the public URL's /webhooks/whatsapp", () => {
    const read = readChannelSettings(whatsapp);
    expect(read).toMatchObject({ ok: true, settings: { whatsapp: { publicUrl: "https://caplo.shop.example/webhooks/whatsapp", from: "whatsapp:+14155238886" } } });
    expect(readChannelSettings({ ...whatsapp, CAPLO_WHATSAPP_WEBHOOK_URL: "https://proxy.example/wa" })).toMatchObject({ ok: true, settings: { whatsapp: { publicUrl: "https://proxy.example/wa" } } });
  });
  it("files are sent under CAPLO_PUBLIC_URL, else under the WhatsApp webhook URL's base; without a channel nothing is set", () => {
    expect(readChannelSettings(whatsapp)).toMatchObject({ ok: true, settings: { publicUrl: "https://caplo.shop.example" } });
    const { CAPLO_PUBLIC_URL: _p, ...noBase } = whatsapp;
    expect(readChannelSettings({ ...noBase, CAPLO_WHATSAPP_WEBHOOK_URL: "https://proxy.example/caplo/webhooks/whatsapp" })).toMatchObject({ ok: true, settings: { publicUrl: "https://proxy.example/caplo" } });
    const elsewhere = readChannelSettings({ ...noBase, CAPLO_WHATSAPP_WEBHOOK_URL: "https://proxy.example/wa" });
    expect(elsewhere.ok && elsewhere.settings.publicUrl).toBe(undefined);
    expect(readChannelSettings({ CAPLO_PUBLIC_URL: "https://caplo.shop.example" })).toEqual({ ok: true, settings: {} });
  });
  it("a missing or malformed credential is an error naming its variable", () => {
    const { CAPLO_TWILIO_AUTH_TOKEN: _drop, ...noToken } = whatsapp;
    expect(readChannelSettings(noToken)).toEqual({ ok: false, errors: [expect.objectContaining({ code: "channel_config_invalid", path: "CAPLO_TWILIO_AUTH_TOKEN" })] });
    expect(readChannelSettings({ ...whatsapp, CAPLO_WHATSAPP_FROM: "+14155238886" })).toMatchObject({ ok: false, errors: [{ path: "CAPLO_WHATSAPP_FROM" }] });
    expect(readChannelSettings({ ...whatsapp, CAPLO_PUBLIC_URL: "http://insecure.example" })).toMatchObject({ ok: false });
    expect(readChannelSettings({ CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "x") })).toMatchObject({
      ok: false,
      errors: [{ path: "CAPLO_META_APP_SECRET" }, { path: "CAPLO_META_VERIFY_TOKEN" }],
    });
  });
  it("Messenger and Instagram share the app secret and verify token", () => {
    const read = readChannelSettings({ ...meta, CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "x"), CAPLO_INSTAGRAM_TOKEN: "IGQV".padEnd(40, "y") });
    expect(read).toMatchObject({ ok: true, settings: { messenger: { appSecret: meta.CAPLO_META_APP_SECRET }, instagram: { verifyToken: meta.CAPLO_META_VERIFY_TOKEN } } });
  });
  it("Instagram through Business Login (an IG… token) sends through graph.instagram.com, a Page token through graph.facebook.com", () => {
    const ig = (token: string, extra: Record<string, string> = {}) => readChannelSettings({ ...meta, CAPLO_INSTAGRAM_TOKEN: token, ...extra });
    expect(ig("IGAA".padEnd(40, "y"))).toMatchObject({ ok: true, settings: { instagram: { graphBaseUrl: "https://graph.instagram.com" } } });
    const page = ig("EAAG".padEnd(40, "x"));
    expect(page.ok && page.settings.instagram?.graphBaseUrl).toBe(undefined);
    expect(ig("EAAG".padEnd(40, "x"), { CAPLO_GRAPH_API_BASE: "https://egress.example" })).toMatchObject({ ok: true, settings: { instagram: { graphBaseUrl: "https://egress.example" } } });
    // An egress gateway to graph.facebook.com is not where an Instagram User token goes; CAPLO_INSTAGRAM_API_BASE is.
    expect(ig("IGAA".padEnd(40, "y"), { CAPLO_GRAPH_API_BASE: "https://egress.example" })).toMatchObject({ ok: true, settings: { instagram: { graphBaseUrl: "https://graph.instagram.com" } } });
    expect(ig("IGAA".padEnd(40, "y"), { CAPLO_INSTAGRAM_API_BASE: "https://ig-egress.example" })).toMatchObject({ ok: true, settings: { instagram: { graphBaseUrl: "https://ig-egress.example" } } });
    expect(ig("IGAA".padEnd(40, "y"), { CAPLO_INSTAGRAM_API_BASE: "graph.instagram.com" })).toMatchObject({ ok: false, errors: [{ path: "CAPLO_INSTAGRAM_API_BASE" }] });
  });
  it("Instagram's own app secret (Business Login) signs its webhooks; Messenger keeps the Meta app secret", () => {
    const igSecret = "d".repeat(32);
    const both = readChannelSettings({ ...meta, CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "x"), CAPLO_INSTAGRAM_TOKEN: "IGAA".padEnd(40, "y"), CAPLO_INSTAGRAM_APP_SECRET: igSecret });
    expect(both).toMatchObject({ ok: true, settings: { messenger: { appSecret: meta.CAPLO_META_APP_SECRET }, instagram: { appSecret: igSecret } } });
    // Instagram alone needs no Meta app secret when it has its own.
    const alone = readChannelSettings({ CAPLO_META_VERIFY_TOKEN: meta.CAPLO_META_VERIFY_TOKEN, CAPLO_INSTAGRAM_TOKEN: "IGAA".padEnd(40, "y"), CAPLO_INSTAGRAM_APP_SECRET: igSecret });
    expect(alone).toMatchObject({ ok: true, settings: { instagram: { appSecret: igSecret } } });
    expect(readChannelSettings({ ...meta, CAPLO_INSTAGRAM_TOKEN: "IGAA".padEnd(40, "y"), CAPLO_INSTAGRAM_APP_SECRET: "not-hex" })).toMatchObject({ ok: false, errors: [{ path: "CAPLO_INSTAGRAM_APP_SECRET" }] });
  });
  it("every messaging platform tells the engine: no editable fields, no forms, questions", () => {
    for (const platform of ["whatsapp", "messenger", "instagram"] as const) {
      expect(neutralCapabilities(platform)).toMatchObject({ editableFields: false, forms: false, questions: true, pages: false });
    }
  });
  it("the verify token's rule names its allowed characters, in the refusal and for a token with another character", () => {
    const base = { ...meta, CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "x") };
    for (const token of ["short", "a verify token with spaces", "verify+token/with=signs", "x".repeat(129)]) {
      const read = readChannelSettings({ ...base, CAPLO_META_VERIFY_TOKEN: token });
      expect(read.ok).toBe(false);
      const message = read.ok ? "" : read.errors[0]!.message;
      expect(read.ok ? "" : read.errors[0]!.path).toBe("CAPLO_META_VERIFY_TOKEN");
      expect(message).toContain("16 to 128 characters, each a letter (A-Z, a-z), a digit (0-9) or one of . _ ~ -");
      expect(message).toMatch(/for example CAPLO_META_VERIFY_TOKEN=\S{16,}/);
    }
    // Every allowed character, at both lengths.
    expect(readChannelSettings({ ...base, CAPLO_META_VERIFY_TOKEN: "Az09._~-".repeat(2) }).ok).toBe(true);
    expect(readChannelSettings({ ...base, CAPLO_META_VERIFY_TOKEN: "a".repeat(128) }).ok).toBe(true);
    expect(readChannelSettings({ ...base, CAPLO_META_VERIFY_TOKEN: "a".repeat(15) }).ok).toBe(false);
  });
  it("every refusal at start names the variable, says the rule and gives an example that itself passes", () => {
    for (const [name, variable] of Object.entries(CHANNEL_VARIABLES)) {
      // The example is accepted by the rule it illustrates (access tokens show their shape only).
      if (!name.endsWith("_TOKEN") || name === "CAPLO_META_VERIFY_TOKEN" || name === "CAPLO_TWILIO_AUTH_TOKEN") expect(variable.pattern.test(variable.example), name).toBe(true);
      const env: Record<string, string> = { ...whatsapp, ...meta, CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "x"), CAPLO_INSTAGRAM_TOKEN: "IGAA".padEnd(40, "y"), CAPLO_INSTAGRAM_APP_SECRET: "d".repeat(32), [name]: "not valid here" };
      const read = readChannelSettings(env);
      expect(read.ok, name).toBe(false);
      const error = read.ok ? undefined : read.errors.find((e) => e.path === name);
      expect(error?.message, name).toContain(`${name} is malformed: ${variable.rule}; for example ${name}=${variable.example}`);
    }
    const { CAPLO_TWILIO_AUTH_TOKEN: _t, ...missing } = whatsapp;
    const read = readChannelSettings(missing);
    expect(read.ok ? "" : read.errors[0]!.message).toBe(`CAPLO_TWILIO_AUTH_TOKEN is required: ${CHANNEL_VARIABLES.CAPLO_TWILIO_AUTH_TOKEN.rule}; for example CAPLO_TWILIO_AUTH_TOKEN=${CHANNEL_VARIABLES.CAPLO_TWILIO_AUTH_TOKEN.example}`);
    const routes = readChannelSettings({ ...whatsapp, CAPLO_WHATSAPP_AGENTS: "+15551234567=shop" });
    expect(routes.ok ? "" : routes.errors[0]!.message).toContain("for example CAPLO_WHATSAPP_AGENTS=whatsapp:+15551234567=shop");
  });
  it("the webhook URLs to register: WhatsApp's as configured, Meta's under the public address", () => {
    const read = readChannelSettings({ ...whatsapp, ...meta, CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "x") });
    if (!read.ok) throw new Error(JSON.stringify(read.errors));
    expect(webhookUrls(read.settings).map((w) => [w.platform, w.url])).toEqual([
      ["whatsapp", "https://caplo.shop.example/webhooks/whatsapp"],
      ["messenger", "https://caplo.shop.example/webhooks/messenger"],
    ]);
  });
});
