// The inbound half of the channel glue: a stored webhook event becomes the conversation's inbound — a message,
// a Confirm or Cancel tap, an answer — decided by the inbound policy and handed to the engine once; delivery
// statuses go to DeliveryStatuses.
import type { ChannelEvent } from "@caplo/adapters/adapter";
import type { Inbound } from "@caplo/shared/messages";
import type { DeliveryStatuses } from "./deliveryStatus.ts";
import { messageOf, type Glue } from "./glue.ts";
import { decideTap, decideText, isTypedConsent, type Decision } from "./inboundPolicy.ts";
import { LATEST_PROPOSAL_KEY, type OutboundSender } from "./outboundSender.ts";
import type { Binding, BindingKey, InboxRow } from "./ports.ts";

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
    const openQuestion = await this.#glue.store.getOpenQuestion(conversationId);

    let decision: Decision;
    if (event.payload !== undefined && (TOKEN_PATTERN.test(event.payload) || event.text === undefined)) {
      const ref = TOKEN_PATTERN.test(event.payload) ? await this.#glue.store.getRef(event.payload) : undefined;
      const proposalState =
        ref && (ref.kind === "confirm" || ref.kind === "decline") ? await this.#glue.store.getProposalState(ref.conversationId, ref.targetId) : undefined;
      decision = decideTap(ref, conversationId, proposalState, openQuestion);
    } else if (event.text !== undefined) {
      decision = decideText(event.text, openQuestion, isTypedConsent(event.text) && (await this.#proposalWaiting(conversationId)));
    } else {
      decision = { kind: "notice", code: "media_unsupported", text: "I can only read text here. Please type your message." };
    }

    // Numbered replies are answered by the customer's next message or not at all: a later "2" means something else.
    if (openQuestion?.kind === "replies" && !(decision.kind === "forward" && decision.closesQuestion)) await this.#glue.store.setOpenQuestion(conversationId, null);
    if (decision.kind === "notice") {
      await this.#sender.notice(binding, decision.text);
      return;
    }
    const inbound = decision.inbound;
    await this.#glue.store.markHanded(platform, event.messageId, JSON.stringify(inbound));
    // Mark the decision before the engine answers, so a second tap meanwhile changes nothing.
    if (inbound.type === "confirm") await this.#glue.store.setProposalState(conversationId, inbound.proposalId, "running");
    if (inbound.type === "decline") await this.#glue.store.setProposalState(conversationId, inbound.proposalId, "declined");
    if (decision.closesQuestion) await this.#glue.store.setOpenQuestion(conversationId, null);
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
      await this.#glue.store.finishInbound(platform, event.messageId, "failed", message);
      this.#glue.alerts.alert({ platform, conversationId, code: "inbound_refused", message: `The engine refused an inbound ${platform} event: ${message}` });
      // The customer is told, in words, that their tap changed nothing.
      if (inbound.type === "confirm" || inbound.type === "decline") {
        if (code === "proposal_expired") await this.#glue.store.setProposalState(conversationId, inbound.proposalId, "expired");
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

  /** Whether the conversation's latest proposal still waits for the customer's tap. */
  async #proposalWaiting(conversationId: string): Promise<boolean> {
    const latest = await this.#glue.store.getProposalState(conversationId, LATEST_PROPOSAL_KEY);
    return latest !== undefined && (await this.#glue.store.getProposalState(conversationId, latest)) === "proposed";
  }
}
