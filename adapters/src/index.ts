// @caplo/adapters: the ChannelAdapter interface and one adapter per messaging platform. Each adapter is
// also its own entry point (`@caplo/adapters/whatsapp/index`), so nothing pulls in code it does not use.
export * from "./adapter.ts";
export { createWhatsAppAdapter, WHATSAPP_CAPABILITIES, type WhatsAppAdapterConfig, type WhatsAppMessage } from "./whatsapp/index.ts";
export { createMessengerAdapter, MESSENGER_CAPABILITIES, type MessengerAdapterConfig } from "./messenger/index.ts";
export { createInstagramAdapter, INSTAGRAM_CAPABILITIES, type InstagramAdapterConfig } from "./instagram/index.ts";
export type { GraphMessage } from "./meta/api.ts";
