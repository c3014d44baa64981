// What a channel can show and do. The engine offers tools and features only what the channel supports
// (for example, no editable review fields and questions-style elicitation only on messaging apps).
import { z } from "zod";

export const CHANNEL_KINDS = ["web", "whatsapp", "messenger", "instagram"] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];

export const channelCapabilitiesSchema = z.object({
  /** Review cards whose editable fields the customer may change (the widget only). */
  editableFields: z.boolean(),
  /** form-style elicitation (the widget only). */
  forms: z.boolean(),
  /** questions-style elicitation: one tapped question per request. */
  questions: z.boolean(),
  /** Files delivered as downloads or media. */
  files: z.boolean(),
  /** Page layouts opened in a panel (otherwise shown as a link). */
  pages: z.boolean(),
  /** Markdown-subset text (otherwise plain text). */
  richText: z.boolean(),
});
export type ChannelCapabilities = z.infer<typeof channelCapabilitiesSchema>;
