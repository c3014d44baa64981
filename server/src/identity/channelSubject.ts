// Customers on messaging apps are identified by their channel identity, which the platform vouches for
// with its signed webhook: a WhatsApp number, a Messenger page-scoped id (PSID) or an Instagram-scoped
// id (IGSID). That makes a subject at level low: enough to tell customers apart, never a sign-in.
import { E164_PATTERN, META_ID_PATTERN, type CallSubject } from "@caplo/shared";

export type MessagingChannel = "whatsapp" | "messenger" | "instagram";
export type ChannelSubjectResult = { ok: true; subject: CallSubject } | { ok: false; error: { code: "channel_identity_invalid"; path: string; message: string } };

const RULES: Record<MessagingChannel, { pattern: RegExp; what: string }> = {
  whatsapp: { pattern: E164_PATTERN, what: "an E.164 phone number such as +15551234567" },
  messenger: { pattern: META_ID_PATTERN, what: "a page-scoped id (PSID): digits" },
  instagram: { pattern: META_ID_PATTERN, what: "an Instagram-scoped id (IGSID): digits" },
};

/**
 * The subject for a verified channel identity. `address` is the sender as the platform gives it
 * (`whatsapp:+15551234567` from Twilio, or the bare number or id); `at` is when its message arrived.
 */
export function channelSubject(channel: MessagingChannel, address: string, at: Date): ChannelSubjectResult {
  const bare = address.startsWith(`${channel}:`) ? address.slice(channel.length + 1) : address;
  const rule = RULES[channel];
  if (!rule.pattern.test(bare)) {
    return { ok: false, error: { code: "channel_identity_invalid", path: "from", message: `a ${channel} sender must be ${rule.what}` } };
  }
  const id = `${channel}:${bare}`;
  return { ok: true, subject: { id, level: "low", authTime: at.toISOString(), channel: id } };
}
