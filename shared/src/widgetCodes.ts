// Every error code and close code the gateway sends a widget, with what it means and what a client does.
// docs/widget-protocol.md lists them; tests/gateway/protocolDoc.test.ts fails when the page and this differ.

/** What a client does about an error: `retry` the same frame or hello later, `fix` what it sent, or `stop`. */
export type ErrorAdvice = "retry" | "fix" | "stop" | "none";

export type WidgetErrorCode = {
  /** When the gateway sends it. */
  when: string;
  advice: ErrorAdvice;
};

/** Error codes of the gateway itself (the frame, the connection, the hello). */
export const GATEWAY_ERROR_CODES = {
  frame_invalid: { when: "the frame is not JSON, is binary, is not one of the client frames, or a field breaks its rule (`path` names it)", advice: "fix" },
  frame_too_large: { when: "the frame is over the frame size limit", advice: "fix" },
  rate_limited: { when: "more frames than the per-connection rate allows: the frame was dropped, not handled", advice: "retry" },
  protocol_unsupported: { when: "the hello asked for another protocol version (`path` is `v`)", advice: "stop" },
  not_started: { when: "an `in` or `identify` frame before the welcome", advice: "fix" },
  already_started: { when: "a second hello on one connection", advice: "none" },
  hello_timeout: { when: "no hello within the hello timeout; the socket is then closed with 4408", advice: "retry" },
  agent_unknown: { when: "the hello names no agent this server serves", advice: "stop" },
  origin_not_allowed: { when: "the socket's Origin is neither this server nor a site the agent is embedded on; closed with 1008", advice: "stop" },
  too_many_connections: { when: "this address has as many sockets open as the per-address limit allows; closed with 1013", advice: "retry" },
  too_many_conversations: { when: "this address started as many new conversations this minute as the limit allows; closed with 1013", advice: "retry" },
  resume_invalid: { when: "the resume token is unknown, of another agent, or replaced (the visitor signed in since): a new conversation starts and its welcome follows", advice: "none" },
  resume_rotated: { when: "the conversation's resume token was replaced on another connection (the visitor signed in there); closed with 4409", advice: "retry" },
  internal_error: { when: "the server failed (its store may be restarting); with a `ref`, send that frame again; without one, say hello again", advice: "retry" },
} as const satisfies Record<string, WidgetErrorCode>;

/** Error codes that answer one frame (always with its `ref`): a customer's action or an identify. */
export const ACTION_ERROR_CODES = {
  not_conversation_owner: { when: "the connection does not hold this conversation's resume token", advice: "stop" },
  conversation_not_found: { when: "the conversation no longer exists", advice: "stop" },
  proposal_not_found: { when: "no such proposal in this conversation (another conversation's proposal is not visible)", advice: "none" },
  proposal_not_open: { when: "the proposal was already decided (a second confirm, another tab, a replayed frame): the write runs once", advice: "none" },
  proposal_expired: { when: "the proposal waited longer than its lifetime; ask the agent again", advice: "none" },
  not_your_proposal: { when: "the proposal is for another verified customer", advice: "none" },
  tool_unavailable: { when: "the proposal's tool is no longer in the agent's release", advice: "none" },
  edits_not_supported: { when: "edits sent on a channel that cannot edit review fields", advice: "fix" },
  field_not_editable: { when: "an edit of a field that is not an editable field of the review (`path` names it)", advice: "fix" },
  option_invalid: { when: "a select field edited to a value that is not one of its options", advice: "fix" },
  edit_invalid: { when: "an edit breaks the tool's input schema, is not a string, or is keyed `__proto__`, `constructor` or `prototype` (at any depth): nothing runs", advice: "fix" },
  question_not_open: { when: "an answer to a question that is not open on this server", advice: "none" },
  question_expired: { when: "an answer that came after the question's wait ran out (the tool went on without it): nothing was done with it", advice: "none" },
  not_rateable: { when: "a rate of an event that is not one of the agent's replies in this conversation (`path` is `seq`)", advice: "fix" },
  answer_invalid: { when: "an answer that does not fit the question (`path` names the field)", advice: "fix" },
  identity_not_configured: { when: "identify for an agent that does not verify customers", advice: "stop" },
  token_malformed: { when: "the identity token is not a JWT", advice: "stop" },
  token_header_invalid: { when: "the identity token's header is not one Caplo reads", advice: "stop" },
  token_alg_refused: { when: "the identity token is signed with another algorithm than the agent's", advice: "stop" },
  token_key_unknown: { when: "the identity token names a key the agent does not have", advice: "stop" },
  token_signature_invalid: { when: "the identity token's signature does not verify", advice: "stop" },
  token_claims_invalid: { when: "a claim of the identity token is missing or of the wrong type", advice: "stop" },
  token_expired: { when: "the identity token has expired", advice: "stop" },
  token_not_yet_valid: { when: "the identity token is not valid yet (nbf)", advice: "stop" },
  token_issued_in_future: { when: "the identity token's iat is in the future", advice: "stop" },
  token_too_old: { when: "the identity token was issued longer ago than the agent allows", advice: "stop" },
  token_issuer_invalid: { when: "the identity token's issuer is not the agent's", advice: "stop" },
  token_audience_invalid: { when: "the identity token's audience is not the agent's", advice: "stop" },
  token_level_unknown: { when: "the identity token's level is not low, standard or high", advice: "stop" },
} as const satisfies Record<string, WidgetErrorCode>;

export type GatewayErrorCode = keyof typeof GATEWAY_ERROR_CODES;

/** WebSocket close codes a widget may see, and why. */
export const CLOSE_CODES = {
  1000: "normal close (the client closed)",
  1006: "no close frame (the client sees it): the server stopped, or the connection missed a heartbeat ping",
  1007: "a text frame that is not valid UTF-8 (closed by the WebSocket library)",
  1008: "origin_not_allowed: the agent is not embedded on the socket's origin",
  1009: "a frame over the hard payload limit, closed before it is read",
  1013: "try again later: the client reads too slowly (resume from the last event), or too_many_connections / too_many_conversations",
  4408: "hello_timeout: no hello within the hello timeout",
  4409: "resume_rotated: the conversation's resume token was replaced on another connection",
} as const;

/** The close codes the gateway itself sends, by name. */
export const CLOSE = {
  originNotAllowed: 1008,
  tryAgainLater: 1013,
  helloTimeout: 4408,
  resumeRotated: 4409,
} as const satisfies Record<string, keyof typeof CLOSE_CODES>;
