// Parses a verified Instagram webhook (object "instagram") into channel events. Pure: no SDK, no I/O.
import type { ParseResult, WebhookRequest } from "../adapter.ts";
import { parseMeta } from "../meta/parse.ts";

export function parseInstagram(request: WebhookRequest): ParseResult {
  return parseMeta(request, "instagram");
}
