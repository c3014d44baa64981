// Sends Messenger and Instagram messages through the Graph Send API (`POST /{version}/me/messages`) with
// the exact request shape Meta documents: recipient, messaging_type (and tag), message or sender_action.
import type { SendOptions, SendResult } from "../adapter.ts";

/** A rendered Meta message: a message object, or a sender action such as typing_on. */
export type GraphMessage =
  | { kind: "message"; message: Record<string, unknown> }
  | { kind: "action"; action: "typing_on" | "typing_off" | "mark_seen" };

export interface GraphApiConfig {
  /** The Page access token (Messenger) or the Instagram account's token. */
  accessToken: string;
  /**
   * Tokens of further pages or Instagram accounts, by their id: a reply to a customer who wrote to one of
   * them is sent with its token (`/me` is the token's page). Others use `accessToken`.
   */
  accountTokens?: Record<string, string>;
  /**
   * https://graph.facebook.com by default (Page access tokens); https://graph.instagram.com for Instagram
   * User access tokens (Business Login for Instagram); an egress gateway or a local fake in tests.
   */
  graphBaseUrl?: string;
  apiVersion?: string;
}

export const GRAPH_BASE_URL = "https://graph.facebook.com";
/** The host of the Instagram API with Instagram Login (Instagram User access tokens); same Send API shape. */
export const INSTAGRAM_GRAPH_BASE_URL = "https://graph.instagram.com";
export const GRAPH_API_VERSION = "v21.0";

/** The Send API body of one message: team replies carry HUMAN_AGENT, the agent's only RESPONSE. */
export function sendBody(to: string, message: GraphMessage, options: SendOptions): Record<string, unknown> {
  if (message.kind === "action") return { recipient: { id: to }, sender_action: message.action };
  const typing = options.fromTeam
    ? { messaging_type: "MESSAGE_TAG", tag: "HUMAN_AGENT" }
    : { messaging_type: "RESPONSE" };
  return { recipient: { id: to }, ...typing, message: message.message };
}

/** The token that sends as our `account` (a page or Instagram account id). */
export function tokenFor(config: GraphApiConfig, account: string | undefined): string {
  return (account !== undefined ? config.accountTokens?.[account] : undefined) ?? config.accessToken;
}

/** Graph error codes worth another try: temporary, rate limits, service unavailable. */
const RETRYABLE_CODES = new Set([1, 2, 4, 17, 32, 341, 613]);

export async function graphSend(config: GraphApiConfig, to: string, message: GraphMessage, options: SendOptions): Promise<SendResult> {
  const url = `${(config.graphBaseUrl ?? GRAPH_BASE_URL).replace(/\/$/, "")}/${config.apiVersion ?? GRAPH_API_VERSION}/me/messages`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${tokenFor(config, options.account)}` },
      body: JSON.stringify(sendBody(to, message, options)),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (error) {
    return { ok: false, retryable: true, code: "network", message: String((error as Error).message ?? error) };
  }
  const text = await response.text();
  let body: { message_id?: string; recipient_id?: string; error?: { code?: number; error_subcode?: number; message?: string } } = {};
  try {
    body = JSON.parse(text);
  } catch {
    /* a non-JSON answer is judged by its status alone */
  }
  // A sender action has no message id: it is nothing whose delivery could be reported.
  if (response.ok) return { ok: true, platformId: body.message_id ?? body.recipient_id ?? "", status: "sent" };
  const code = body.error?.code;
  const retryable = response.status === 429 || response.status >= 500 || (code !== undefined && RETRYABLE_CODES.has(code));
  const outsideWindow = code === 10 && body.error?.error_subcode === 2018278;
  return {
    ok: false,
    retryable,
    code: outsideWindow ? "outside_window" : retryable ? "platform_unavailable" : "platform_refused",
    status: response.status,
    ...(code !== undefined ? { platformCode: code } : {}),
    message: body.error?.message ?? `Graph answered ${response.status}`,
  };
}
