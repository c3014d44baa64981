// Twilio Content API templates cached in the channel store, so each template is created once per account.
import type { ContentCache } from "@caplo/adapters/whatsapp/api";
import type { InboxStore } from "./ports.ts";

export function storeContentCache(store: InboxStore): ContentCache {
  return { get: (hash) => store.getContentSid(hash), put: (hash, sid) => store.putContentSid(hash, sid) };
}
