// Handoff notices: when the agent hands a conversation to its channel's handoff destination (a team
// queue, agent.yaml `channels.<channel>.handoff.queue`), the team is told at the webhook the operator
// configured for that queue. Each notice is stored first (its exact body included), then sent as a signed
// POST, retried with growing gaps, and its outcome (delivered, or failed with the last status and error)
// recorded. Several nodes share the work through leases in the store: one node per attempt.
// Receivers: docs/operators/team-api.md ("Handoff webhook").
import { createHmac, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import { HANDOFF_QUEUE_PATTERN, type ChannelKind } from "@caplo/shared";
import { HANDOFF_SECRET_MIN } from "../config/index.ts";
import type { ConversationRecord, HandoffNotice, HandoffOutboxPort } from "../store/store.ts";

export { HANDOFF_SECRET_MIN } from "../config/index.ts";

/** Attempts per notice at most; after the last one it is recorded as failed. */
export const HANDOFF_ATTEMPTS_MAX = 8;
/** The gap before the first retry; each next one doubles (5 s, 10 s, 20 s ... about 10 minutes in all). */
export const HANDOFF_RETRY_BASE_MS = 5_000;
/** One attempt waits this long for the answer. */
export const HANDOFF_TIMEOUT_MS = 10_000;
export const SIGNATURE_HEADER = "x-caplo-signature";
export const DELIVERY_HEADER = "x-caplo-delivery";
/** The reason the agent gave is kept to this length (it is the model's text: informative only). */
export const HANDOFF_REASON_MAX = 500;

export type HandoffWebhooks = {
  /** Every queue's webhook, unless the queue has its own. */
  defaultUrl?: string;
  byQueue: Record<string, string>;
  secret: string;
};

export type ConfigError = { code: string; path: string; message: string };

function checkUrl(value: string, path: string): ConfigError | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { code: "handoff_webhook_invalid", path, message: "a URL such as https://team.example/caplo-handoff" };
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const loopback = host === "localhost" || (isIP(host) === 4 && host.startsWith("127.")) || host === "::1";
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
    return { code: "handoff_webhook_invalid", path, message: "https, or http only to this machine (localhost, 127.0.0.1, ::1)" };
  }
  if (url.username || url.password) return { code: "handoff_webhook_invalid", path, message: "no user or password in the URL: the body is signed instead" };
  return undefined;
}

/**
 * The operator's handoff webhooks from the environment, or the first problem; undefined when none is set.
 * CAPLO_HANDOFF_WEBHOOK_URL for every queue, CAPLO_HANDOFF_WEBHOOK_URL_<QUEUE> for one queue (the queue
 * name upper-cased, dashes as underscores), CAPLO_HANDOFF_WEBHOOK_SECRET to sign with.
 */
export function readHandoffWebhooks(env: Record<string, string | undefined>): { ok: true; webhooks?: HandoffWebhooks } | { ok: false; error: ConfigError } {
  const byQueue: Record<string, string> = {};
  const defaultUrl = env.CAPLO_HANDOFF_WEBHOOK_URL || undefined;
  if (defaultUrl) {
    const problem = checkUrl(defaultUrl, "CAPLO_HANDOFF_WEBHOOK_URL");
    if (problem) return { ok: false, error: problem };
  }
  for (const [name, value] of Object.entries(env)) {
    const match = /^CAPLO_HANDOFF_WEBHOOK_URL_(.+)$/.exec(name);
    if (!match || !value) continue;
    const queue = match[1]!.toLowerCase().replaceAll("_", "-");
    if (!HANDOFF_QUEUE_PATTERN.test(queue)) return { ok: false, error: { code: "handoff_webhook_invalid", path: name, message: `${match[1]} is not a queue name (letters, digits and underscores for dashes)` } };
    const problem = checkUrl(value, name);
    if (problem) return { ok: false, error: problem };
    byQueue[queue] = value;
  }
  if (!defaultUrl && Object.keys(byQueue).length === 0) {
    if (env.CAPLO_HANDOFF_WEBHOOK_SECRET) return { ok: false, error: { code: "handoff_webhook_missing", path: "CAPLO_HANDOFF_WEBHOOK_SECRET", message: "a secret without CAPLO_HANDOFF_WEBHOOK_URL: set the URL too" } };
    return { ok: true };
  }
  const secret = env.CAPLO_HANDOFF_WEBHOOK_SECRET ?? "";
  if (secret.length < HANDOFF_SECRET_MIN) {
    return { ok: false, error: { code: "handoff_secret_invalid", path: "CAPLO_HANDOFF_WEBHOOK_SECRET", message: `the webhook needs a signing secret of at least ${HANDOFF_SECRET_MIN} characters` } };
  }
  return { ok: true, webhooks: { ...(defaultUrl && { defaultUrl }), byQueue, secret } };
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the timestamp is signed too, so an old notice cannot be replayed as new. */
export function signHandoff(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex");
  return `t=${unixSeconds},v1=${mac}`;
}

/** The notice's body: who handed off, where, and how to reach the conversation. No customer messages. */
export type HandoffBody = {
  type: "caplo.handoff";
  version: 1;
  id: string;
  queue: string;
  agent: string;
  channel: ChannelKind;
  conversationId: string;
  verified: boolean;
  /** The agent's (the model's) words: informative only. */
  reason: string | null;
  requestedAt: string;
  /** The team API path of the conversation's events. */
  eventsPath: string;
};

/** The `reason` argument of the model's handoff call, if it gave a string one (anything else is ignored). */
export function handoffReason(argumentsText: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(argumentsText || "{}");
    const reason = parsed && typeof parsed === "object" ? (parsed as { reason?: unknown }).reason : undefined;
    return typeof reason === "string" && reason.trim() ? reason.trim() : undefined;
  } catch {
    return undefined;
  }
}

