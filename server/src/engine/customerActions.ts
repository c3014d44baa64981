// The customer's side of a conversation: opening one, what its owner does in it (a message, a confirm or
// decline, an answer, stopping a reply, rating one) checked against the conversation's owner and accepted
// once per platform event, and what waits for the customer there (the open proposal, a proposal's state as
// they are told it, the open question). Refusals are values with stable codes.
import type { Inbound, OutboundOf, ProposalState, Rating } from "@caplo/shared";
import type { ConversationRecord } from "../store/store.ts";
import { fail, randomId, type EngineResult, type EngineValue, type InboundSource, type OpenConversation } from "./common.ts";
import { EnginePart } from "./core.ts";
import type { WriteState } from "./ledger.ts";
import { workspaceOf } from "./release.ts";

/** Recent conversations whose owner is remembered (an owner never changes). */
const RECENT_OWNERS = 10_000;

/** Where a proposal stands as the customer is told it (the ledger's `confirmed` is shown running). */
export function shownState(state: WriteState): ProposalState {
  return state === "confirmed" ? "running" : state;
}

/** A proposal of the conversation and where it stands for the customer. */
export type ProposalView = { proposalId: string; state: ProposalState };
/** A question a running tool asked the customer and still waits for on this node: the question as shown. */
export type OpenQuestionView = Pick<OutboundOf<"question">, "elicitationId" | "style" | "message" | "fields">;

export class CustomerActions extends EnginePart {
  /** Conversation id → owner id of recent conversations. */
  private readonly owners = new Map<string, string>();

  async open(input: OpenConversation): Promise<ConversationRecord> {
    const release = this.core.options.releases.get(input.agent);
    if (!release) throw new Error(`openConversation: no release for agent ${input.agent}`);
    const conversation = await this.core.store.createConversation({
      id: randomId("c", 16),
      workspaceId: workspaceOf(release),
      agent: release.agent,
      releaseId: release.id,
      channel: input.channel,
      externalId: input.externalId ?? null,
      resumeHash: input.resumeHash ?? null,
      ownerId: input.ownerId,
      subject: input.subject ?? null,
      capabilities: input.capabilities,
      createdAt: this.core.now(),
    });
    this.rememberOwner(conversation); // its first message need not read it back
    if (release.config.greeting) await this.core.conversations.emit(conversation.id, { type: "text", id: randomId("m"), from: "agent", text: release.config.greeting });
    return conversation;
  }

  /** One customer action (see Engine.handle): only the owner acts; a platform event is accepted once. */
  async handle(conversationId: string, ownerId: string, inbound: Inbound, source?: InboundSource, recorded?: () => void): Promise<EngineResult> {
    const refused = await this.refuseNonOwner(conversationId, ownerId);
    if (refused) return refused;
    // A platform event (MessageSid, mid) is accepted once, atomically in the store, right before it acts:
    // its redelivery, or its replay after a crash, gets no second turn.
    const once = (act: () => Promise<EngineResult>) => async (): Promise<EngineResult> => {
      if (source?.sourceId !== undefined && !(await this.core.store.claimInboundSource(source.sourceId, conversationId, this.core.now()))) {
        this.core.log("info", "inbound event already accepted; not processed again", { conversationId, sourceId: source.sourceId });
        return { ok: true };
      }
      return act();
    };
    switch (inbound.type) {
      case "answer":
        return once(() => this.core.elicitations.answer(conversationId, inbound))();
      case "message":
        return this.core.serial(conversationId, once(() => this.message(conversationId, inbound.text, source?.resumeHash, recorded)));
      case "confirm":
      case "decline":
        return this.core.serial(conversationId, once(() => this.core.writes.decideProposal(conversationId, ownerId, inbound, recorded)));
    }
  }

