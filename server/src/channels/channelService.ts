// The glue between channel webhooks and the engine: webhooks store events durably, a processor turns them
// into inbound events from the store, and a sender renders each conversation's outbound events, keeps the
// 24-hour window, retries what can be retried and records what cannot be delivered.
import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { ChannelAdapter, ChannelEvent, RenderRefs, RenderWarning } from "@caplo/adapters/adapter";
import { META_HUMAN_AGENT_WINDOW_MS, TWILIO_ERROR_OUTSIDE_WINDOW } from "@caplo/shared/channels";
import type { Inbound, Outbound } from "@caplo/shared/messages";
import { disclosureText } from "./disclosure.ts";
import { decideTap, decideText, isTypedConsent, type Decision } from "./inboundPolicy.ts";
import type { Binding, BindingKey, ButtonRef, ConversationEvent, ConversationPort, InboxRow, InboxStore, OutboxRecord, Platform, TeamAlert, TeamAlerts } from "./ports.ts";
import { DEFAULT_RETRY, sendWithRetry, type RetryPolicy } from "./retry.ts";
import { handleWebhook, toWebhookRequest, type WebhookAnswer } from "./webhook.ts";

/** Button payloads are `c1.` and 128 random bits: unguessable, and meaningless without the store. */
const TOKEN_PATTERN = /^c1\.[A-Za-z0-9_-]{22}$/;

/** Pauses before processing is tried again after the store failed: the first, and the longest. */
const DRAIN_RETRY_FIRST_MS = 500;
const DRAIN_RETRY_MAX_MS = 30_000;

/** Attempts at handling one outbound event while the store fails (pauses as for processing: 0.5 s doubling). */
const OUTBOUND_ATTEMPTS = 5;

/** Where the latest proposed proposal's id is kept among the proposal states (`*` begins no proposal id). */
const LATEST_PROPOSAL_KEY = "*latest";

export function newToken(): string {
  return `c1.${randomBytes(16).toString("base64url")}`;
}

export interface ChannelServiceOptions {
  store: InboxStore;
  port: ConversationPort;
  adapters: ChannelAdapter[];
  alerts?: TeamAlerts;
  retry?: RetryPolicy;
  /** How long processed inbound events (and their dedup keys) are kept; see DEFAULT_RETENTION. */
  retention?: Partial<Retention>;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Operator log lines (an inbound no agent answers); console.warn by default. */
  log?: (line: string) => void;
  /**
   * This server's public https address (`https://caplo.shop.example`): a file the engine delivers at a path
   * of this server (`/v1/files/…`) is sent to the platform at this address. Without it such a file is not sent.
   */
  publicUrl?: string;
  /** Pauses before processing (or handling an outbound event) is tried again after the store failed (first, longest); 500 ms doubling to 30 s. */
  drainRetryMs?: { first: number; max: number };
}

export interface Retention {
  /** Processed inbox rows, sent outbox records and the engine's accepted source ids older than this are deleted. */
  keepMs: number;
  /** How often pruning runs once started. */
  everyMs: number;
}

/**
 * Seven days: far past any platform redelivery (Meta retries an unanswered webhook for hours and
 * unsubscribes an app failing for 8; Twilio retries only briefly), so a late repeat of a MessageSid or mid
 * still finds its dedup key.
 */
export const DEFAULT_RETENTION: Retention = { keepMs: 7 * 24 * 60 * 60 * 1000, everyMs: 60 * 60 * 1000 };

export type WebhookHandler = (req: IncomingMessage, rawBody: Buffer) => Promise<WebhookAnswer>;

export class ChannelService {
  readonly #store: InboxStore;
  readonly #port: ConversationPort;
  readonly #adapters = new Map<Platform, ChannelAdapter>();
  readonly #alerts: TeamAlerts;
  readonly #retry: RetryPolicy;
  readonly #now: () => number;
  readonly #sleep: ((ms: number) => Promise<void>) | undefined;
  readonly #subscriptions = new Map<string, () => void>();
  readonly #chains = new Map<string, Promise<void>>();
  #draining: Promise<void> | null = null;
  readonly #inflight = new Set<Promise<void>>();
  #again = false;
  #noticeSeq = 0;
  readonly #retention: Retention;
  readonly #log: (line: string) => void;
  readonly #publicUrl: string | undefined;
  readonly #drainRetry: { first: number; max: number };
  /** Parts sent whose outbox record could not be stored yet, by platform|conversation|seq|part. */
  readonly #unrecorded = new Map<string, OutboxRecord>();
  #closed = false;
  #drainTimer: NodeJS.Timeout | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  #drainBackoffMs = 0;
  #pruneTimer: NodeJS.Timeout | undefined;

