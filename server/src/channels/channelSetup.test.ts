// Channel settings from the environment: a platform is on only with all of its credentials, and a missing
// or malformed one is a clear error naming the variable.
import { describe, expect, it } from "vitest";
import { neutralCapabilities, readChannelSettings } from "./channelSetup.ts";

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
  it("every messaging platform tells the engine: no editable fields, no forms, questions", () => {
    for (const platform of ["whatsapp", "messenger", "instagram"] as const) {
      expect(neutralCapabilities(platform)).toMatchObject({ editableFields: false, forms: false, questions: true, pages: false });
    }
  });
});
