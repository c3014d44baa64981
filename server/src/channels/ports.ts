// The seams of the channel glue: what it needs from the engine (ConversationPort: conversations, hand-overs,
// events, and what waits for the customer — the engine's, never copied here), where it keeps its own durable
// state (InboxStore), and whom it tells when a message cannot reach a customer (TeamAlerts).
import type { ChannelKind } from "@caplo/shared/channel";
import type { Inbound, Outbound } from "@caplo/shared/messages";

export type Platform = Exclude<ChannelKind, "web">;

/** Who did something: the customer on a platform, and the platform event it came from (for idempotency). */
export interface ChannelActor {
  channel: Platform;
  externalId: string;
  /** `platform:messageId`: the same for a redelivery, so the engine can refuse a repeat too. */
  sourceId: string;
}

export interface ConversationEvent {
  seq: number;
  outbound: Outbound;
}

/** An approved WhatsApp template (Twilio Content SID) sent instead of a reply the 24-hour window refuses. */
export interface OutsideWindowTemplate {
  contentSid: string;
  variables?: Record<string, string>;
}

/** What the channels read of an agent's agent.yaml (its current release). */
export interface ChannelAgentConfig {
  /** The channels the agent answers on: a messaging platform not listed here is not answered. */
  channels: Partial<Record<ChannelKind, { handoff?: { queue: string }; outsideWindowTemplate?: OutsideWindowTemplate } | undefined>>;
  /** IANA time zone times are written in for customers (agent.yaml `timeZone`), UTC when absent. */
  timeZone?: string;
  /** How a customer reaches a person where the channel has no handoff destination (agent.yaml `contact`). */
  contact?: string;
  locale?: string;
  /** The shop's websites (the widget's origins): an https one is where a customer is pointed to reach the shop. */
  origins?: string[];
}

/** Why an inbound was not answered: no agent for the account, or an agent that does not list the channel. */
export interface Unanswered {
  unanswered: string;
}

/** What the engine answered to a hand-over: done, or refused with a stable code (an error as a value). */
export type PortResult = { ok: true } | { ok: false; code: string; message: string };
/** What the engine answered to a question: the value, or a refusal with a stable code. */
export type PortValue<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

/** The engine as the channels see it. The engine never imports a channel; the channel glue imports only this. */
export interface ConversationPort {
  /**
   * Opens a conversation with the agent that answers on our `account` (a number, page or Instagram account),
   * or says why nobody answers there (no agent configured for it, or its agent does not list the channel).
   */
  openConversation(channel: Platform, externalId: string, subject: { displayName?: string }, account?: string): Promise<{ conversationId: string } | Unanswered>;
  /** The agent.yaml settings of the conversation's agent, for rendering and sending; undefined when unknown. */
  agentConfig(conversationId: string): Promise<ChannelAgentConfig | undefined>;
  /** Hands one inbound event over; the engine accepts each `actor.sourceId` once (a replay gets no second turn). */
  receive(conversationId: string, inbound: Inbound, actor: ChannelActor): Promise<PortResult>;
  /** Calls `listener` for every outbound event after `afterSeq`, in order, now and later; returns unsubscribe. */
  subscribe(conversationId: string, afterSeq: number, listener: (event: ConversationEvent) => void): () => void;
  /**
   * Resolves once every event the conversation has stored so far has been handed to its listener (a reply
   * of the channel itself, such as a refusal, then goes after the greeting it must not overtake).
   */
  caughtUp?(conversationId: string): Promise<void>;
  /** Records in the conversation's history, for the team and never for the customer, that a message did not reach them. */
  recordUndelivered(conversationId: string, text: string): Promise<PortResult>;
  /** Retention: forgets the engine's accepted source ids from before `before`; returns how many. */
  pruneSources(before: number): Promise<number>;
  /**
   * Where a proposal of the conversation stands as the customer is told it (proposed, running, applied,
   * declined...), from the engine's write ledger; refused (proposal_not_found) for one it does not hold.
   */
  proposal(conversationId: string, proposalId: string): Promise<PortValue<{ state: string }>>;
  /** The proposal waiting for the customer's decision (typed consent is answered by the channel then), if any. */
  openProposal(conversationId: string): Promise<{ proposalId: string } | undefined>;
  /** The question the conversation's tool waits for, when a typed number or label or a tap can answer it (one field with options). */
  openQuestion(conversationId: string): Promise<OpenQuestion | undefined>;
}

export interface TeamAlert {
  platform: Platform;
  conversationId?: string;
  code: string;
  message: string;
}

/** How the team learns that a customer was not reached (outside the window, a permanent send failure). */
export interface TeamAlerts {
  alert(alert: TeamAlert): void;
}

export type InboxState = "received" | "processing" | "done" | "failed";

export interface InboxRow {
  platform: Platform;
  messageId: string;
  /** The parsed channel event, as JSON. */
  event: string;
  receivedAt: number;
  state: InboxState;
  error?: string;
  /** The inbound decided for it and handed to the engine (JSON): a replay hands exactly this again. */
  handed?: string;
}

/** Which conversation an inbound belongs to: the customer, on a platform, writing to one of our accounts. */
export interface BindingKey {
  platform: Platform;
  /** Our account the customer wrote to: the WhatsApp number (`whatsapp:+1555…`), the page or Instagram account id. */
  account: string;
  /** The customer on the platform. */
  externalId: string;
}

