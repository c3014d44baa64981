// The ConversationPort over the engine's facade: a channel customer opens a conversation of the agent on that
// channel, acts through engine.handle as the conversation's owner, is sent every stored event in order, and
// the glue asks the engine where a proposal stands and which question is open (it keeps no copy of either).
import { DEFAULT_WORKSPACE, workspaceRef } from "@caplo/shared";
import type { ChannelCapabilities } from "@caplo/shared/channel";
import { UNDELIVERED_NOTE_PREFIX } from "../engine/engine.ts";
import type { DeliveryRecord } from "../engine/common.ts";
import type { Inbound, Outbound, OutboundOf } from "@caplo/shared/messages";
import type { ChannelActor, ChannelAgentConfig, ConversationEvent, ConversationPort, OpenQuestion, Platform, PortResult, PortValue, Unanswered } from "./ports.ts";

/** What the port needs of the engine: a structural view, so the glue imports no engine internals. */
export interface EngineView {
  openConversation(input: {
    agent: string;
    channel: Platform;
    capabilities: ChannelCapabilities;
    ownerId: string;
    externalId?: string | null;
  }): Promise<{ id: string }>;
  handle(
    conversationId: string,
    ownerId: string,
    inbound: Inbound,
    source?: { sourceId: string },
  ): Promise<{ ok: true } | { ok: false; error: { code: string; path: string; message: string } }>;
  subscribe(conversationId: string, listener: (seq: number) => void): () => void;
  recordUndelivered(conversationId: string, text: string): Promise<{ ok: true } | { ok: false; error: { code: string; message: string } }>;
  /** The team's follow-up list reads undelivered messages from here (optional: a bare engine view may lack it). */
  addUndeliveredSource?(
    source: () => Promise<Array<{ conversationId: string; channel: string; code: string; message: string; at: number }>>,
  ): () => void;
  /** The team API shows each event's delivery statuses from here (optional, as above). */
  addDeliverySource?(source: (conversationId: string) => Promise<DeliveryView[]>): () => void;
  /** The conversation's agent (its name) and workspace (absent: the default one). */
  conversation(conversationId: string): Promise<{ agent: string; workspaceId?: string } | undefined>;
  /** Stored events with seq > after, in order, at most `limit`. */
  eventsAfter(conversationId: string, after: number, limit: number): Promise<Array<{ seq: number; message: Outbound }>>;
  pruneInboundSources(before: number): Promise<number>;
  /** A proposal of the conversation and where it stands as the customer is told it; refused as a value for another. */
  proposal(conversationId: string, proposalId: string): Promise<{ ok: true; value: { state: string } } | { ok: false; error: { code: string; message: string } }>;
  openProposal(conversationId: string): Promise<{ proposalId: string } | undefined>;
  /** The question a tool of the conversation waits for (on this node), as shown to the customer. */
  openQuestion(conversationId: string): Pick<OutboundOf<"question">, "elicitationId" | "style" | "fields"> | undefined;
}

/** Events read per catch-up (more wait for the next notice or catch-up). */
const CATCH_UP_EVENTS = 1000;

const portResult = (result: { ok: true } | { ok: false; error: { code: string; message: string } }): PortResult =>
  result.ok ? result : { ok: false, code: result.error.code, message: result.error.message };

/** One part of an outbound event as sent on a channel, with its delivery statuses: the engine's own record type. */
export type DeliveryView = DeliveryRecord;

/** A note recording that a message never reached the customer: for the team, never sent on a channel. */
export function isUndeliveredNote(message: Outbound): boolean {
  return message.type === "text" && message.from === "system" && message.id.startsWith(UNDELIVERED_NOTE_PREFIX);
}

export interface EnginePortOptions {
  engine: EngineView;
  /** The agent (its reference, agentRef) that answers on our `account` (number, page, Instagram account) of a platform; undefined: none. */
  agentFor: (platform: Platform, account?: string) => string | undefined;
  capabilities: (platform: Platform) => ChannelCapabilities;
  /** The agent.yaml of an agent the server serves (by reference: its current release): which channels it lists, and more. */
  agentConfig: (agent: string) => ChannelAgentConfig | undefined;
  /** Pause before reading a conversation's events again after the read failed (default 1 s). */
  catchUpRetryMs?: number;
  /** Operator log lines; console.warn by default. */
  log?: (line: string) => void;
}

/** The owner of a channel conversation: the customer's platform identity, the only one whose taps count. */
export function channelOwner(platform: Platform, externalId: string): string {
  return `${platform}:${externalId}`;
}

export class EnginePort implements ConversationPort {
  readonly #options: EnginePortOptions;
  /** The agent of each conversation seen (a conversation keeps its agent). */
  readonly #agents = new Map<string, string>();
  /** Each subscription's catch-up: read the store now, resolved once what it read was handed on. */
  readonly #catchUps = new Map<string, () => Promise<void>>();

  constructor(options: EnginePortOptions) {
    this.#options = options;
  }

