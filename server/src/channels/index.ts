// The channel glue's public face: the service, its ports and the stores of its state (SQLite, PostgreSQL).
export { ChannelService, newToken, type ChannelServiceOptions, type WebhookHandler } from "./channelService.ts";
export type * from "./ports.ts";
export { PostgresInboxStore, SqliteInboxStore } from "./inbox/index.ts";
export { handleWebhook, toWebhookRequest, type WebhookAnswer } from "./webhook.ts";
export { DEFAULT_RETRY, type RetryPolicy } from "./retry.ts";
export { storeContentCache } from "./contentCache.ts";
export { registerChannelRoutes, readRawBody, WEBHOOK_BODY_MAX, type RouteRegistry } from "./routes.ts";
export { EnginePort, channelOwner, type EngineView, type EnginePortOptions } from "./enginePort.ts";
export { mountChannels, readChannelSettings, neutralCapabilities, type ChannelSettings, type MountedChannels } from "./channelSetup.ts";
