// The inbound half of the channel glue: a stored webhook event becomes the conversation's inbound — a message,
// a Confirm or Cancel tap, an answer — decided by the inbound policy (with where the proposal stands and which
// question is open, as the engine answers) and handed to the engine once; delivery statuses go to DeliveryStatuses.
import type { ChannelEvent } from "@caplo/adapters/adapter";
import type { Inbound } from "@caplo/shared/messages";
import type { DeliveryStatuses } from "./deliveryStatus.ts";
import { messageOf, type Glue } from "./glue.ts";
import { decidedRequestText, decideTap, decideText, isTypedConsent, type Decision } from "./inboundPolicy.ts";
import type { OutboundSender } from "./outboundSender.ts";
import type { Binding, BindingKey, InboxRow, OpenQuestion } from "./ports.ts";

/** Button payloads are `c1.` and 128 random bits: unguessable, and meaningless without the store. */
const TOKEN_PATTERN = /^c1\.[A-Za-z0-9_-]{22}$/;

export class InboundProcessor {
  readonly #glue: Glue;
  readonly #sender: OutboundSender;
  readonly #statuses: DeliveryStatuses;

  constructor(glue: Glue, sender: OutboundSender, statuses: DeliveryStatuses) {
    this.#glue = glue;
    this.#sender = sender;
    this.#statuses = statuses;
  }

  async process(row: InboxRow): Promise<void> {
    try {
      const event = JSON.parse(row.event) as ChannelEvent;
      const skipped = event.kind === "status" ? await this.#statuses.record(row.platform, event) : await this.#message(row, event);
      if (skipped) await this.#glue.store.finishInbound(row.platform, row.messageId, "failed", skipped.unrouted);
      else await this.#glue.store.finishInbound(row.platform, row.messageId, "done");
    } catch (error) {
      const message = messageOf(error);
      await this.#glue.store.finishInbound(row.platform, row.messageId, "failed", message);
      this.#glue.alerts.alert({ platform: row.platform, code: "inbound_failed", message: `An inbound ${row.platform} message could not be processed: ${message}` });
    }
  }

  async #message(row: InboxRow, event: Extract<ChannelEvent, { kind: "message" }>): Promise<{ unrouted: string } | void> {
    const platform = row.platform;
    const key: BindingKey = { platform, account: event.to, externalId: event.from };
    let found = await this.#glue.store.findBinding(key);
    if (!found) {
      const opened = await this.#glue.port.openConversation(platform, event.from, event.profileName ? { displayName: event.profileName } : {}, event.to);
      if ("unanswered" in opened) {
        // No agent answers on this number or page (none configured, or its agent does not list the channel):
        // logged (our account only, never the customer) and not processed.
        this.#glue.log(`caplo channels: ${opened.unanswered}`);
        return { unrouted: opened.unanswered };
      }
      found = await this.#glue.store.bind(key, opened.conversationId, row.receivedAt);
    }
    await this.#glue.store.touchInbound(key, row.receivedAt);
    const binding: Binding = { ...found, lastInboundAt: Math.max(found.lastInboundAt, row.receivedAt) };
    this.#sender.ensureSubscribed(binding);
    const conversationId = binding.conversationId;
    // A replay of a row a crash left unfinished after its hand-off: the same inbound again, decided once;
    // the engine accepts its source id once, so it gets no second turn and the customer no second reply.
    if (row.handed !== undefined) {
      this.#hand(binding, event, JSON.parse(row.handed) as Inbound);
      return;
    }
    const openQuestion = await this.#openQuestion(conversationId);

