// Renders outbound messages for Messenger: text split at 2000, quick replies (13, titles 20), the button
// template (text 640, 1 to 3 postbacks), typing indicators, image and file attachments.
import * as C from "@caplo/shared/channels";
import type { Outbound } from "@caplo/shared/messages";
import type { RenderContext, Rendered } from "../adapter.ts";
import { lengthOf } from "../common/text.ts";
import type { GraphMessage } from "../meta/api.ts";
import { renderMeta, type MetaLimits } from "../meta/format.ts";

export const MESSENGER_LIMITS: MetaLimits = {
  name: "Messenger",
  textMax: C.MESSENGER_TEXT_MAX,
  measure: lengthOf,
  quickRepliesMax: C.MESSENGER_QUICK_REPLIES_MAX,
  quickReplyTitleMax: C.MESSENGER_QUICK_REPLY_TITLE_MAX,
  buttonTemplate: true,
  buttonTextMax: C.MESSENGER_BUTTON_TEXT_MAX,
  buttonsMax: C.MESSENGER_BUTTONS_MAX,
  buttonTitleMax: C.MESSENGER_BUTTON_TITLE_MAX,
  payloadMax: C.META_PAYLOAD_MAX,
  fileTypes: ["image", "file"],
  disclosureOnRelease: true,
};

export function renderMessenger(outbound: Outbound, context: RenderContext): Rendered<GraphMessage> {
  return renderMeta(outbound, context, MESSENGER_LIMITS);
}