  constructor(options: ChannelServiceOptions) {
    this.#store = options.store;
    this.#port = options.port;
    for (const adapter of options.adapters) this.#adapters.set(adapter.platform, adapter);
    this.#alerts = options.alerts ?? { alert: () => {} };
    this.#retry = options.retry ?? DEFAULT_RETRY;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep;
    this.#retention = { ...DEFAULT_RETENTION, ...options.retention };
    this.#log = options.log ?? ((line) => console.warn(line));
    this.#publicUrl = options.publicUrl?.replace(/\/$/, "");
    this.#drainRetry = options.drainRetryMs ?? { first: DRAIN_RETRY_FIRST_MS, max: DRAIN_RETRY_MAX_MS };
  }

  /** The webhook handler of one platform: `(req, rawBody) → {status, headers, body}`. */
  webhook(platform: Platform): WebhookHandler {
    const adapter = this.#adapter(platform);
    return (req, rawBody) => handleWebhook(adapter, this.#store, toWebhookRequest(req, rawBody), () => this.#kick(), this.#now);
  }

  /**
   * Starts processing in the background. If the store fails meanwhile (unreachable, busy), the stored
   * events stay received and processing is tried again after a growing pause (0.5 s doubling to 30 s):
   * they do not wait for the next webhook, and the failure never ends the process.
   */
  #kick(): void {
    if (this.#closed) return;
    this.drain().then(
      () => {
        this.#drainBackoffMs = 0;
      },
      (error: unknown) => {
        if (this.#drainTimer || this.#closed) return;
        this.#drainBackoffMs = Math.min(this.#drainRetry.max, this.#drainBackoffMs === 0 ? this.#drainRetry.first : this.#drainBackoffMs * 2);
        this.#log(`caplo channels: processing stored events failed (${String((error as Error)?.message ?? error)}); trying again in ${this.#drainBackoffMs} ms`);
        this.#drainTimer = setTimeout(() => {
          this.#drainTimer = undefined;
          this.#kick();
        }, this.#drainBackoffMs);
        this.#drainTimer.unref?.();
      },
    );
  }

  /** After a restart: rows a crash left in processing are processed again, and every binding resubscribes. */
  async resume(bindings: Binding[]): Promise<void> {
    await this.#store.requeueProcessing();
    for (const binding of bindings) this.#ensureSubscribed(binding);
    await this.drain();
  }

  /** Processes every stored inbound event, oldest first; concurrent calls share one pass. */
  drain(): Promise<void> {
    if (this.#draining) {
      this.#again = true;
      return this.#draining;
    }
    this.#draining = (async () => {
      try {
        do {
          this.#again = false;
          for (;;) {
            const rows = await this.#store.claimInbound(20);
            if (rows.length === 0) break;
            for (const row of rows) await this.#process(row);
          }
        } while (this.#again);
      } finally {
        this.#draining = null;
      }
    })();
    return this.#draining;
  }

