// What one widget connection is given by the gateway: its limits (with their defaults), the identity
// check, the engine, the client address's allowance of new conversations, and the gateway's bookkeeping.
import type { Socket } from "node:net";
import type { CallSubject } from "@caplo/shared";
import type { Engine } from "../engine/engine.ts";
import type { AgentRelease, ReleaseSource } from "../engine/release.ts";
import type { Connection } from "./connection.ts";

/** An identity token checked: the verified subject, or why not. */
export type VerifyResult = { ok: true; subject: CallSubject } | { ok: false; error: { code: string; path: string; message: string } };

export type ConnectionLimits = {
  /** Largest frame handled; a larger one gets `frame_too_large`. */
  maxFrameBytes: number;
  /** Frames per second allowed on one connection (token bucket), and the burst above it. */
  framesPerSecond: number;
  burst: number;
  /** Stop sending while more than this many bytes wait in the socket's buffer. */
  maxBufferedBytes: number;
  /** Close a connection whose buffer stays full this long (the client resumes from its last seq). */
  stallTimeoutMs: number;
  /**
   * The resume token is replaced when the visitor signs in (perhaps on another node), and a connection of the
   * old one is closed before it is sent anything stored after. This is how old a row this node's own append
   * read may be and still answer for the token without a store read, and, for a reply's parts when no such
   * row is known here, how long after the token was last found current they may stream.
   */
  resumeCheckMs: number;
};

export const DEFAULT_LIMITS: ConnectionLimits = {
  maxFrameBytes: 32 * 1024,
  framesPerSecond: 10,
  burst: 20,
  maxBufferedBytes: 1024 * 1024,
  stallTimeoutMs: 30_000,
  resumeCheckMs: 1000,
};

export type ConnectionDeps = {
  /**
   * The TCP socket under the WebSocket (the gateway has it from the upgrade). Frames sent to one connection
   * in one turn of the event loop are corked into one write; without it each frame is a write of its own.
   */
  socket?: Socket;
  /**
   * The socket's Origin is one of this server's own (CAPLO_PUBLIC_URL or its listening address, never the
   * Host header): the widget app in its iframe, whose framing the app page's CSP frame-ancestors checks.
   */
  ownOrigin: boolean;
  /** Close a socket that has not said hello (and been welcomed) within this long. */
  helloTimeoutMs: number;
  /** Take one new conversation from the client address's allowance: 0, or the milliseconds until one is. */
  startConversation: () => number;
  /** The conversation's resume token was replaced by `by`: other connections joined with the old one close. */
  rotated: (conversationId: string, by: Connection) => void;
  engine: Engine;
  releases: ReleaseSource;
  limits: ConnectionLimits;
  /** The clock of the rate limit (milliseconds). */
  now: () => number;
  verifyIdentity: (release: AgentRelease, token: string) => VerifyResult | Promise<VerifyResult>;
  log: (level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>) => void;
  /** Called when the connection joins a conversation (for typing indicators). */
  joined: (connection: Connection) => void;
  left: (connection: Connection) => void;
};
