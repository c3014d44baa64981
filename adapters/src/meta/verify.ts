// Verifies Meta's X-Hub-Signature-256 (HMAC-SHA256 of the raw body bytes with the app secret, compared in
// constant time) and answers the hub.challenge subscription handshake. Pure: no SDK, no I/O.
import { createHmac, timingSafeEqual } from "node:crypto";
import { headerOf, type HandshakeAnswer, type Verification, type WebhookRequest } from "../adapter.ts";

export interface MetaVerifyConfig {
  appSecret: string;
  /** The token typed into the app dashboard when subscribing the webhook. */
  verifyToken: string;
}

export function verifyMeta(request: WebhookRequest, config: MetaVerifyConfig): Verification {
  const header = headerOf(request, "x-hub-signature-256");
  if (!header) {
    return { ok: false, status: 403, error: { code: "signature_missing", path: "headers.x-hub-signature-256", message: "The request has no X-Hub-Signature-256 header." } };
  }
  const match = /^sha256=([0-9a-f]{64})$/i.exec(header.trim());
  const expected = createHmac("sha256", config.appSecret).update(request.rawBody).digest();
  const given = match ? Buffer.from(match[1]!, "hex") : Buffer.alloc(0);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, status: 403, error: { code: "signature_invalid", path: "headers.x-hub-signature-256", message: "The X-Hub-Signature-256 does not match the body and app secret." } };
  }
  return { ok: true };
}

/** GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…: echo the challenge when the token matches. */
export function handshakeMeta(request: WebhookRequest, config: MetaVerifyConfig): HandshakeAnswer | null {
  if (request.method !== "GET") return null;
  const query = new URL(request.url, "http://local").searchParams;
  if (!query.has("hub.mode")) return null;
  const token = Buffer.from(query.get("hub.verify_token") ?? "");
  const wanted = Buffer.from(config.verifyToken);
  const tokenOk = token.length === wanted.length && timingSafeEqual(token, wanted);
  const challenge = query.get("hub.challenge") ?? "";
  if (query.get("hub.mode") !== "subscribe" || !tokenOk || !/^[A-Za-z0-9._-]{1,256}$/.test(challenge)) {
    return { status: 403, error: { code: "handshake_refused", path: "query.hub.verify_token", message: "The subscription handshake's mode, verify token or challenge is wrong." } };
  }
  return { status: 200, body: challenge };
}