export interface Binding {
  platform: Platform;
  account: string;
  externalId: string;
  conversationId: string;
  lastInboundAt: number;
  disclosed: boolean;
  /** The last outbound sequence handled. */
  cursor: number;
}

/** What a button payload stands for; the payload itself is only a random token. */
export interface ButtonRef {
  token: string;
  platform: Platform;
  conversationId: string;
  kind: "confirm" | "decline" | "answer" | "reply";
  /** proposalId, elicitationId, or empty for a reply. */
  targetId: string;
  field?: string;
  /** The option value of an answer, or the text of a reply. */
  value?: string;
}

/** A choice the customer answers by a tap, or by typing an option's number or label. */
export interface OpenQuestion {
  /** The elicitation; empty for "replies". */
  elicitationId: string;
  field: string;
  options: NumberedOption[];
  /**
   * "replies": no elicitation but a result's reply actions sent as numbered text (more than the platform's
   * list holds; the channel's own, kept in its store); each option's value is the reply's text. Absent: a
   * questions elicitation the engine holds open.
   */
  kind?: "replies";
}

export interface NumberedOption {
  value: string;
  label: string;
}

export type OutboxState = "sent" | "failed";

/**
 * One delivery status a platform reported about a part we sent (Twilio's status callbacks: queued, sent,
 * delivered, read, failed, undelivered; Meta's delivery and read receipts), or the platform's answer to the
 * send itself. `at` is when it happened as far as we know: the platform's timestamp, else when we heard it.
 */
export interface DeliveryStatus {
  status: string;
  at: number;
  /** The platform's error code of a failure (Twilio 63016, 30008…). */
  errorCode?: number;
}

export interface OutboxRecord {
  platform: Platform;
  conversationId: string;
  seq: number;
  part: number;
  state: OutboxState;
  attempts: number;
  code?: string;
  message?: string;
  platformId?: string;
  at: number;
  /** What the platform reported about this part so far, oldest first (filled by listOutbox only). */
  statuses?: DeliveryStatus[];
}

/** Durable state of the channel glue. Every method is atomic on its own. */
export interface InboxStore {
  /** Stores an inbound event once: true when new, false for a repeat of (platform, messageId). */
  insertInbound(row: Omit<InboxRow, "state">): Promise<boolean>;
  /** Moves up to `limit` received rows to processing, oldest first, and returns them. */
  claimInbound(limit: number): Promise<InboxRow[]>;
  finishInbound(platform: Platform, messageId: string, state: "done" | "failed", error?: string): Promise<void>;
  /** Rows left in processing by a crash go back to received. */
  requeueProcessing(): Promise<number>;
  listInbound(state?: InboxState): Promise<InboxRow[]>;
  /** Records the inbound decided for a row, before it is handed to the engine. */
  markHanded(platform: Platform, messageId: string, inbound: string): Promise<void>;
  /**
   * Retention: deletes processed inbox rows (done, failed) received before `before`, and sent outbox
   * records from before it. Rows still received or processing are never deleted. Returns the counts.
   */
  prune(before: number): Promise<{ inbox: number; outbox: number }>;

  /** The binding of a customer on one of our accounts (a binding from before accounts were kept is adopted by the first). */
  findBinding(key: BindingKey): Promise<Binding | undefined>;
  findBindingByConversation(conversationId: string): Promise<Binding | undefined>;
  listBindings(): Promise<Binding[]>;
  /** Binds once; a concurrent bind of the same customer keeps the first conversation, which is returned. */
  bind(key: BindingKey, conversationId: string, at: number): Promise<Binding>;
  touchInbound(key: BindingKey, at: number): Promise<void>;
  setDisclosed(key: BindingKey): Promise<void>;
  setCursor(key: BindingKey, seq: number): Promise<void>;

  putRefs(refs: ButtonRef[]): Promise<void>;
  getRef(token: string): Promise<ButtonRef | undefined>;

  /**
   * A result's reply actions the channel sent as numbered text, in their numbered order: what a typed number
   * or label means until the customer's next message (null forgets them). Proposals and questions are the
   * engine's: the channel asks the ConversationPort for them and keeps no copy.
   */
  setNumberedReplies(conversationId: string, options: NumberedOption[] | null): Promise<void>;
  getNumberedReplies(conversationId: string): Promise<NumberedOption[] | undefined>;

  /** The outbox record of one part of one outbound event, if it was handled. */
  getOutbox(platform: Platform, conversationId: string, seq: number, part: number): Promise<OutboxRecord | undefined>;
  recordOutbox(record: OutboxRecord): Promise<void>;
  /** Permanent failures, newest first: what the team sees. */
  listFailures(): Promise<OutboxRecord[]>;
  markFailedByPlatformId(platformId: string, code: string, message: string): Promise<OutboxRecord | undefined>;
  /**
   * Keeps one delivery status of the part the platform knows as `platformId`, once per status (a repeated
   * callback is kept once): true when new. It is kept even before the part's own record is stored.
   */
  recordStatus(platform: Platform, platformId: string, status: DeliveryStatus): Promise<boolean>;
  /** Every outbox record of a conversation, by seq and part, each with its delivery statuses. */
  listOutbox(conversationId: string): Promise<OutboxRecord[]>;

  getContentSid(hash: string): Promise<string | undefined>;
  putContentSid(hash: string, sid: string): Promise<void>;
}
