// The Messenger channel adapter: Meta signature and handshake, parsing, rendering and the Graph Send API.
import * as C from "@caplo/shared/channels";
import type { AdapterCapabilities, ChannelAdapter } from "../adapter.ts";
import { graphSend, type GraphApiConfig, type GraphMessage } from "./api.ts";
import { renderMessenger } from "./format.ts";
import { parseMessenger } from "./parse.ts";
import { handshakeMessenger, verifyMessenger, type MetaVerifyConfig } from "./verify.ts";

export const MESSENGER_CAPABILITIES: AdapterCapabilities = {
  editableFields: false,
  forms: false,
  questions: true,
  files: true,
  pages: false,
  richText: false,
  buttonsMax: C.MESSENGER_BUTTONS_MAX,
  buttonTitleMax: C.MESSENGER_BUTTON_TITLE_MAX,
  listItemsMax: C.MESSENGER_QUICK_REPLIES_MAX,
  listItemTitleMax: C.MESSENGER_QUICK_REPLY_TITLE_MAX,
  textMax: C.MESSENGER_TEXT_MAX,
  typing: true,
  windowMs: C.META_WINDOW_MS,
  disclosure: true,
};

export type MessengerAdapterConfig = GraphApiConfig & MetaVerifyConfig;

export function createMessengerAdapter(config: MessengerAdapterConfig): ChannelAdapter<GraphMessage> {
  return {
    platform: "messenger",
    capabilities: MESSENGER_CAPABILITIES,
    verify: (request) => verifyMessenger(request, config),
    handshake: (request) => handshakeMessenger(request, config),
    parse: parseMessenger,
    render: renderMessenger,
    send: (to, message, options) => graphSend(config, to, message, options),
  };
}
