// Sends WhatsApp messages with the real twilio client: Content API templates are created at run time,
// cached by a hash of their content, and sent by ContentSid with ContentVariables.
import { createHash } from "node:crypto";
import twilio from "twilio";
import type RequestClient from "twilio/lib/base/RequestClient.js";
import { TWILIO_ERROR_OUTSIDE_WINDOW } from "@caplo/shared/channels";
import type { ApprovedTemplate, SendResult } from "../adapter.ts";
import { sampleVariables, templateShape, type ContentTemplate, type WhatsAppMessage } from "./format.ts";

export interface TwilioApiConfig {
  accountSid: string;
  authToken: string;
  /** The WhatsApp sender, `whatsapp:+15550001111`, or a Messaging Service SID (MG…). */
  from: string;
  /**
   * Where Twilio's API is reached instead of its public hosts, e.g. an egress gateway or, in tests, a
   * local fake. Every Twilio host maps to this origin with its path kept.
   */
  apiBaseUrl?: string;
  /**
   * Where Twilio posts each message's delivery statuses (StatusCallback): the webhook URL exactly as Twilio
   * is told it, so the callback's X-Twilio-Signature is checked against that URL.
   */
  statusCallback?: string;
}

/** Remembers ContentSids by content hash; the glue persists it so templates are created once. */
export interface ContentCache {
  get(hash: string): Promise<string | undefined>;
  put(hash: string, contentSid: string): Promise<void>;
}

export function memoryContentCache(): ContentCache {
  const map = new Map<string, string>();
  return {
    get: async (hash) => map.get(hash),
    put: async (hash, sid) => void map.set(hash, sid),
  };
}

/**
 * The content hash: the template's type and every fixed part. Templates are made per shape (every title and
 * id a variable), so one ContentSid serves every message with that type and number of options.
 */
export function contentHash(template: ContentTemplate): string {
  return createHash("sha256").update(JSON.stringify(template)).digest("hex").slice(0, 32);
}

/**
 * The twilio client's supported extension point for its transport is `httpClient`: this one is its own
 * RequestClient with every request's origin replaced by `apiBaseUrl`.
 */
class RoutedRequestClient extends twilio.RequestClient {
  readonly #base: string;
  constructor(base: string) {
    super({ timeout: 10_000, keepAlive: false });
    this.#base = base.replace(/\/$/, "");
  }
  override request<TData>(opts: RequestClient.RequestOptions<TData>) {
    const original = new URL(opts.uri);
    return super.request({ ...opts, uri: `${this.#base}${original.pathname}${original.search}` });
  }
}

export function createTwilioClient(config: TwilioApiConfig): twilio.Twilio {
  return twilio(config.accountSid, config.authToken, {
    ...(config.apiBaseUrl ? { httpClient: new RoutedRequestClient(config.apiBaseUrl) } : {}),
    autoRetry: false,
  });
}

/** A Twilio error as a send result: 429, 5xx and network errors are retryable, the rest permanent. */
export function twilioFailure(error: unknown): SendResult {
  const e = error as { status?: number; code?: number; message?: string };
  const status = typeof e?.status === "number" ? e.status : undefined;
  const code = typeof e?.code === "number" ? e.code : undefined;
  const message = String(e?.message ?? error);
  if (code === TWILIO_ERROR_OUTSIDE_WINDOW) {
    return { ok: false, retryable: false, code: "outside_window", ...(status ? { status } : {}), platformCode: code, message };
  }
  if (status === undefined) return { ok: false, retryable: true, code: "network", message };
  const retryable = status === 429 || status >= 500;
  return { ok: false, retryable, code: retryable ? "platform_unavailable" : "platform_refused", status, ...(code ? { platformCode: code } : {}), message };
}

export class TwilioWhatsAppApi {
  readonly client: twilio.Twilio;
  readonly #from: string;
  readonly #cache: ContentCache;
  readonly #accountSid: string;
  readonly #statusCallback: string | undefined;

  constructor(config: TwilioApiConfig, cache: ContentCache = memoryContentCache()) {
    this.client = createTwilioClient(config);
    this.#from = config.from;
    this.#statusCallback = config.statusCallback;
    this.#cache = cache;
    this.#accountSid = config.accountSid;
  }

  /**
   * The ContentSid of a template, created on first use and cached by its shape and content hash. A
   * ContentSid belongs to one Twilio account, so the cache key names the account too: another account creates
   * its own. Twilio asks for a sample value of every variable at creation (`variables`).
   */
  async contentSid(template: ContentTemplate): Promise<string> {
    const hash = contentHash(template);
    const key = `${this.#accountSid}:${templateShape(template)}:${hash}`;
    const cached = await this.#cache.get(key);
    if (cached) return cached;
    const { type, ...body } = template;
    const created = await this.client.content.v1.contents.create({
      // The Content API's wire names; the library sends this object as the JSON body unchanged.
      ...({ friendly_name: `caplo_${templateShape(template).replace(/\W+/g, "_")}_${hash.slice(0, 8)}` } as object),
      language: "en",
      variables: sampleVariables(template),
      types: { [type]: body } as never,
    });
    await this.#cache.put(key, created.sid);
    return created.sid;
  }

  /**
   * Sends from `from` (one of the account's WhatsApp numbers) when given, else from the configured sender.
   * With a Messaging Service the message stays in the service (its callbacks and settings), sent from `from`.
   */
  async send(to: string, message: WhatsAppMessage, from?: string): Promise<SendResult> {
    try {
      const sender = this.#sender(from);
      let created;
      if (message.kind === "text") {
        created = await this.client.messages.create({ ...sender, to, body: message.body });
      } else if (message.kind === "media") {
        created = await this.client.messages.create({ ...sender, to, mediaUrl: [message.mediaUrl], ...(message.body ? { body: message.body } : {}) });
      } else {
        const contentSid = await this.contentSid(message.template);
        created = await this.client.messages.create({ ...sender, to, contentSid, contentVariables: JSON.stringify(message.variables) });
      }
      return { ok: true, platformId: created.sid, ...(created.status ? { status: created.status } : {}) };
    } catch (error) {
      return twilioFailure(error);
    }
  }

  /** Sends an approved Content template (outside the 24-hour window too): its SID and placeholder values, no Body. */
  async sendTemplate(to: string, template: ApprovedTemplate, from?: string): Promise<SendResult> {
    try {
      const created = await this.client.messages.create({
        ...this.#sender(from),
        to,
        contentSid: template.contentSid,
        ...(template.variables && Object.keys(template.variables).length ? { contentVariables: JSON.stringify(template.variables) } : {}),
      });
      return { ok: true, platformId: created.sid, ...(created.status ? { status: created.status } : {}) };
    } catch (error) {
      return twilioFailure(error);
    }
  }

  /** Who sends, and where Twilio reports the message's statuses. */
  #sender(from?: string) {
    const sender = this.#from.startsWith("MG") ? { messagingServiceSid: this.#from, ...(from ? { from } : {}) } : { from: from ?? this.#from };
    return { ...sender, ...(this.#statusCallback ? { statusCallback: this.#statusCallback } : {}) };
  }
}