  async openConversation(channel: Platform, externalId: string, _subject: { displayName?: string } = {}, account?: string): Promise<{ conversationId: string } | Unanswered> {
    const agent = this.#options.agentFor(channel, account);
    const variable = `CAPLO_${channel.toUpperCase()}_AGENTS`;
    if (agent === undefined) return { unanswered: `no agent is configured for ${channel} account ${account ?? "(unknown)"}; the message was not processed (see ${variable})` };
    // An agent answers only on the channels its agent.yaml lists.
    const config = this.#options.agentConfig(agent);
    if (!config?.channels[channel]) {
      return { unanswered: `agent ${agent} does not list ${channel} under channels in its agent.yaml; the message to ${channel} account ${account ?? "(unknown)"} was not processed (add "${channel}: {}" under channels and publish the agent again, or answer this account with another agent: ${variable})` };
    }
    const conversation = await this.#options.engine.openConversation({
      agent,
      channel,
      capabilities: this.#options.capabilities(channel),
      ownerId: channelOwner(channel, externalId),
      externalId,
    });
    this.#agents.set(conversation.id, agent);
    return { conversationId: conversation.id };
  }

  async agentConfig(conversationId: string): Promise<ChannelAgentConfig | undefined> {
    let agent = this.#agents.get(conversationId);
    if (agent === undefined) {
      const conversation = await this.#options.engine.conversation(conversationId);
      agent = conversation && workspaceRef(conversation.workspaceId ?? DEFAULT_WORKSPACE, conversation.agent);
      if (agent !== undefined) this.#agents.set(conversationId, agent);
    }
    return agent === undefined ? undefined : this.#options.agentConfig(agent);
  }

  async receive(conversationId: string, inbound: Inbound, actor: ChannelActor): Promise<PortResult> {
    return portResult(await this.#options.engine.handle(conversationId, channelOwner(actor.channel, actor.externalId), inbound, { sourceId: actor.sourceId }));
  }

  async recordUndelivered(conversationId: string, text: string): Promise<PortResult> {
    return portResult(await this.#options.engine.recordUndelivered(conversationId, text));
  }

  async caughtUp(conversationId: string): Promise<void> {
    await this.#catchUps.get(conversationId)?.();
  }

  pruneSources(before: number): Promise<number> {
    return this.#options.engine.pruneInboundSources(before);
  }

  async proposal(conversationId: string, proposalId: string): Promise<PortValue<{ state: string }>> {
    const found = await this.#options.engine.proposal(conversationId, proposalId);
    return found.ok ? { ok: true, value: { state: found.value.state } } : { ok: false, code: found.error.code, message: found.error.message };
  }

  openProposal(conversationId: string): Promise<{ proposalId: string } | undefined> {
    return this.#options.engine.openProposal(conversationId);
  }

  /** The engine's open question when a chat can answer it by a tap or a typed number or label: a questions elicitation of one field with options. */
  async openQuestion(conversationId: string): Promise<OpenQuestion | undefined> {
    const question = this.#options.engine.openQuestion(conversationId);
    const field = question?.fields[0];
    if (!question || question.style !== "questions" || question.fields.length !== 1 || !field?.options) return undefined;
    return { elicitationId: question.elicitationId, field: field.name, options: field.options.map((option) => ({ value: option.value, label: option.label })) };
  }

  subscribe(conversationId: string, afterSeq: number, listener: (event: ConversationEvent) => void): () => void {
    const { engine } = this.#options;
    let cursor = afterSeq;
    let chain = Promise.resolve();
    let closed = false;
    let retry: NodeJS.Timeout | undefined;
    const log = this.#options.log ?? ((line: string) => console.warn(line));
    // Every notice (and the subscription itself) catches up from the store, so nothing is missed or repeated.
    // A failed read (the store away) is logged and read again after a pause: the chain stays usable and the
    // events not yet handed on are read again from the cursor.
    const catchUp = () => {
      chain = chain
        .then(async () => {
          if (closed) return;
          for (const event of await engine.eventsAfter(conversationId, cursor, CATCH_UP_EVENTS)) {
            if (event.seq <= cursor) continue;
            cursor = event.seq;
            if (isUndeliveredNote(event.message)) continue;
            listener({ seq: event.seq, outbound: event.message });
          }
        })
        .catch((error: unknown) => {
          if (closed || retry) return;
          const pause = this.#options.catchUpRetryMs ?? 1000;
          log(`caplo channels: reading the events of ${conversationId} failed (${String((error as Error)?.message ?? error)}); reading again in ${pause} ms`);
          retry = setTimeout(() => {
            retry = undefined;
            catchUp();
          }, pause);
          retry.unref?.();
        });
    };
    const unsubscribe = engine.subscribe(conversationId, catchUp);
    catchUp();
    const settled = () => {
      catchUp();
      return chain;
    };
    this.#catchUps.set(conversationId, settled);
    return () => {
      closed = true;
      if (retry) clearTimeout(retry);
      if (this.#catchUps.get(conversationId) === settled) this.#catchUps.delete(conversationId);
      unsubscribe();
    };
  }
}
