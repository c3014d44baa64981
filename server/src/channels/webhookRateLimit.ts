// The messaging webhooks' rate limit per node: a token bucket per route in front of the gateway's routes.
import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * Webhook routes behind a token bucket per route (rate per second, burst twice that): a flood from one
 * platform (or someone replaying signed requests) gets 429 with Retry-After before any body is read, so
 * the gateway's sockets and the store stay free for everyone else. Meta retries a 429; Twilio does not
 * unless the webhook URL asks for retries (connection overrides), so set the rate above real traffic.
 */
export function limitRoutes(gateway: { route(method: string, path: string, handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): void }, perSecond: number) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    route(method: string, path: string, handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): void {
      gateway.route(method, path, (req, res) => {
        const now = Date.now();
        const bucket = buckets.get(path) ?? { tokens: perSecond * 2, at: now };
        bucket.tokens = Math.min(perSecond * 2, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
        bucket.at = now;
        buckets.set(path, bucket);
        if (bucket.tokens < 1) {
          req.resume(); // drain the body unread
          res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
          res.end(JSON.stringify({ error: { code: "rate_limited", path: "", message: `at most ${perSecond} webhook requests per second on this node; retry later` } }));
          return;
        }
        bucket.tokens -= 1;
        return handler(req, res);
      });
    },
  };
}

