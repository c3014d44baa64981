// Verifies Twilio's X-Twilio-Signature over the public webhook URL and every form parameter. Pure: the
// signature check itself is the real twilio validator, handed in by index.ts, so this file imports no SDK.
import { headerOf, type Verification, type WebhookRequest } from "../adapter.ts";

/** The twilio library's validateRequest with the auth token bound; `settings` is the signature-settings header. */
export type TwilioSignatureValidator = (
  signature: string,
  url: string,
  params: Record<string, string | string[]>,
  settings: string | undefined,
) => boolean;

export interface TwilioVerifyConfig {
  /**
   * The webhook URL exactly as configured in Twilio (what Twilio signed), e.g.
   * `https://shop.example/caplo/webhooks/whatsapp`. Behind a proxy this is the public URL, not the local one.
   */
  publicUrl: string;
}

/** Form parameters as the validator wants them: repeated keys become arrays, unknown keys are kept. */
export function formParams(rawBody: Buffer): Record<string, string | string[]> {
  const params: Record<string, string | string[]> = {};
  for (const [key, value] of new URLSearchParams(rawBody.toString("utf8"))) {
    const existing = params[key];
    if (existing === undefined) params[key] = value;
    else params[key] = Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return params;
}

/** The URL Twilio signed: the configured public URL, with the request's query string when it has none. */
export function signedUrl(config: TwilioVerifyConfig, requestUrl: string): string {
  const queryAt = requestUrl.indexOf("?");
  if (queryAt === -1 || config.publicUrl.includes("?")) return config.publicUrl;
  return config.publicUrl + requestUrl.slice(queryAt);
}

export function verifyTwilio(
  request: WebhookRequest,
  config: TwilioVerifyConfig,
  validate: TwilioSignatureValidator,
): Verification {
  const signature = headerOf(request, "x-twilio-signature");
  if (!signature) {
    return { ok: false, status: 403, error: { code: "signature_missing", path: "headers.x-twilio-signature", message: "The request has no X-Twilio-Signature header." } };
  }
  const params = formParams(request.rawBody);
  const settings = headerOf(request, "x-twilio-webhooks-signature-settings");
  if (!validate(signature, signedUrl(config, request.url), params, settings)) {
    return { ok: false, status: 403, error: { code: "signature_invalid", path: "headers.x-twilio-signature", message: "The X-Twilio-Signature does not match the public webhook URL and body." } };
  }
  return { ok: true };
}