  /** Resolves when no inbound processing, engine hand-off or outbound sending is under way. */
  async idle(): Promise<void> {
    for (;;) {
      const pending = [this.#draining, ...this.#inflight, ...this.#chains.values()].filter(Boolean);
      await Promise.all(pending);
      const still = [this.#draining, ...this.#inflight, ...this.#chains.values()].filter(Boolean);
      if (still.length === pending.length && still.every((p, i) => p === pending[i])) return;
    }
  }

  close(): void {
    this.#closed = true;
    if (this.#drainTimer) clearTimeout(this.#drainTimer);
    this.#drainTimer = undefined;
    if (this.#sweepTimer) clearInterval(this.#sweepTimer);
    this.#sweepTimer = undefined;
    this.stopPruning();
    for (const unsubscribe of this.#subscriptions.values()) unsubscribe();
    this.#subscriptions.clear();
  }

  /**
   * Retention: deletes what is older than the retention window and no longer needed — processed inbox rows
   * (done or failed; never one still waiting), sent outbox records and the engine's accepted source ids.
   * A row received exactly `keepMs` ago is kept.
   */
  async prune(): Promise<{ inbox: number; outbox: number; sources: number }> {
    const before = this.#now() - this.#retention.keepMs;
    const { inbox, outbox } = await this.#store.prune(before);
    const sources = await this.#port.pruneSources(before);
    return { inbox, outbox, sources };
  }

  /** Prunes now and then every `everyMs`; the timer never keeps the process alive. */
  startPruning(): void {
    if (this.#pruneTimer) return;
    const run = () => {
      this.prune().catch((error: unknown) => this.#log(`caplo channels: pruning failed: ${String((error as Error)?.message ?? error)}`));
    };
    run();
    this.#pruneTimer = setInterval(run, this.#retention.everyMs);
    this.#pruneTimer.unref?.();
  }

  /**
   * Looks for stored events every `everyMs` even when no webhook arrives: an event whose claim a lost node
   * held (PostgreSQL: claimable again when that node's liveness lease ends) or one stored by a node that
   * stopped before processing it is processed without waiting for the next message. The timer never keeps
   * the process alive; a failing pass is retried as after a webhook.
   */
  startSweeping(everyMs: number): void {
    if (this.#sweepTimer || this.#closed) return;
    this.#sweepTimer = setInterval(() => {
      if (!this.#draining) this.#kick();
    }, everyMs);
    this.#sweepTimer.unref?.();
  }

  stopPruning(): void {
    if (this.#pruneTimer) clearInterval(this.#pruneTimer);
    this.#pruneTimer = undefined;
  }

  #adapter(platform: Platform): ChannelAdapter {
    const adapter = this.#adapters.get(platform);
    if (!adapter) throw new Error(`no adapter for ${platform}`);
    return adapter;
  }

  async #process(row: InboxRow): Promise<void> {
    try {
      const event = JSON.parse(row.event) as ChannelEvent;
      const skipped = event.kind === "status" ? await this.#status(row.platform, event) : await this.#message(row, event);
      if (skipped) await this.#store.finishInbound(row.platform, row.messageId, "failed", skipped.unrouted);
      else await this.#store.finishInbound(row.platform, row.messageId, "done");
    } catch (error) {
      const message = String((error as Error)?.message ?? error);
      await this.#store.finishInbound(row.platform, row.messageId, "failed", message);
      this.#alerts.alert({ platform: row.platform, code: "inbound_failed", message: `An inbound ${row.platform} message could not be processed: ${message}` });
    }
  }

  async #status(platform: Platform, event: Extract<ChannelEvent, { kind: "status" }>): Promise<void> {
    if (!["failed", "undelivered"].includes(event.status) || !event.about) return;
    const outsideWindow = event.errorCode === TWILIO_ERROR_OUTSIDE_WINDOW;
    const code = outsideWindow ? "outside_window" : "undelivered";
    const message = outsideWindow
      ? "Not delivered: more than 24 hours since the customer's last message (Twilio 63016)."
      : `Not delivered (${event.status}${event.errorCode ? `, error ${event.errorCode}` : ""}).`;
    const record = await this.#store.markFailedByPlatformId(event.about, code, message);
    this.#alerts.alert({ platform, ...(record ? { conversationId: record.conversationId } : {}), code, message });
    if (record) this.#recordUndelivered(platform, record.conversationId, message);
  }

  /**
   * The conversation's history records the undelivered message for the team (never sent to the customer).
   * Not awaited: the engine records it after any running turn, which may itself wait on this conversation's sends.
   */
  #recordUndelivered(platform: Platform, conversationId: string, text: string): void {
    const failed = (message: string) => this.#alerts.alert({ platform, conversationId, code: "record_failed", message: `Could not record an undelivered message: ${message}` });
    const recorded = this.#port
      .recordUndelivered(conversationId, text)
      .then((result) => {
        if (!result.ok) failed(`${result.code}: ${result.message}`);
      })
      .catch((error: unknown) => failed(String((error as Error)?.message ?? error)))
      .finally(() => this.#inflight.delete(recorded));
    this.#inflight.add(recorded);
  }

  async #message(row: InboxRow, event: Extract<ChannelEvent, { kind: "message" }>): Promise<{ unrouted: string } | void> {
    const platform = row.platform;
    const key: BindingKey = { platform, account: event.to, externalId: event.from };
    let found = await this.#store.findBinding(key);
    if (!found) {
      const opened = await this.#port.openConversation(platform, event.from, event.profileName ? { displayName: event.profileName } : {}, event.to);
      if ("unanswered" in opened) {
        // No agent answers on this number or page (none configured, or its agent does not list the channel):
        // logged (our account only, never the customer) and not processed.
        this.#log(`caplo channels: ${opened.unanswered}`);
        return { unrouted: opened.unanswered };
      }
      found = await this.#store.bind(key, opened.conversationId, row.receivedAt);
    }
    await this.#store.touchInbound(key, row.receivedAt);
    const binding: Binding = { ...found, lastInboundAt: Math.max(found.lastInboundAt, row.receivedAt) };
    this.#ensureSubscribed(binding);
    const conversationId = binding.conversationId;
    // A replay of a row a crash left unfinished after its hand-off: the same inbound again, decided once;
    // the engine accepts its source id once, so it gets no second turn and the customer no second reply.
    if (row.handed !== undefined) {
      this.#hand(binding, event, JSON.parse(row.handed) as Inbound);
      return;
    }
    const openQuestion = await this.#store.getOpenQuestion(conversationId);

    let decision: Decision;
    if (event.payload !== undefined && (TOKEN_PATTERN.test(event.payload) || event.text === undefined)) {
      const ref = TOKEN_PATTERN.test(event.payload) ? await this.#store.getRef(event.payload) : undefined;
      const proposalState =
        ref && (ref.kind === "confirm" || ref.kind === "decline") ? await this.#store.getProposalState(ref.conversationId, ref.targetId) : undefined;
      decision = decideTap(ref, conversationId, proposalState, openQuestion);
    } else if (event.text !== undefined) {
      decision = decideText(event.text, openQuestion, isTypedConsent(event.text) && (await this.#proposalWaiting(conversationId)));
    } else {
      decision = { kind: "notice", code: "media_unsupported", text: "I can only read text here. Please type your message." };
    }

    // Numbered replies are answered by the customer's next message or not at all: a later "2" means something else.
    if (openQuestion?.kind === "replies" && !(decision.kind === "forward" && decision.closesQuestion)) await this.#store.setOpenQuestion(conversationId, null);
    if (decision.kind === "notice") {
      await this.#notice(binding, decision.text);
      return;
    }
    const inbound = decision.inbound;
    await this.#store.markHanded(platform, event.messageId, JSON.stringify(inbound));
    // Mark the decision before the engine answers, so a second tap meanwhile changes nothing.
    if (inbound.type === "confirm") await this.#store.setProposalState(conversationId, inbound.proposalId, "running");
    if (inbound.type === "decline") await this.#store.setProposalState(conversationId, inbound.proposalId, "declined");
    if (decision.closesQuestion) await this.#store.setOpenQuestion(conversationId, null);
    this.#hand(binding, event, inbound);
  }

  /**
   * Hands an inbound to the engine without waiting for the turn to end: a turn may wait for this customer's
   * next tap (a question), which is processed from the inbox meanwhile. A refusal is recorded on the row.
   */
  #hand(binding: Binding, event: Extract<ChannelEvent, { kind: "message" }>, inbound: Inbound): void {
    const { platform, conversationId } = binding;
    // A refusal (a coded value) and a failure to hand it over (the store away) are recorded and told alike.
    const refused = async (code: string, message: string) => {
      await this.#store.finishInbound(platform, event.messageId, "failed", message);
      this.#alerts.alert({ platform, conversationId, code: "inbound_refused", message: `The engine refused an inbound ${platform} event: ${message}` });
      // The customer is told, in words, that their tap changed nothing.
      if (inbound.type === "confirm" || inbound.type === "decline") {
        if (code === "proposal_expired") await this.#store.setProposalState(conversationId, inbound.proposalId, "expired");
        const why = code === "proposal_expired" ? "has expired; please ask again" : "is no longer waiting for a decision";
        await this.#notice(binding, `That request ${why}. Nothing was changed.`);
      } else if (inbound.type === "answer") {
        await this.#notice(binding, "That answer could not be used. Nothing was changed.");
      }
    };
    const handed = this.#port
      .receive(conversationId, inbound, { channel: platform, externalId: event.from, sourceId: `${platform}:${event.messageId}` })
      .then(
        (result) => (result.ok ? undefined : refused(result.code, `${result.code}: ${result.message}`)),
        (error: unknown) => refused("", String((error as Error)?.message ?? error)),
      )
      // Recording the refusal may fail too (the store away): told, never an unhandled rejection.
      .catch((error: unknown) => {
        this.#alerts.alert({ platform, conversationId, code: "inbound_failed", message: `Could not record a refused ${platform} event: ${String((error as Error)?.message ?? error)}` });
      })
      .finally(() => this.#inflight.delete(handed));
    this.#inflight.add(handed);
  }

  #ensureSubscribed(binding: Binding): void {
    if (this.#subscriptions.has(binding.conversationId)) return;
    const unsubscribe = this.#port.subscribe(binding.conversationId, binding.cursor, (event) => this.#enqueue(binding, event));
    this.#subscriptions.set(binding.conversationId, unsubscribe);
  }

  /** One conversation's outbound events are sent strictly in order. */
  #enqueue(binding: Binding, event: ConversationEvent): void {
    void this.#inOrder(binding, () => this.#outboundRetried(binding, event));
  }

  /** Runs `task` after everything queued for the conversation's customer; a failure is told to the team. */
  #inOrder(binding: Binding, task: () => Promise<void>): Promise<void> {
    const key = binding.conversationId;
    const previous = this.#chains.get(key) ?? Promise.resolve();
    const next = previous
      .then(task)
      .catch((error) => {
        this.#alerts.alert({ platform: binding.platform, conversationId: key, code: "send_failed", message: String((error as Error)?.message ?? error) });
      })
      .finally(() => {
        if (this.#chains.get(key) === next) this.#chains.delete(key);
      });
    this.#chains.set(key, next);
    return next;
  }

  /**
   * One outbound event, handled again if the store fails meanwhile (the parts already sent are in the outbox
   * and are not sent twice): a passing store failure does not lose the message. After the last attempt the
   * team is told (send_failed).
   */
  async #outboundRetried(binding: Binding, event: ConversationEvent): Promise<void> {
    // What the event becomes for this platform is decided once: an attempt after a store failure must not
    // alert the team or note the history a second time for a file it cannot send.
    let reached: Outbound | undefined;
    const reach = (current: Binding, outbound: Outbound) => (reached ??= this.#reachable(current, outbound));
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#outbound(binding, event, reach);
      } catch (error) {
        if (attempt >= OUTBOUND_ATTEMPTS || this.#closed) throw error;
        const pause = this.#drainRetry.first * 2 ** (attempt - 1);
        this.#log(`caplo channels: handling event ${event.seq} of ${binding.conversationId} failed (${String((error as Error)?.message ?? error)}); again in ${pause} ms`);
        await new Promise((resolve) => setTimeout(resolve, pause).unref?.());
      }
    }
  }

  async #outbound(staleBinding: Binding, event: ConversationEvent, reach: (binding: Binding, outbound: Outbound) => Outbound): Promise<void> {
    const { platform, conversationId } = staleBinding;
    const binding = (await this.#store.findBinding(staleBinding)) ?? staleBinding;
    if (event.seq <= binding.cursor) return;
    const outbound = reach(binding, event.outbound);
    await this.#bookkeep(conversationId, outbound);
    const adapter = this.#adapter(platform);
    const refs: ButtonRef[] = [];
    const make = (ref: Omit<ButtonRef, "token" | "platform" | "conversationId">): string => {
      const token = newToken();
      refs.push({ token, platform, conversationId, ...ref });
      return token;
    };
    const renderRefs: RenderRefs = {
      proposal: (proposalId, decision) => make({ kind: decision, targetId: proposalId }),
      answer: (elicitationId, field, value) => make({ kind: "answer", targetId: elicitationId, field, value }),
      reply: (text) => make({ kind: "reply", targetId: "", value: text }),
    };
    const fromTeam = outbound.type === "text" && outbound.from === "team";
    const config = await this.#port.agentConfig(conversationId);
    const disclosure = disclosureText(config, platform);
    const rendered = adapter.render(outbound, { refs: renderRefs, fromTeam, disclosure, ...(config?.timeZone ? { timeZone: config.timeZone } : {}) });
    if (refs.length) await this.#store.putRefs(refs);
    if (outbound.type === "result") await this.#keepNumberedReplies(conversationId, rendered.warnings, refs);
    if (rendered.messages.length > 0 && adapter.capabilities.disclosure && !binding.disclosed && !fromTeam) {
      const notice = adapter.render({ type: "text", id: `${event.seq}-disclosure`, from: "system", text: disclosure }, { refs: renderRefs });
      await this.#deliver(binding, event.seq, -1, notice.messages, false);
      await this.#store.setDisclosed(binding);
    }
    await this.#deliver(binding, event.seq, 0, rendered.messages, fromTeam);
    await this.#store.setCursor(binding, event.seq);
  }

  /**
   * A file the engine serves at a path of this server goes to the platform at the public address, which the
   * platform fetches it from. Without a public address it cannot be fetched: the customer is told it could
   * not be sent, the team is told why, and the conversation's history records it.
   */
  #reachable(binding: Binding, outbound: Outbound): Outbound {
    if (outbound.type !== "file" || !outbound.url.startsWith("/")) return outbound;
    if (this.#publicUrl) return { ...outbound, url: `${this.#publicUrl}${outbound.url}` };
    const why = `Not sent: the file ${outbound.name} is served by this server, which has no public address for ${binding.platform} to fetch it from (set CAPLO_PUBLIC_URL).`;
    this.#alerts.alert({ platform: binding.platform, conversationId: binding.conversationId, code: "file_unreachable", message: why });
    this.#recordUndelivered(binding.platform, binding.conversationId, why);
    return { type: "text", id: outbound.id, from: "system", text: `The file ${outbound.name} could not be sent here.` };
  }

  /** Keeps what the inbound policy needs to know: where each proposal stands, which question is open. */
  async #bookkeep(conversationId: string, outbound: Outbound): Promise<void> {
    if (outbound.type === "review" || outbound.type === "outcome") {
      await this.#store.setProposalState(conversationId, outbound.proposalId, outbound.state);
      // A conversation has at most one proposal waiting for a decision (the engine starts no second write
      // meanwhile): the latest one proposed is remembered under a key no proposal id can take.
      if (outbound.type === "review" && outbound.state === "proposed") await this.#store.setProposalState(conversationId, LATEST_PROPOSAL_KEY, outbound.proposalId);
    } else if (outbound.type === "question") {
      const field = outbound.fields[0];
      if (outbound.style === "questions" && field?.options && outbound.fields.length === 1) {
        await this.#store.setOpenQuestion(conversationId, { elicitationId: outbound.elicitationId, field: field.name, options: field.options });
      }
    }
  }

  /**
   * A result's reply actions sent as numbered text ("Reply with a number."): kept as the conversation's open
   * choice, so a typed number or label sends that reply. A result without them ends earlier numbered replies;
   * a questions elicitation still open keeps its place (its numbers win).
   */
  async #keepNumberedReplies(conversationId: string, warnings: RenderWarning[], refs: ButtonRef[]): Promise<void> {
    const numbered = warnings.find((w) => w.numbered)?.numbered;
    const open = await this.#store.getOpenQuestion(conversationId);
    if (open && open.kind !== "replies") return;
    const byToken = new Map(refs.map((r) => [r.token, r]));
    const options = (numbered ?? []).flatMap((o) => {
      const ref = byToken.get(o.payload);
      return ref?.kind === "reply" && ref.value !== undefined ? [{ label: o.label, value: ref.value }] : [];
    });
    if (numbered && options.length === numbered.length) {
      await this.#store.setOpenQuestion(conversationId, { kind: "replies", elicitationId: "", field: "", options });
    } else if (open) {
      await this.#store.setOpenQuestion(conversationId, null);
    }
  }

  /** Whether the conversation's latest proposal still waits for the customer's tap. */
  async #proposalWaiting(conversationId: string): Promise<boolean> {
    const latest = await this.#store.getProposalState(conversationId, LATEST_PROPOSAL_KEY);
    return latest !== undefined && (await this.#store.getProposalState(conversationId, latest)) === "proposed";
  }

  /**
   * A reply from the channel itself (a stale button, an unreadable message), not from the engine. It goes
   * after every event the conversation stored before it (the greeting of a conversation the tap opened),
   * behind the automated-assistant notice where the platform needs one, never before them.
   */
  async #notice(binding: Binding, text: string): Promise<void> {
    const seq = -(this.#now() * 1000 + (this.#noticeSeq++ % 1000));
    await this.#port.caughtUp?.(binding.conversationId);
    await this.#inOrder(binding, async () => {
      const adapter = this.#adapter(binding.platform);
      const current = (await this.#store.findBinding(binding)) ?? binding;
      const none = { proposal: () => "", answer: () => "", reply: () => "" };
      if (adapter.capabilities.disclosure && !current.disclosed) {
        const disclosure = disclosureText(await this.#port.agentConfig(binding.conversationId), binding.platform);
        await this.#deliver(current, seq, -1, adapter.render({ type: "text", id: "notice-disclosure", from: "system", text: disclosure }, { refs: none }).messages, false);
        await this.#store.setDisclosed(current);
      }
      await this.#deliver(current, seq, 0, adapter.render({ type: "text", id: "notice", from: "system", text }, { refs: none }).messages, false);
    });
  }

  async #deliver(binding: Binding, seq: number, firstPart: number, messages: unknown[], fromTeam: boolean): Promise<void> {
    const adapter = this.#adapter(binding.platform);
    const age = this.#now() - binding.lastInboundAt;
    const windowOpen = age <= adapter.capabilities.windowMs;
    const mayTag = binding.platform !== "whatsapp" && fromTeam && age <= META_HUMAN_AGENT_WINDOW_MS;
    let alerted = false;
    for (let i = 0; i < messages.length; i++) {
      const part = firstPart + i;
      const done = await this.#store.getOutbox(binding.platform, binding.conversationId, seq, part);
      if (done?.state === "sent") continue;
      const message = messages[i];
      const base = { platform: binding.platform, conversationId: binding.conversationId, seq, part };
      // Sent, but its record failed to store (the store away): recorded now, never sent twice.
      const partKey = `${binding.platform}|${binding.conversationId}|${seq}|${part}`;
      const unrecorded = this.#unrecorded.get(partKey);
      if (unrecorded) {
        await this.#store.recordOutbox(unrecorded);
        this.#unrecorded.delete(partKey);
        continue;
      }
      if (!windowOpen && !mayTag) {
        if (typeof message === "object" && message !== null && (message as { kind?: string }).kind === "action") continue;
        const text =
          binding.platform === "whatsapp"
            ? "Not sent: more than 24 hours since the customer's last message, so WhatsApp allows no free-form reply (Twilio 63016)."
            : "Not sent: more than 24 hours since the customer's last message (outside the standard messaging window).";
        await this.#store.recordOutbox({ ...base, state: "failed", attempts: 0, code: "outside_window", message: text, at: this.#now() });
        if (!alerted) {
          this.#alerts.alert({ platform: binding.platform, conversationId: binding.conversationId, code: "outside_window", message: text });
          this.#recordUndelivered(binding.platform, binding.conversationId, `${text}${quoteOf(message)}`);
        }
        alerted = true;
        continue;
      }
      const { result, attempts } = await sendWithRetry(
        () => adapter.send(binding.externalId, message, { fromTeam, windowOpen, ...(binding.account ? { account: binding.account } : {}) }),
        this.#retry,
        ...(this.#sleep ? [this.#sleep] : []),
      );
      if (result.ok) {
        const record: OutboxRecord = { ...base, state: "sent", attempts, platformId: result.platformId, at: this.#now() };
        this.#unrecorded.set(partKey, record);
        await this.#store.recordOutbox(record);
        this.#unrecorded.delete(partKey);
      } else {
        await this.#store.recordOutbox({ ...base, state: "failed", attempts, code: result.code, message: result.message, at: this.#now() });
        const alert: TeamAlert = { platform: binding.platform, conversationId: binding.conversationId, code: result.code, message: `Not delivered after ${attempts} attempt(s): ${result.message}` };
        this.#alerts.alert(alert);
        const why = result.code === "outside_window" ? "Not delivered: the platform refused it as outside the messaging window" : `Not delivered after ${attempts} attempt(s)`;
        this.#recordUndelivered(binding.platform, binding.conversationId, `${why} (${result.code}${result.platformCode ? ` ${result.platformCode}` : ""}).${quoteOf(message)}`);
      }
    }
  }
}

/** The start of an undelivered message's text, so the team sees which message it was. */
function quoteOf(message: unknown): string {
  const m = message as { body?: unknown; message?: { text?: unknown; attachment?: { payload?: { text?: unknown } } } } | null;
  const text = [m?.body, m?.message?.text, m?.message?.attachment?.payload?.text].find((t): t is string => typeof t === "string" && t.length > 0);
  if (!text) return "";
  return ` Message: "${text.length > 200 ? `${text.slice(0, 199)}…` : text}"`;
}
