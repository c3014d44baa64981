// The outbound half of the channel glue: each conversation's outbound events are rendered for its platform
// and sent strictly in order, keeping the 24-hour window, retrying what can be retried and recording what
// cannot be delivered; the channel's own replies (a stale button) go through the same order.
import { randomBytes } from "node:crypto";
import type { RenderRefs, RenderWarning } from "@caplo/adapters/adapter";
import { META_HUMAN_AGENT_WINDOW_MS } from "@caplo/shared/channels";
import type { Outbound } from "@caplo/shared/messages";
import { disclosureText } from "./disclosure.ts";
import { messageOf, type Glue } from "./glue.ts";
import type { Binding, ButtonRef, ConversationEvent, OutboxRecord, TeamAlert } from "./ports.ts";
import { sendWithRetry, type RetryPolicy } from "./retry.ts";

/** Attempts at handling one outbound event while the store fails (pauses as for processing: 0.5 s doubling). */
const OUTBOUND_ATTEMPTS = 5;

export function newToken(): string {
  return `c1.${randomBytes(16).toString("base64url")}`;
}

export interface OutboundOptions {
  retry: RetryPolicy;
  sleep: ((ms: number) => Promise<void>) | undefined;
  /** This server's public https address, without a trailing slash (files served here are sent under it). */
  publicUrl: string | undefined;
  /** The first pause before an outbound event is handled again after the store failed. */
  retryFirstMs: number;
}

export class OutboundSender {
  readonly #glue: Glue;
  readonly #options: OutboundOptions;
  readonly #subscriptions = new Map<string, () => void>();
  readonly #chains = new Map<string, Promise<void>>();
  #noticeSeq = 0;
  /** Parts sent whose outbox record could not be stored yet, by platform|conversation|seq|part. */
  readonly #unrecorded = new Map<string, OutboxRecord>();

  constructor(glue: Glue, options: OutboundOptions) {
    this.#glue = glue;
    this.#options = options;
  }

