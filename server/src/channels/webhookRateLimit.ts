// The messaging webhooks' rate limits per node: a token bucket per route and client address in front of the
// gateway's routes, and one per route spent only by requests whose signature holds.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { RouteRegistry } from "./routes.ts";

type Bucket = { tokens: number; at: number };

/** Token buckets of `perSecond` (burst twice that) by key; a bucket refilled whole is forgotten. */
function buckets(perSecond: number, now: () => number) {
  const held = new Map<string, Bucket>();
  return (key: string): boolean => {
    const at = now();
    const bucket = held.get(key) ?? { tokens: perSecond * 2, at };
    bucket.tokens = Math.min(perSecond * 2, bucket.tokens + ((at - bucket.at) / 1000) * perSecond);
    bucket.at = at;
    held.set(key, bucket);
    // Now and then, forget the buckets that have refilled (an address that stopped sending).
    if (held.size > 10_000) for (const [other, b] of held) if (b.tokens + ((at - b.at) / 1000) * perSecond >= perSecond * 2) held.delete(other);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  };
}

const rateLimited = (perSecond: number) => ({ code: "rate_limited", path: "", message: `at most ${perSecond} webhook requests per second on this node; retry later` });

/**
 * Webhook routes behind two token buckets (rate per second, burst twice that). Before any body is read, one
 * per route and client address (`addressOf`: the gateway's, X-Forwarded-For only from trusted proxies): a
 * flood from one address gets 429 with Retry-After, so the gateway's sockets stay free. After the signature
 * holds, one per route (`admitVerified`): a flood from the platform itself, or of replayed signed requests,
 * gets 429 before anything is stored. Requests that are not signed never spend the platform's bucket, so no
 * one without the credentials can make the platform's real deliveries be refused (Twilio does not retry a
 * 429 unless the webhook URL asks for retries). Meta retries a 429; set the rate above real traffic.
 */
export function limitRoutes(
  gateway: RouteRegistry & { clientKey?(req: IncomingMessage): string },
  perSecond: number,
  now: () => number = Date.now,
): Required<Pick<RouteRegistry, "route" | "admitVerified">> {
  const perAddress = buckets(perSecond, now);
  const perRoute = buckets(perSecond, now);
  const addressOf = (req: IncomingMessage) => gateway.clientKey?.(req) ?? req.socket.remoteAddress ?? "";
  return {
    route(method: string, path: string, handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): void {
      gateway.route(method, path, (req, res) => {
        if (!perAddress(`${path} ${addressOf(req)}`)) {
          req.resume(); // drain the body unread
          res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
          res.end(JSON.stringify({ error: rateLimited(perSecond) }));
          return;
        }
        return handler(req, res);
      });
    },
    admitVerified: (path: string) => perRoute(path),
  };
}
