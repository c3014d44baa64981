import { describe, expect, it } from "vitest";
import { satisfiesStepUp } from "./stepUp.ts";
import { channelSubject } from "./channelSubject.ts";

const AT = new Date("2026-03-01T12:00:00Z");

describe("channel identities", () => {
  it("makes a WhatsApp sender a subject at level low, with or without Twilio's whatsapp: prefix", () => {
    const expected = { ok: true, subject: { id: "whatsapp:+15551234567", level: "low", authTime: AT.toISOString(), channel: "whatsapp:+15551234567" } };
    expect(channelSubject("whatsapp", "whatsapp:+15551234567", AT)).toEqual(expected);
    expect(channelSubject("whatsapp", "+15551234567", AT)).toEqual(expected);
  });

  it("makes a Messenger PSID and an Instagram IGSID subjects that cannot collide across channels", () => {
    const messenger = channelSubject("messenger", "6543210987654321", AT);
    const instagram = channelSubject("instagram", "6543210987654321", AT);
    expect(messenger).toMatchObject({ ok: true, subject: { id: "messenger:6543210987654321", level: "low", channel: "messenger:6543210987654321" } });
    expect(instagram).toMatchObject({ ok: true, subject: { id: "instagram:6543210987654321", level: "low" } });
  });

  it("refuses senders that are not the channel's identity form", () => {
    for (const [channel, address] of [
      ["whatsapp", "15551234567"],
      ["whatsapp", "+0551234567"],
      ["whatsapp", "+1234567890123456"],
      ["whatsapp", "messenger:+15551234567"],
      ["messenger", "abc"],
      ["messenger", ""],
      ["instagram", "1".repeat(33)],
    ] as const) {
      expect(channelSubject(channel, address, AT)).toMatchObject({ ok: false, error: { code: "channel_identity_invalid" } });
    }
    expect(channelSubject("whatsapp", "+1234567", AT).ok).toBe(true);
    expect(channelSubject("whatsapp", "+123456789012345", AT).ok).toBe(true);
  });

  it("never satisfies a step-up above low: a channel identity is not a sign-in", () => {
    const result = channelSubject("whatsapp", "+15551234567", AT);
    expect(result.ok && satisfiesStepUp(result.subject, { level: "standard" }, AT)).toBe(false);
    expect(result.ok && satisfiesStepUp(result.subject, { level: "low", maxAuthAgeSeconds: 0 }, AT)).toBe(true);
  });
});