  /** The conversations' send queues still running. */
  pending(): Array<Promise<void>> {
    return [...this.#chains.values()];
  }

  unsubscribeAll(): void {
    for (const unsubscribe of this.#subscriptions.values()) unsubscribe();
    this.#subscriptions.clear();
  }

  ensureSubscribed(binding: Binding): void {
    if (this.#subscriptions.has(binding.conversationId)) return;
    const unsubscribe = this.#glue.port.subscribe(binding.conversationId, binding.cursor, (event) => this.#enqueue(binding, event));
    this.#subscriptions.set(binding.conversationId, unsubscribe);
  }

  /** One conversation's outbound events are sent strictly in order. */
  #enqueue(binding: Binding, event: ConversationEvent): void {
    void this.inOrder(binding, () => this.#outboundRetried(binding, event));
  }

  /** Runs `task` after everything queued for the conversation's customer; a failure is told to the team. */
  inOrder(binding: Binding, task: () => Promise<void>): Promise<void> {
    const key = binding.conversationId;
    const previous = this.#chains.get(key) ?? Promise.resolve();
    const next = previous
      .then(task)
      .catch((error) => {
        this.#glue.alerts.alert({ platform: binding.platform, conversationId: key, code: "send_failed", message: messageOf(error) });
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
        if (attempt >= OUTBOUND_ATTEMPTS || this.#glue.closed()) throw error;
        const pause = this.#options.retryFirstMs * 2 ** (attempt - 1);
        this.#glue.log(`caplo channels: handling event ${event.seq} of ${binding.conversationId} failed (${messageOf(error)}); again in ${pause} ms`);
        await new Promise((resolve) => setTimeout(resolve, pause).unref?.());
      }
    }
  }

  async #outbound(staleBinding: Binding, event: ConversationEvent, reach: (binding: Binding, outbound: Outbound) => Outbound): Promise<void> {
    const { platform, conversationId } = staleBinding;
    const binding = (await this.#glue.store.findBinding(staleBinding)) ?? staleBinding;
    if (event.seq <= binding.cursor) return;
    const outbound = reach(binding, event.outbound);
    // A question's numbers (the engine holds it open) replace earlier numbered replies.
    if (outbound.type === "question") await this.#glue.store.setNumberedReplies(conversationId, null);
    const adapter = this.#glue.adapter(platform);
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
    const config = await this.#glue.port.agentConfig(conversationId);
    const disclosure = disclosureText(config, platform);
    const rendered = adapter.render(outbound, { refs: renderRefs, fromTeam, disclosure, ...(config?.timeZone ? { timeZone: config.timeZone } : {}) });
    if (refs.length) await this.#glue.store.putRefs(refs);
    if (outbound.type === "result") await this.#keepNumberedReplies(conversationId, rendered.warnings, refs);
    if (rendered.messages.length > 0 && adapter.capabilities.disclosure && !binding.disclosed && !fromTeam) {
      const notice = adapter.render({ type: "text", id: `${event.seq}-disclosure`, from: "system", text: disclosure }, { refs: renderRefs });
      await this.#deliver(binding, event.seq, -1, notice.messages, false);
      await this.#glue.store.setDisclosed(binding);
    }
    await this.#deliver(binding, event.seq, 0, rendered.messages, fromTeam);
    await this.#glue.store.setCursor(binding, event.seq);
  }

  /**
   * A file the engine serves at a path of this server goes to the platform at the public address, which the
   * platform fetches it from. Without a public address it cannot be fetched: the customer is told it could
   * not be sent, the team is told why, and the conversation's history records it.
   */
  #reachable(binding: Binding, outbound: Outbound): Outbound {
    if (outbound.type !== "file" || !outbound.url.startsWith("/")) return outbound;
    if (this.#options.publicUrl) return { ...outbound, url: `${this.#options.publicUrl}${outbound.url}` };
    const why = `Not sent: the file ${outbound.name} is served by this server, which has no public address for ${binding.platform} to fetch it from (set CAPLO_PUBLIC_URL).`;
    this.#glue.alerts.alert({ platform: binding.platform, conversationId: binding.conversationId, code: "file_unreachable", message: why });
    this.#glue.recordUndelivered(binding.platform, binding.conversationId, why);
    return { type: "text", id: outbound.id, from: "system", text: `The file ${outbound.name} could not be sent here.` };
  }

  /**
   * A result's reply actions sent as numbered text ("Reply with a number."): kept as the conversation's open
   * choice, so a typed number or label sends that reply. A result without them ends earlier numbered replies;
   * a question the engine holds open keeps its place (its numbers win).
   */
  async #keepNumberedReplies(conversationId: string, warnings: RenderWarning[], refs: ButtonRef[]): Promise<void> {
    if (await this.#glue.port.openQuestion(conversationId)) return;
    const numbered = warnings.find((w) => w.numbered)?.numbered;
    const byToken = new Map(refs.map((r) => [r.token, r]));
    const options = (numbered ?? []).flatMap((o) => {
      const ref = byToken.get(o.payload);
      return ref?.kind === "reply" && ref.value !== undefined ? [{ label: o.label, value: ref.value }] : [];
    });
    await this.#glue.store.setNumberedReplies(conversationId, numbered && options.length === numbered.length ? options : null);
  }

  /**
   * A reply from the channel itself (a stale button, an unreadable message), not from the engine. It goes
   * after every event the conversation stored before it (the greeting of a conversation the tap opened),
   * behind the automated-assistant notice where the platform needs one, never before them.
   */
  async notice(binding: Binding, text: string): Promise<void> {
    const seq = -(this.#glue.now() * 1000 + (this.#noticeSeq++ % 1000));
    await this.#glue.port.caughtUp?.(binding.conversationId);
    await this.inOrder(binding, async () => {
      const adapter = this.#glue.adapter(binding.platform);
      const current = (await this.#glue.store.findBinding(binding)) ?? binding;
      const none = { proposal: () => "", answer: () => "", reply: () => "" };
      if (adapter.capabilities.disclosure && !current.disclosed) {
        const disclosure = disclosureText(await this.#glue.port.agentConfig(binding.conversationId), binding.platform);
        await this.#deliver(current, seq, -1, adapter.render({ type: "text", id: "notice-disclosure", from: "system", text: disclosure }, { refs: none }).messages, false);
        await this.#glue.store.setDisclosed(current);
      }
      await this.#deliver(current, seq, 0, adapter.render({ type: "text", id: "notice", from: "system", text }, { refs: none }).messages, false);
    });
  }

  async #deliver(binding: Binding, seq: number, firstPart: number, messages: unknown[], fromTeam: boolean): Promise<void> {
    const adapter = this.#glue.adapter(binding.platform);
    const age = this.#glue.now() - binding.lastInboundAt;
    const windowOpen = age <= adapter.capabilities.windowMs;
    const mayTag = binding.platform !== "whatsapp" && fromTeam && age <= META_HUMAN_AGENT_WINDOW_MS;
    let alerted = false;
    let refusedForWindow = false;
    for (let i = 0; i < messages.length; i++) {
      const part = firstPart + i;
      const done = await this.#glue.store.getOutbox(binding.platform, binding.conversationId, seq, part);
      if (done?.state === "sent") continue;
      const message = messages[i];
      const base = { platform: binding.platform, conversationId: binding.conversationId, seq, part };
      // Sent, but its record failed to store (the store away): recorded now, never sent twice.
      const partKey = `${binding.platform}|${binding.conversationId}|${seq}|${part}`;
      const unrecorded = this.#unrecorded.get(partKey);
      if (unrecorded) {
        await this.#glue.store.recordOutbox(unrecorded);
        this.#unrecorded.delete(partKey);
        continue;
      }
      if (!windowOpen && !mayTag) {
        if (isAction(message)) continue;
        const text =
          binding.platform === "whatsapp"
            ? "Not sent: more than 24 hours since the customer's last message, so WhatsApp allows no free-form reply (Twilio 63016)."
            : "Not sent: more than 24 hours since the customer's last message (outside the standard messaging window).";
        await this.#glue.store.recordOutbox({ ...base, state: "failed", attempts: 0, code: "outside_window", message: text, at: this.#glue.now() });
        if (!alerted) {
          this.#glue.alerts.alert({ platform: binding.platform, conversationId: binding.conversationId, code: "outside_window", message: text });
          this.#glue.recordUndelivered(binding.platform, binding.conversationId, `${text}${quoteOf(message)}`);
        }
        alerted = true;
        refusedForWindow = true;
        continue;
      }
      const started = this.#glue.now();
      const { result, attempts } = await sendWithRetry(
        () => adapter.send(binding.externalId, message, { fromTeam, windowOpen, ...(binding.account ? { account: binding.account } : {}) }),
        this.#options.retry,
        ...(this.#options.sleep ? [this.#options.sleep] : []),
      );
      if (result.ok) {
        // `at` is when the send began: a Meta read watermark covers every message sent at or before it.
        const record: OutboxRecord = { ...base, state: "sent", attempts, platformId: result.platformId, at: started };
        this.#unrecorded.set(partKey, record);
        await this.#glue.store.recordOutbox(record);
        this.#unrecorded.delete(partKey);
        // A typing indicator is nothing whose delivery is reported.
        if (!isAction(message) && result.platformId) await this.#glue.store.recordStatus(binding.platform, result.platformId, { status: result.status ?? "sent", at: this.#glue.now() });
      } else {
        if (result.code === "outside_window") refusedForWindow = true;
        await this.#glue.store.recordOutbox({ ...base, state: "failed", attempts, code: result.code, message: result.message, at: this.#glue.now() });
        const alert: TeamAlert = { platform: binding.platform, conversationId: binding.conversationId, code: result.code, message: `Not delivered after ${attempts} attempt(s): ${result.message}` };
        this.#glue.alerts.alert(alert);
        const why = result.code === "outside_window" ? "Not delivered: the platform refused it as outside the messaging window" : `Not delivered after ${attempts} attempt(s)`;
        this.#glue.recordUndelivered(binding.platform, binding.conversationId, `${why} (${result.code}${result.platformCode ? ` ${result.platformCode}` : ""}).${quoteOf(message)}`);
      }
    }
    if (refusedForWindow) await this.sendOutsideWindowTemplate(binding, seq);
  }

  /**
   * The 24-hour window refused a reply (our own check, the platform's refusal, or a status callback with
   * 63016): where the agent declares an approved template for the channel (agent.yaml
   * `channels.whatsapp.outsideWindowTemplate`), that template goes out instead — once since the customer's
   * last message, however many replies the window refuses meanwhile — so the customer can write back and
   * reopen the window. It is kept as part TEMPLATE_PART of the refused event, and the team is told.
   * Call it inside the conversation's send order (inOrder).
   */
  async sendOutsideWindowTemplate(staleBinding: Binding, seq: number): Promise<void> {
    const { platform, conversationId } = staleBinding;
    const adapter = this.#glue.adapter(platform);
    if (!adapter.sendTemplate) return;
    const template = (await this.#glue.port.agentConfig(conversationId))?.channels[platform]?.outsideWindowTemplate;
    if (!template) return;
    const binding = (await this.#glue.store.findBinding(staleBinding)) ?? staleBinding;
    const sentSince = (await this.#glue.store.listOutbox(conversationId)).some((r) => r.part === TEMPLATE_PART && r.state === "sent" && r.at >= binding.lastInboundAt);
    if (sentSince) return;
    // On PostgreSQL this claims the part for this node: another node subscribed to the conversation skips it.
    if (await this.#glue.store.getOutbox(platform, conversationId, seq, TEMPLATE_PART)) return;
    const base = { platform, conversationId, seq, part: TEMPLATE_PART };
    const started = this.#glue.now();
    const { result, attempts } = await sendWithRetry(
      () => adapter.sendTemplate!(binding.externalId, template, { fromTeam: false, windowOpen: false, ...(binding.account ? { account: binding.account } : {}) }),
      this.#options.retry,
      ...(this.#options.sleep ? [this.#options.sleep] : []),
    );
    if (result.ok) {
      const message = `Sent the approved template ${template.contentSid} instead, so the customer can write back and reopen the 24-hour window.`;
      await this.#glue.store.recordOutbox({ ...base, state: "sent", attempts, code: "outside_window_template", message, platformId: result.platformId, at: started });
      await this.#glue.store.recordStatus(platform, result.platformId, { status: result.status ?? "sent", at: this.#glue.now() });
      this.#glue.alerts.alert({ platform, conversationId, code: "outside_window_template", message });
    } else {
      const message = `The approved template ${template.contentSid} could not be sent either (${result.code}${result.platformCode ? ` ${result.platformCode}` : ""}): ${result.message}`;
      await this.#glue.store.recordOutbox({ ...base, state: "failed", attempts, code: "template_failed", message, at: this.#glue.now() });
      this.#glue.alerts.alert({ platform, conversationId, code: "template_failed", message });
    }
  }
}

/** The part of a refused event that the outside-window template is kept as (the disclosure is -1, messages 0 on). */
export const TEMPLATE_PART = -2;

function isAction(message: unknown): boolean {
  return typeof message === "object" && message !== null && (message as { kind?: string }).kind === "action";
}

/** The start of an undelivered message's text, so the team sees which message it was. */
function quoteOf(message: unknown): string {
  const m = message as { body?: unknown; message?: { text?: unknown; attachment?: { payload?: { text?: unknown } } } } | null;
  const text = [m?.body, m?.message?.text, m?.message?.attachment?.payload?.text].find((t): t is string => typeof t === "string" && t.length > 0);
  if (!text) return "";
  return ` Message: "${text.length > 200 ? `${text.slice(0, 199)}…` : text}"`;
}