    let decision: Decision;
    if (event.payload !== undefined && (TOKEN_PATTERN.test(event.payload) || event.text === undefined)) {
      const ref = TOKEN_PATTERN.test(event.payload) ? await this.#glue.store.getRef(event.payload) : undefined;
      // Where the tapped proposal stands is the engine's to say (a button of another conversation is refused first).
      const proposalState =
        ref && (ref.kind === "confirm" || ref.kind === "decline") && ref.conversationId === conversationId ? await this.#proposalState(conversationId, ref.targetId) : undefined;
      decision = decideTap(ref, conversationId, proposalState, openQuestion);
    } else if (event.text !== undefined) {
      decision = decideText(event.text, openQuestion, isTypedConsent(event.text) && (await this.#glue.port.openProposal(conversationId)) !== undefined);
    } else {
      decision = { kind: "notice", code: "media_unsupported", text: "I can only read text here. Please type your message." };
    }

    // Numbered replies are answered by the customer's next message or not at all: a later "2" means something else.
    if (openQuestion?.kind === "replies") await this.#glue.store.setNumberedReplies(conversationId, null);
    if (decision.kind === "notice") {
      await this.#sender.notice(binding, decision.text);
      return;
    }
    const inbound = decision.inbound;
    await this.#glue.store.markHanded(platform, event.messageId, JSON.stringify(inbound));
    this.#hand(binding, event, inbound);
  }

  /** What a tap or a typed number answers: the engine's open question, else the reply actions this channel sent as numbered text. */
  async #openQuestion(conversationId: string): Promise<OpenQuestion | undefined> {
    const asked = await this.#glue.port.openQuestion(conversationId);
    if (asked) return asked;
    const replies = await this.#glue.store.getNumberedReplies(conversationId);
    return replies && { kind: "replies", elicitationId: "", field: "", options: replies };
  }

  /** Where a proposal of the conversation stands for the customer, as the engine answers; undefined when it holds none. */
  async #proposalState(conversationId: string, proposalId: string): Promise<string | undefined> {
    const found = await this.#glue.port.proposal(conversationId, proposalId);
    return found.ok ? found.value.state : undefined;
  }

  /**
   * Hands an inbound to the engine without waiting for the turn to end: a turn may wait for this customer's
   * next tap (a question), which is processed from the inbox meanwhile. A refusal is recorded on the row.
   */
  #hand(binding: Binding, event: Extract<ChannelEvent, { kind: "message" }>, inbound: Inbound): void {
    const { platform, conversationId } = binding;
    // A refusal (a coded value) and a failure to hand it over (the store away) are recorded and told alike.
    const refused = async (code: string, message: string) => {
      if ((inbound.type === "confirm" || inbound.type === "decline") && code === "proposal_not_open") {
        // Another tap decided it while this one was on its way (a double tap): a stale tap, told where the request stands.
        return this.#sender.notice(binding, decidedRequestText(await this.#proposalState(conversationId, inbound.proposalId)));
      }
      await this.#glue.store.finishInbound(platform, event.messageId, "failed", message);
      this.#glue.alerts.alert({ platform, conversationId, code: "inbound_refused", message: `The engine refused an inbound ${platform} event: ${message}` });
      // The customer is told, in words, that their tap changed nothing.
      if (inbound.type === "confirm" || inbound.type === "decline") {
        const why = code === "proposal_expired" ? "has expired; please ask again" : "is no longer waiting for a decision";
        await this.#sender.notice(binding, `That request ${why}. Nothing was changed.`);
      } else if (inbound.type === "answer") {
        await this.#sender.notice(binding, "That answer could not be used. Nothing was changed.");
      }
    };
    const handed = this.#glue.port
      .receive(conversationId, inbound, { channel: platform, externalId: event.from, sourceId: `${platform}:${event.messageId}` })
      .then(
        (result) => (result.ok ? undefined : refused(result.code, `${result.code}: ${result.message}`)),
        (error: unknown) => refused("", messageOf(error)),
      )
      // Recording the refusal may fail too (the store away): told, never an unhandled rejection.
      .catch((error: unknown) => {
        this.#glue.alerts.alert({ platform, conversationId, code: "inbound_failed", message: `Could not record a refused ${platform} event: ${messageOf(error)}` });
      });
    this.#glue.track(handed);
  }
}
