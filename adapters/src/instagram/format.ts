// Renders outbound messages for Instagram: text split at 1000 bytes, quick replies (13, 20 characters, text
// only), the button template, typing indicators and images; other files degrade to a link.
import * as C from "@caplo/shared/channels";
import type { Outbound } from "@caplo/shared/messages";
import type { RenderContext, Rendered } from "../adapter.ts";
import { utf8Bytes } from "../common/text.ts";
import type { GraphMessage } from "../meta/api.ts";
import { renderMeta, type MetaLimits } from "../meta/format.ts";

export const INSTAGRAM_LIMITS: MetaLimits = {
  name: "Instagram",
  textMax: C.INSTAGRAM_TEXT_BYTES_MAX,
  measure: utf8Bytes,
  quickRepliesMax: C.INSTAGRAM_QUICK_REPLIES_MAX,
  quickReplyTitleMax: C.INSTAGRAM_QUICK_REPLY_TITLE_MAX,
  buttonTemplate: true,
  buttonTextMax: C.INSTAGRAM_BUTTON_TEXT_MAX,
  buttonsMax: C.INSTAGRAM_BUTTONS_MAX,
  buttonTitleMax: C.INSTAGRAM_BUTTON_TITLE_MAX,
  payloadMax: C.META_PAYLOAD_MAX,
  fileTypes: ["image"],
  disclosureOnRelease: true,
};

export function renderInstagram(outbound: Outbound, context: RenderContext): Rendered<GraphMessage> {
  return renderMeta(outbound, context, INSTAGRAM_LIMITS);
}
