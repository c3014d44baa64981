// Mounts the channel webhooks on the gateway: `/webhooks/{platform}` for GET (Meta's handshake) and POST,
// reading the raw body (what the platform signed) up to a size limit before the glue sees it.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ChannelService } from "./channelService.ts";
import type { Platform } from "./ports.ts";

/** Meta and Twilio webhook bodies are small; anything larger is refused before it is read whole. */
export const WEBHOOK_BODY_MAX = 1024 * 1024;
/**
 * How much of a refused body is read and dropped before its 413 is sent. The answer waits for the end of
 * the body: a socket closed (or left unread) under a body still being sent resets the connection, and the
 * sender's write fails (EPIPE, ECONNRESET) before it reads the answer. Past this much, or this long, the
 * connection is closed instead.
 */
export const WEBHOOK_DRAIN_MAX = 64 * 1024 * 1024;
export const WEBHOOK_DRAIN_MS = 10_000;

/** What the glue needs of the gateway: its route registration. */
export interface RouteRegistry {
  route(method: string, path: string, handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): void;
  /**
   * Whether a request to `path` whose signature holds may be taken now (webhookRateLimit.ts: the platform's
   * own rate, spent by signed requests only); absent, every one is.
   */
  admitVerified?(path: string): boolean;
}

/**
 * The body, or null when it is over `maxBytes`. A declared Content-Length over the limit keeps nothing from
 * the first byte; a body without one (chunked) keeps nothing once it passes the limit. Either way the rest is
 * read and dropped to its end (up to WEBHOOK_DRAIN_MAX) before null is returned, so the caller's 413 reaches
 * a sender that is still writing.
 */
export function readRawBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  const declared = Number(req.headers["content-length"]);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = Number.isFinite(declared) && declared > maxBytes;
    const timer = setTimeout(() => cutOff(), WEBHOOK_DRAIN_MS);
    timer.unref?.();
    const done = (value: Buffer | null) => {
      clearTimeout(timer);
      req.off("data", onData);
      resolve(value);
    };
    // Too much, or too slow: the connection is closed (the 413 cannot be read by then).
    const cutOff = () => {
      done(null);
      req.socket.destroy();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (!over && size > maxBytes) {
        over = true;
        chunks.length = 0;
      }
      if (!over) chunks.push(chunk);
      else if (size > WEBHOOK_DRAIN_MAX) cutOff();
    };
    req.on("data", onData);
    req.once("end", () => done(over ? null : Buffer.concat(chunks)));
    req.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/**
 * 413 with the limit. The connection is not marked to close: Node would then destroy the socket right after
 * the answer, while the sender is still writing the body it declared (a reset, EPIPE on their side).
 */
export function refuseTooLarge(res: ServerResponse): void {
  res.writeHead(413, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { code: "body_too_large", path: "body", message: `A webhook body is at most ${WEBHOOK_BODY_MAX} bytes.` } }));
}

export function registerChannelRoutes(gateway: RouteRegistry, service: ChannelService, platforms: Platform[], basePath = "/webhooks"): void {
  for (const platform of platforms) {
    const handle = service.webhook(platform);
    const path = `${basePath}/${platform}`;
    const admit = gateway.admitVerified && (() => gateway.admitVerified!(path));
    const handler = async (req: IncomingMessage, res: ServerResponse) => {
      const raw = await readRawBody(req, WEBHOOK_BODY_MAX);
      if (raw === null) return refuseTooLarge(res);
      const answer = await handle(req, raw, admit);
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    };
    gateway.route("GET", path, handler);
    gateway.route("POST", path, handler);
  }
}
