// The WhatsApp-over-Twilio channel adapter: verification with the twilio validator, parsing, rendering
// and sending wired into one ChannelAdapter.
import twilio from "twilio";
import * as C from "@caplo/shared/channels";
import type { AdapterCapabilities, ApprovedTemplate, ChannelAdapter, SendOptions, WebhookRequest } from "../adapter.ts";
import { type ContentCache, TwilioWhatsAppApi, type TwilioApiConfig } from "./api.ts";
import { renderWhatsApp, type WhatsAppMessage } from "./format.ts";
import { parseTwilio } from "./parse.ts";
import { type TwilioSignatureValidator, verifyTwilio } from "./verify.ts";

export type { WhatsAppMessage, ContentTemplate } from "./format.ts";
export { contentHash } from "./api.ts";

export const WHATSAPP_CAPABILITIES: AdapterCapabilities = {
  editableFields: false,
  forms: false,
  questions: true,
  files: true,
  pages: false,
  richText: false,
  buttonsMax: C.WHATSAPP_BUTTONS_MAX,
  buttonTitleMax: C.WHATSAPP_BUTTON_TITLE_MAX,
  listItemsMax: C.WHATSAPP_LIST_ITEMS_MAX,
  listItemTitleMax: C.WHATSAPP_LIST_ITEM_TITLE_MAX,
  textMax: C.WHATSAPP_TEXT_MAX,
  typing: false,
  windowMs: C.WHATSAPP_WINDOW_MS,
  disclosure: false,
};

export interface WhatsAppAdapterConfig extends TwilioApiConfig {
  /** The webhook URL as configured in Twilio (the public URL behind any proxy). */
  publicUrl: string;
  contentCache?: ContentCache;
}

/** The real twilio validator with the auth token bound. */
export function twilioValidator(authToken: string): TwilioSignatureValidator {
  return (signature, url, params, settings) =>
    twilio.validateRequest(authToken, signature, url, params, twilio.getSignatureAlgorithm(settings));
}

/** The number the customer wrote to, when it is one (a sender of this account): the reply comes from it. */
function ownNumber(options: SendOptions): string | undefined {
  return options.account?.startsWith("whatsapp:+") ? options.account : undefined;
}

export function createWhatsAppAdapter(config: WhatsAppAdapterConfig): ChannelAdapter<WhatsAppMessage> & { api: TwilioWhatsAppApi } {
  // Delivery statuses come back to the webhook URL itself, signed over exactly that URL.
  const api = new TwilioWhatsAppApi({ ...config, statusCallback: config.statusCallback ?? config.publicUrl }, config.contentCache);
  const validate = twilioValidator(config.authToken);
  return {
    platform: "whatsapp",
    capabilities: WHATSAPP_CAPABILITIES,
    api,
    verify: (request: WebhookRequest) => verifyTwilio(request, { publicUrl: config.publicUrl }, validate),
    handshake: () => null,
    parse: parseTwilio,
    render: renderWhatsApp,
    send: (to: string, message: WhatsAppMessage, options: SendOptions) => api.send(to, message, ownNumber(options)),
    sendTemplate: (to: string, template: ApprovedTemplate, options: SendOptions) => api.sendTemplate(to, template, ownNumber(options)),
  };
}
