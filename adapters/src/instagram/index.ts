// The Instagram channel adapter: Meta signature and handshake, parsing, rendering and the Graph Send API.
import * as C from "@caplo/shared/channels";
import type { AdapterCapabilities, ChannelAdapter } from "../adapter.ts";
import { graphSend, type GraphApiConfig, type GraphMessage } from "./api.ts";
import { renderInstagram } from "./format.ts";
import { parseInstagram } from "./parse.ts";
import { handshakeInstagram, verifyInstagram, type MetaVerifyConfig } from "./verify.ts";

export const INSTAGRAM_CAPABILITIES: AdapterCapabilities = {
  editableFields: false,
  forms: false,
  questions: true,
  files: true,
  pages: false,
  richText: false,
  buttonsMax: C.INSTAGRAM_BUTTONS_MAX,
  buttonTitleMax: C.INSTAGRAM_BUTTON_TITLE_MAX,
  listItemsMax: C.INSTAGRAM_QUICK_REPLIES_MAX,
  listItemTitleMax: C.INSTAGRAM_QUICK_REPLY_TITLE_MAX,
  textMax: C.INSTAGRAM_TEXT_BYTES_MAX,
  typing: true,
  windowMs: C.META_WINDOW_MS,
  disclosure: true,
};

export type InstagramAdapterConfig = GraphApiConfig & MetaVerifyConfig;

export function createInstagramAdapter(config: InstagramAdapterConfig): ChannelAdapter<GraphMessage> {
  return {
    platform: "instagram",
    capabilities: INSTAGRAM_CAPABILITIES,
    verify: (request) => verifyInstagram(request, config),
    handshake: (request) => handshakeInstagram(request, config),
    parse: parseInstagram,
    render: renderInstagram,
    send: (to, message, options) => graphSend(config, to, message, options),
  };
}
