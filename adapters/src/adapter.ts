// The one interface every messaging channel implements: verify a webhook, parse it into channel-neutral
// events, render the engine's outbound messages into the platform's messages, and send them.
import type { ChannelCapabilities, ChannelKind } from "@caplo/shared/channel";
import type { Outbound } from "@caplo/shared/messages";

/** A webhook request as received: the raw body bytes are what the platform signed. */
export interface WebhookRequest {
  method: string;
  /** The path and query string as received (`/webhooks/twilio?x=1`). */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer;
}

/** An error as a value, with a stable code. */
export interface ChannelError {
  code: string;
  path: string;
  message: string;
}

export type Verification =
  | { ok: true }
  | { ok: false; status: 403; error: ChannelError };

/** The answer to a subscription handshake (Meta's hub.challenge), or null when the request is none. */
export type HandshakeAnswer = { status: 200; body: string } | { status: 403; error: ChannelError };

/** What a customer did on the platform, before the glue resolves button references. */
export type ChannelEvent =
  | {
      kind: "message";
      /** The platform's id of this message (MessageSid, mid): the dedup key. */
      messageId: string;
      /** The customer on the platform (a WhatsApp number, a page-scoped or Instagram-scoped id). */
      from: string;
      /** Our own account on the platform (the Twilio sender, the page or Instagram account). */
      to: string;
      timestamp: number;
      text?: string;
      /** A tapped button, quick reply, list item or postback: the payload we put there. */
      payload?: string;
      /** The visible title of what was tapped, if the platform says it. */
      payloadTitle?: string;
      media?: Array<{ url: string; contentType?: string }>;
      profileName?: string;
    }
  | {
      kind: "status";
      messageId: string;
      /** The platform id of the message whose delivery this reports; empty when a watermark says which. */
      about: string;
      /**
       * Meta's watermark: every message sent to this customer at or before this time (ms) has the status (a
       * Messenger read receipt, a delivery receipt without mids).
       */
      watermark?: number;
      from: string;
      to: string;
      timestamp: number;
      status: string;
      errorCode?: number;
    };

export type ParseResult = { ok: true; events: ChannelEvent[] } | { ok: false; status: 400; error: ChannelError };

/** Button payloads the glue gives the renderer; the renderer never invents one. */
export interface RenderRefs {
  /** A payload for the Confirm or Cancel tap of a proposal. */
  proposal(proposalId: string, decision: "confirm" | "decline"): string;
  /** A payload for choosing option `value` of a questions elicitation. */
  answer(elicitationId: string, field: string, value: string): string;
  /** A payload for a reply action: tapping sends `text` as the customer's message. */
  reply(text: string): string;
}

export interface RenderContext {
  refs: RenderRefs;
  /** The team is writing (handoff taken): Meta's HUMAN_AGENT tag applies to these only. */
  fromTeam?: boolean;
  /** The automated-assistant notice for this conversation (said again when the team hands back on Meta). */
  disclosure?: string;
  /** The agent's IANA time zone (agent.yaml `timeZone`): times are written in it, in words. UTC when absent. */
  timeZone?: string;
}

/** A recorded degradation: a feature the platform lacks, shown another way, never dropped silently. */
export interface RenderWarning {
  type: "degraded";
  feature: string;
  detail: string;
  /**
   * Options sent as numbered text instead of taps, in their numbered order (1 first): the glue lets a typed
   * number or label choose one, as a tap on its payload would.
   */
  numbered?: Array<{ label: string; payload: string }>;
}

export interface Rendered<M> {
  messages: M[];
  warnings: RenderWarning[];
}

/** What the platform answered to a send. */
export type SendResult =
  | { ok: true; platformId: string; /** The platform's status of the accepted message (Twilio: queued, accepted); "sent" when it names none. */ status?: string }
  | { ok: false; retryable: boolean; code: string; status?: number; platformCode?: number; message: string };

/** The declared abilities of a channel, beyond the neutral capabilities: its button and list limits. */
export interface AdapterCapabilities extends ChannelCapabilities {
  /** Most buttons one message may carry. */
  buttonsMax: number;
  buttonTitleMax: number;
  /** Most options one list (list picker or quick replies) may carry; more become numbered text. */
  listItemsMax: number;
  listItemTitleMax: number;
  textMax: number;
  /** Typing indicators for progress. */
  typing: boolean;
  /** Free-form messages only within 24 hours of the customer's last message. */
  windowMs: number;
  /** The automated-agent disclosure is sent at the start of a conversation and when the team hands back. */
  disclosure: boolean;
}

export interface ChannelAdapter<M = unknown> {
  readonly platform: Exclude<ChannelKind, "web">;
  readonly capabilities: AdapterCapabilities;
  /** Checks the platform's signature over the raw body; nothing else is read before it passes. */
  verify(request: WebhookRequest): Verification;
  /** A subscription handshake (GET with hub.challenge), or null when the request is not one. */
  handshake(request: WebhookRequest): HandshakeAnswer | null;
  /** A verified body into channel events; a malformed body is a 400 with a reason. */
  parse(request: WebhookRequest): ParseResult;
  /** An outbound message into the platform's messages, within every limit. */
  render(outbound: Outbound, context: RenderContext): Rendered<M>;
  /** Sends one rendered message to the customer `to`. */
  send(to: string, message: M, options: SendOptions): Promise<SendResult>;
  /**
   * Sends an approved template, the one kind of message a platform lets a business send outside the 24-hour
   * window (a WhatsApp Content template). Only a platform that has them implements it.
   */
  sendTemplate?(to: string, template: ApprovedTemplate, options: SendOptions): Promise<SendResult>;
}

/** An approved template by its platform id (a Twilio Content SID, `HX…`) and the values of its placeholders. */
export interface ApprovedTemplate {
  contentSid: string;
  variables?: Record<string, string>;
}

export interface SendOptions {
  /** Whether the message is the team's own reply (HUMAN_AGENT on Meta). */
  fromTeam: boolean;
  /** Whether the standard 24-hour window is open. */
  windowOpen: boolean;
  /** Our account the customer wrote to (a WhatsApp number `whatsapp:+1555…`): the reply comes from it. */
  account?: string;
}

/** Reads a header regardless of case and repetition. */
export function headerOf(request: WebhookRequest, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(request.headers)) {
    if (key.toLowerCase() !== wanted) continue;
    return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}
