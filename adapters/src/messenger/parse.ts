// Parses a verified Messenger webhook (object "page") into channel events. Pure: no SDK, no I/O.
import type { ParseResult, WebhookRequest } from "../adapter.ts";
import { parseMeta } from "../meta/parse.ts";

export function parseMessenger(request: WebhookRequest): ParseResult {
  return parseMeta(request, "page");
}