export type HandoffRequest = { conversation: ConversationRecord; queue: string; reason?: string | undefined; at: number };

/** What the engine calls when the agent hands a conversation over. */
export interface HandoffNotifier {
  notify(request: HandoffRequest): Promise<HandoffNotice | undefined>;
}

export type HandoffDeliveryOptions = {
  store: HandoffOutboxPort;
  webhooks: HandoffWebhooks;
  now?: () => number;
  retryBaseMs?: number;
  timeoutMs?: number;
  /** How often to look for due notices. Default 1000 ms. */
  pollMs?: number;
  fetch?: typeof fetch;
  log?: (level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>) => void;
};

/** Whether an answer is worth another attempt: no answer, a server error, a timeout or a rate limit. */
function retryable(status: number | null): boolean {
  return status === null || status >= 500 || status === 408 || status === 425 || status === 429;
}

export class HandoffDelivery implements HandoffNotifier {
  private readonly options: HandoffDeliveryOptions;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private started = false;

  constructor(options: HandoffDeliveryOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
  }

  urlFor(queue: string): string | undefined {
    return this.options.webhooks.byQueue[queue] ?? this.options.webhooks.defaultUrl;
  }

  /** Store the notice for the queue's webhook (none configured: nothing to send) and send it soon. */
  async notify(request: HandoffRequest): Promise<HandoffNotice | undefined> {
    if (!this.urlFor(request.queue)) return undefined;
    const id = `hn_${randomBytes(16).toString("base64url")}`;
    const body: HandoffBody = {
      type: "caplo.handoff",
      version: 1,
      id,
      queue: request.queue,
      agent: request.conversation.agent,
      channel: request.conversation.channel,
      conversationId: request.conversation.id,
      verified: request.conversation.subject !== null,
      reason: request.reason ? request.reason.slice(0, HANDOFF_REASON_MAX) : null,
      requestedAt: new Date(request.at).toISOString(),
      eventsPath: `/v1/team/conversations/${encodeURIComponent(request.conversation.id)}/events`,
    };
    const notice = await this.options.store.insertHandoffNotice({ id, conversationId: request.conversation.id, queue: request.queue, body: JSON.stringify(body), createdAt: this.now() });
    if (this.started) setImmediate(() => void this.deliverDue().catch((error) => this.options.log?.("error", "handoff delivery failed", { error: String(error) })));
    return notice;
  }

  /** Send every due notice once (claimed with a lease, so one node per attempt). Returns how many attempts ran. */
  deliverDue(): Promise<number> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<number> {
    const now = this.now();
    const timeout = this.options.timeoutMs ?? HANDOFF_TIMEOUT_MS;
    const claimed = await this.options.store.claimDueHandoffNotices(now, now + timeout * 3, 20);
    await Promise.all(claimed.map((notice) => this.attempt(notice)));
    return claimed.length;
  }

  private async attempt(notice: HandoffNotice): Promise<HandoffNotice | undefined> {
    const url = this.urlFor(notice.queue);
    let status: number | null = null;
    let error: string | null = null;
    if (!url) error = "no webhook is configured for this queue any more";
    else {
      const signature = signHandoff(this.options.webhooks.secret, notice.body, Math.floor(this.now() / 1000));
      try {
        const response = await (this.options.fetch ?? fetch)(url, {
          method: "POST",
          headers: { "content-type": "application/json", "user-agent": "caplo-handoff/1", [SIGNATURE_HEADER]: signature, [DELIVERY_HEADER]: notice.id },
          body: notice.body,
          redirect: "manual",
          signal: AbortSignal.timeout(this.options.timeoutMs ?? HANDOFF_TIMEOUT_MS),
        });
        status = response.status;
        await response.body?.cancel().catch(() => undefined);
        if (status < 200 || status > 299) error = `the webhook answered HTTP ${status}`;
      } catch (caught) {
        const cause = caught instanceof Error && caught.cause instanceof Error ? `: ${caught.cause.message}` : "";
        error = caught instanceof Error && caught.name === "TimeoutError" ? "no answer within the timeout" : `the request failed${cause || (caught instanceof Error ? `: ${caught.message}` : "")}`;
      }
    }
    const attempts = notice.attempts + 1;
    const delivered = error === null;
    const again = !delivered && url !== undefined && retryable(status) && attempts < HANDOFF_ATTEMPTS_MAX;
    const recorded = await this.options.store.recordHandoffAttempt(
      notice.id,
      notice.attempts,
      {
        state: delivered ? "delivered" : again ? "pending" : "failed",
        attempts,
        nextAttemptAt: again ? this.now() + (this.options.retryBaseMs ?? HANDOFF_RETRY_BASE_MS) * 2 ** (attempts - 1) : null,
        lastStatus: status,
        lastError: error,
      },
      this.now(),
    );
    if (recorded?.state === "failed") {
      this.options.log?.("error", "handoff notice not delivered", { notice: notice.id, queue: notice.queue, attempts, status, error });
    } else if (recorded?.state === "pending") {
      this.options.log?.("warn", "handoff notice attempt failed; retrying", { notice: notice.id, attempts, status, error });
    }
    return recorded;
  }

  start(): void {
    this.started = true;
    this.schedule();
  }

  private schedule(): void {
    if (!this.started) return;
    this.timer = setTimeout(() => {
      void this.deliverDue()
        .catch((error) => this.options.log?.("error", "handoff delivery failed", { error: String(error) }))
        .finally(() => this.schedule());
    }, this.options.pollMs ?? 1000);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }
}
