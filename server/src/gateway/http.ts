// Small HTTP helpers for the gateway: JSON answers, error values `{ code, path, message }`, bounded
// JSON bodies, and a route table with `:param` segments.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, params: Record<string, string>) => void | Promise<void>;
export type HttpError = { code: string; path: string; message: string };

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff", ...headers });
  res.end(text);
}

export function sendError(res: ServerResponse, status: number, error: HttpError, headers: Record<string, string> = {}): void {
  sendJson(res, status, { error }, headers);
}

/** Read a JSON body of at most `maxBytes`; a bigger or unparsable one is an error value, never a throw. */
export async function readJson(req: IncomingMessage, maxBytes: number): Promise<{ ok: true; value: unknown } | { ok: false; status: number; error: HttpError }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return { ok: false, status: 413, error: { code: "body_too_large", path: "", message: `the body is larger than ${maxBytes} bytes` } };
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, status: 400, error: { code: "body_invalid", path: "", message: "the body is not valid JSON" } };
  }
}

type Route = { method: string; parts: string[]; handler: RouteHandler };

export class RouteTable {
  private readonly routes: Route[] = [];

  add(method: string, path: string, handler: RouteHandler): void {
    if (!path.startsWith("/")) throw new Error(`route path must start with /: ${path}`);
    this.routes.push({ method: method.toUpperCase(), parts: path.split("/").slice(1), handler });
  }

  /** The handler for a request, with its params; `methodMismatch` when the path exists for other methods. */
  match(method: string, pathname: string): { handler: RouteHandler; params: Record<string, string> } | { methodMismatch: boolean } {
    const parts = pathname.split("/").slice(1);
    let methodMismatch = false;
    for (const route of this.routes) {
      if (route.parts.length !== parts.length) continue;
      const params: Record<string, string> = {};
      const same = route.parts.every((part, index) => {
        const value = parts[index]!;
        if (part.startsWith(":")) {
          if (value === "") return false;
          try {
            params[part.slice(1)] = decodeURIComponent(value);
          } catch {
            return false;
          }
          return true;
        }
        return part === value;
      });
      if (!same) continue;
      if (route.method !== method.toUpperCase()) {
        methodMismatch = true;
        continue;
      }
      return { handler: route.handler, params };
    }
    return { methodMismatch };
  }
}

/** Compare a presented bearer token with the configured one in constant time. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = /^Bearer (.+)$/.exec(header ?? "")?.[1] ?? "";
  const a = createHash("sha256").update(presented).digest();
  const b = createHash("sha256").update(token).digest();
  return presented.length > 0 && timingSafeEqual(a, b);
}
