// Mounts the channel webhooks on the gateway: `/webhooks/{platform}` for GET (Meta's handshake) and POST,
// reading the raw body (what the platform signed) up to a size limit before the glue sees it.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ChannelService } from "./channelService.ts";
import type { Platform } from "./ports.ts";

/** Meta and Twilio webhook bodies are small; anything larger is refused before it is read whole. */
export const WEBHOOK_BODY_MAX = 1024 * 1024;

/** What the glue needs of the gateway: its route registration. */
export interface RouteRegistry {
  route(method: string, path: string, handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): void;
}

export async function readRawBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export function registerChannelRoutes(gateway: RouteRegistry, service: ChannelService, platforms: Platform[], basePath = "/webhooks"): void {
  for (const platform of platforms) {
    const handle = service.webhook(platform);
    const handler = async (req: IncomingMessage, res: ServerResponse) => {
      const raw = await readRawBody(req, WEBHOOK_BODY_MAX);
      if (raw === null) {
        res.writeHead(413, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { code: "body_too_large", path: "body", message: `A webhook body is at most ${WEBHOOK_BODY_MAX} bytes.` } }));
        return;
      }
      const answer = await handle(req, raw);
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    };
    gateway.route("GET", `${basePath}/${platform}`, handler);
    gateway.route("POST", `${basePath}/${platform}`, handler);
  }
}
