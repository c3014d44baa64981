// A workspace's channel settings: CAPLO_WORKSPACE_CHANNELS lists workspace=file pairs, each file holds only
// channel variables, and each workspace's webhooks are under a path of its own.
import { describe, expect, it } from "vitest";
import { readChannelSettings, webhookUrls } from "./channelSettings.ts";
import { parseChannelFile, parseWorkspaceChannels, webhookBasePath } from "./workspaceChannels.ts";

describe("workspace channels", () => {
  it("lists each workspace once, never the default one (its channels are the server's own variables)", () => {
    expect(parseWorkspaceChannels("acme=/etc/caplo/acme.env, globex-eu=/etc/caplo/globex.env")).toEqual({ ok: true, files: [{ workspaceId: "acme", file: "/etc/caplo/acme.env" }, { workspaceId: "globex-eu", file: "/etc/caplo/globex.env" }] });
    for (const bad of ["", "acme", "Acme=/x", "=/x", "acme=", "default=/x", "acme=/x,acme=/y"]) expect(parseWorkspaceChannels(bad), bad).toMatchObject({ ok: false, error: { code: "channel_config_invalid", path: "CAPLO_WORKSPACE_CHANNELS" } });
  });

  it("a channel file: NAME=value lines, comments, quotes; anything else is refused by line without repeating a value", () => {
    expect(parseChannelFile(`# acme\n\nexport CAPLO_WHATSAPP_AGENT=shop\nCAPLO_META_VERIFY_TOKEN="acme verify"\nCAPLO_TWILIO_AUTH_TOKEN='0123'\n`, "acme.env")).toEqual({ ok: true, env: { CAPLO_WHATSAPP_AGENT: "shop", CAPLO_META_VERIFY_TOKEN: "acme verify", CAPLO_TWILIO_AUTH_TOKEN: "0123" } });
    const other = parseChannelFile("CAPLO_WHATSAPP_AGENT=shop\nCAPLO_SECRETS_KEY=s3cr3t-value\n", "acme.env");
    expect(other).toMatchObject({ ok: false, error: { path: "acme.env:2" } });
    expect(JSON.stringify(other)).not.toContain("s3cr3t-value");
    expect(parseChannelFile("CAPLO_WHATSAPP_AGENT=shop\nCAPLO_WHATSAPP_AGENT=help\n", "acme.env")).toMatchObject({ ok: false, error: { path: "acme.env:2" } });
    expect(parseChannelFile("not a line\n", "acme.env")).toMatchObject({ ok: false, error: { path: "acme.env:1" } });
  });

  it("a workspace's webhooks and the WhatsApp URL Twilio signs are under /webhooks/@<workspace>", () => {
    expect([webhookBasePath("default"), webhookBasePath("acme")]).toEqual(["/webhooks", "/webhooks/@acme"]);
    const read = readChannelSettings(
      { CAPLO_PUBLIC_URL: "https://caplo.example", CAPLO_TWILIO_ACCOUNT_SID: `AC${"a".repeat(32)}`, CAPLO_TWILIO_AUTH_TOKEN: "b".repeat(32), CAPLO_WHATSAPP_FROM: "whatsapp:+14155550199", CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "x"), CAPLO_META_APP_SECRET: "c".repeat(32), CAPLO_META_VERIFY_TOKEN: "acme-verify-token-1" },
      "/webhooks/@acme",
    );
    if (!read.ok) throw new Error(JSON.stringify(read.errors));
    expect(read.settings.whatsapp?.publicUrl).toBe("https://caplo.example/webhooks/@acme/whatsapp");
    expect(read.settings.publicUrl).toBe("https://caplo.example");
    expect(webhookUrls(read.settings, "/webhooks/@acme").map((w) => w.url)).toEqual(["https://caplo.example/webhooks/@acme/whatsapp", "https://caplo.example/webhooks/@acme/messenger"]);
  });
});