  private async message(conversationId: string, text: string, resumeHash: string | undefined, recorded: (() => void) | undefined): Promise<EngineResult> {
    // The event and the transcript entry in one transaction, which also reads the conversation as it now
    // stands and records the turn this node owes the message (a restart or a survivor runs it if this dies),
    // and, from a widget connection, checks its resume token is still the conversation's.
    const batch = { events: [{ type: "text", id: randomId("m"), from: "customer", text } as const], transcript: [{ role: "user", content: text } as const], owedBy: this.core.nodeId };
    const stored = resumeHash !== undefined ? await this.core.conversations.record(conversationId, { ...batch, resumeHash }) : await this.core.conversations.record(conversationId, batch);
    if (!stored) return fail("resume_rotated", "", "this conversation's resume token was replaced (the visitor signed in); resume with the new token");
    recorded?.();
    const { conversation, transcript } = stored;
    const seq = transcript[0]!.seq;
    // The turn's last append clears what it owes; a turn that ended by throwing (the store away) stays owed,
    // for a restart or a survivor. The team holds the conversation: the agent stays silent, nothing is owed.
    if (!conversation.handoff) await this.core.turns.runTurn(conversation, true, seq);
    else await this.core.store.finishTurn(conversationId, this.core.nodeId, seq);
    return { ok: true };
  }

  /** The owner stops the reply being written: the text so far is stored as the reply. */
  async stopReply(conversationId: string, ownerId: string): Promise<EngineResult> {
    const refused = await this.refuseNonOwner(conversationId, ownerId);
    if (refused) return refused;
    this.core.replies.stop(conversationId);
    return { ok: true };
  }

  /** The owner rates one of the agent's replies (an agent's text event), or takes the rating back with `null`. */
  async rate(conversationId: string, ownerId: string, seq: number, rating: Rating | null): Promise<EngineResult> {
    const refused = await this.refuseNonOwner(conversationId, ownerId);
    if (refused) return refused;
    const [event] = await this.core.store.listEvents(conversationId, seq - 1, 1);
    if (!event || event.seq !== seq || event.message.type !== "text" || event.message.from !== "agent") {
      return fail("not_rateable", "seq", `event ${seq} is not one of the agent's replies in this conversation`);
    }
    await this.core.store.rateEvent(conversationId, seq, rating, this.core.now());
    return { ok: true };
  }

  /** A proposal of this conversation and where it stands for the customer; proposal_not_found for any other. */
  async proposal(conversationId: string, proposalId: string): Promise<EngineValue<ProposalView>> {
    const write = await this.core.store.getWrite(proposalId);
    // A proposal of another conversation is not visible here: refused exactly like a missing one.
    if (!write || write.conversationId !== conversationId) return fail("proposal_not_found", "proposalId", "no such proposal in this conversation");
    return { ok: true, value: { proposalId: write.id, state: shownState(write.state) } };
  }

  /** The proposal waiting for the customer's decision (a conversation holds one at most), if any. */
  async openProposal(conversationId: string): Promise<ProposalView | undefined> {
    const waiting = (await this.core.store.listWrites(conversationId)).findLast((write) => write.state === "proposed");
    return waiting && { proposalId: waiting.id, state: "proposed" };
  }

  /** The question a running tool asked in this conversation and waits for on this node, if any. */
  openQuestion(conversationId: string): OpenQuestionView | undefined {
    return this.core.elicitations.open(conversationId);
  }

  /** conversation_not_found or not_conversation_owner, or undefined when `ownerId` owns the conversation. */
  private async refuseNonOwner(conversationId: string, ownerId: string): Promise<EngineResult | undefined> {
    const owner = await this.ownerOf(conversationId);
    if (owner === undefined) return fail("conversation_not_found", "conversationId", "no such conversation");
    if (owner !== ownerId) return fail("not_conversation_owner", "", "this connection does not own the conversation");
    return undefined;
  }

  /** A conversation's owner (it never changes): remembered for recent conversations, else read from the store. */
  private async ownerOf(conversationId: string): Promise<string | undefined> {
    const known = this.owners.get(conversationId);
    if (known !== undefined) return known;
    const conversation = await this.core.store.getConversation(conversationId);
    if (!conversation) return undefined;
    this.rememberOwner(conversation);
    return conversation.ownerId;
  }

  /** Remember a conversation's owner (opened or read here), so its owner's actions need not read it. */
  rememberOwner(conversation: Pick<ConversationRecord, "id" | "ownerId">): void {
    this.owners.set(conversation.id, conversation.ownerId);
    if (this.owners.size > RECENT_OWNERS) this.owners.delete(this.owners.keys().next().value!);
  }
}
