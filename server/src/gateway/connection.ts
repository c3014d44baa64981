// One widget WebSocket connection: validates every inbound frame against the protocol's zod schema
// (a bad, oversized or too-frequent frame gets an error frame and the connection lives on), binds the
// connection to a conversation by hello (new, or resumed with its token), and delivers the
// conversation's stored events in order, exactly once, with backpressure.
import { createHash, randomBytes } from "node:crypto";
import type { Socket } from "node:net";
import type WebSocket from "ws";
import {
  clientFrameSchema,
  PROTOCOL_VERSION,
  type ChannelCapabilities,
  type ClientCapabilities,
  type ClientFrame,
  type ServerFrame,
} from "@caplo/shared";
import type { Unsubscribe } from "../bus/eventBus.ts";
import type { Engine } from "../engine/engine.ts";
import type { AgentRelease, ReleaseSource } from "../engine/release.ts";
import type { CallSubject } from "@caplo/shared";

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
};

export const DEFAULT_LIMITS: ConnectionLimits = {
  maxFrameBytes: 32 * 1024,
  framesPerSecond: 10,
  burst: 20,
  maxBufferedBytes: 1024 * 1024,
  stallTimeoutMs: 30_000,
};

export type ConnectionDeps = {
  /**
   * The TCP socket under the WebSocket (the gateway has it from the upgrade). Frames sent to one connection
   * in one turn of the event loop are corked into one write; without it each frame is a write of its own.
   */
  socket?: Socket;
  /** The socket comes from the gateway's own origin: the widget app in its iframe (framing checked by CSP). */
  sameOrigin: boolean;
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

const EVENT_BATCH = 200;

export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Everyone holding the resume token is the conversation's owner; the owner id derives from the token's hash. */
export function ownerOf(tokenHash: string): string {
  return `web:${tokenHash.slice(0, 32)}`;
}

function capabilitiesOf(client: ClientCapabilities): ChannelCapabilities {
  return { editableFields: true, forms: client.forms, questions: client.questions, files: client.files, pages: client.pages, richText: true };
}

export class Connection {
  readonly ws: WebSocket;
  readonly origin: string;
  conversationId: string | undefined;
  private ownerId: string | undefined;
  private release: AgentRelease | undefined;
  private sentSeq = 0;
  private unsubscribe: Unsubscribe | undefined;
  private flushing = false;
  private again = false;
  private retry: NodeJS.Timeout | undefined;
  private stalledSince: number | undefined;
  private tokens: number;
  private refilledAt: number;
  private starting = false;
  private corked = false;
  alive = true;
  private closed = false;
  private readonly deps: ConnectionDeps;

  constructor(ws: WebSocket, origin: string, deps: ConnectionDeps) {
    this.ws = ws;
    this.origin = origin;
    this.deps = deps;
    this.tokens = deps.limits.burst;
    this.refilledAt = deps.now();
    ws.on("message", (data, isBinary) => void this.receive(data as Buffer | Buffer[] | ArrayBuffer, isBinary));
    ws.on("pong", () => {
      this.alive = true;
    });
    ws.on("close", () => this.dispose());
    ws.on("error", () => this.dispose());
  }

  send(frame: ServerFrame): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.cork();
    this.ws.send(JSON.stringify(frame));
  }

  /** Hold this turn's frames in the socket and write them together when the turn's work is done. */
  private cork(): void {
    const socket = this.deps.socket;
    if (this.corked || !socket || socket.destroyed) return;
    this.corked = true;
    socket.cork();
    setImmediate(() => {
      this.corked = false;
      socket.uncork();
    });
  }

  private error(code: string, message: string, extra: { path?: string; ref?: string } = {}): void {
    this.send({ t: "error", code, message, ...(extra.path !== undefined && { path: extra.path }), ...(extra.ref !== undefined && { ref: extra.ref }) });
  }

  private allow(): boolean {
    const now = this.deps.now();
    const { framesPerSecond, burst } = this.deps.limits;
    this.tokens = Math.min(burst, this.tokens + ((now - this.refilledAt) / 1000) * framesPerSecond);
    this.refilledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private async receive(data: Buffer | Buffer[] | ArrayBuffer, isBinary: boolean): Promise<void> {
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (!this.allow()) return this.error("rate_limited", `at most ${this.deps.limits.framesPerSecond} frames per second; this frame was dropped`);
    if (bytes.length > this.deps.limits.maxFrameBytes) return this.error("frame_too_large", `frames are at most ${this.deps.limits.maxFrameBytes} bytes; this one had ${bytes.length}`);
    if (isBinary) return this.error("frame_invalid", "frames are JSON text, not binary");
    let raw: unknown;
    try {
      raw = JSON.parse(bytes.toString("utf8"));
    } catch {
      return this.error("frame_invalid", "the frame is not valid JSON");
    }
    // A widget speaking another version of the protocol is told which one this gateway speaks.
    if (raw && typeof raw === "object" && (raw as { t?: unknown }).t === "hello" && (raw as { v?: unknown }).v !== PROTOCOL_VERSION) {
      const asked = (raw as { v?: unknown }).v;
      return this.error("protocol_unsupported", `this gateway speaks protocol version ${PROTOCOL_VERSION}; the hello asked for ${asked === undefined ? "no version" : JSON.stringify(asked).slice(0, 20)}`, { path: "v" });
    }
    const parsed = clientFrameSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const ref = raw && typeof raw === "object" && typeof (raw as { ref?: unknown }).ref === "string" ? String((raw as { ref: string }).ref).slice(0, 64) : undefined;
      return this.error("frame_invalid", issue?.message ?? "invalid frame", { path: (issue?.path ?? []).map(String).join("."), ...(ref !== undefined && { ref }) });
    }
    try {
      await this.handle(parsed.data);
    } catch (error) {
      this.deps.log("error", "frame handling failed", { error: String(error) });
      // With the frame's ref, so the client knows which message to send again (the store may be restarting).
      const ref = "ref" in parsed.data && typeof parsed.data.ref === "string" ? parsed.data.ref : undefined;
      this.error("internal_error", "something went wrong on our side; please try again", ref !== undefined ? { ref } : {});
    }
  }

  private async handle(frame: ClientFrame): Promise<void> {
    switch (frame.t) {
      case "ping":
        return this.send({ t: "pong" });
      case "hello":
        return this.hello(frame);
      case "in": {
        if (!this.conversationId || !this.ownerId) return this.error("not_started", "say hello first", { ref: frame.ref });
        if (frame.event.type === "message") {
          // Accepted: the turn runs on; its events arrive as they are stored.
          this.send({ t: "ack", ref: frame.ref });
          const result = await this.deps.engine.handle(this.conversationId, this.ownerId, frame.event);
          if (!result.ok) this.error(result.error.code, result.error.message, { path: result.error.path, ref: frame.ref });
          return;
        }
        const result = await this.deps.engine.handle(this.conversationId, this.ownerId, frame.event);
        if (result.ok) this.send({ t: "ack", ref: frame.ref });
        else this.error(result.error.code, result.error.message, { path: result.error.path, ref: frame.ref });
        return;
      }
      case "identify": {
        if (!this.conversationId || !this.release) return this.error("not_started", "say hello first", { ref: frame.ref });
        const verified = await this.deps.verifyIdentity(this.release, frame.token);
        if (!verified.ok) return this.error(verified.error.code, verified.error.message, { path: verified.error.path, ref: frame.ref });
        const result = await this.deps.engine.verify(this.conversationId, verified.subject);
        if (result.ok) this.send({ t: "ack", ref: frame.ref });
        else this.error(result.error.code, result.error.message, { path: result.error.path, ref: frame.ref });
        return;
      }
    }
  }

  private async hello(frame: Extract<ClientFrame, { t: "hello" }>): Promise<void> {
    if (this.conversationId || this.starting) return this.error("already_started", "this connection already said hello");
    const release = this.deps.releases.get(frame.agent);
    if (!release) return this.error("agent_unknown", `no agent named ${frame.agent}`, { path: "agent" });
    if (!this.deps.sameOrigin && !release.config.origins.includes(this.origin)) {
      this.error("origin_not_allowed", `this agent is not embedded on ${this.origin}`);
      this.ws.close(1008, "origin not allowed");
      return;
    }
    this.starting = true;
    try {
      const engine = this.deps.engine;
      let token: string | undefined;
      let conversation = undefined;
      if (frame.resume) {
        const found = await engine.store.findConversationByResume(hashToken(frame.resume.token));
        if (found && found.agent === release.agent) {
          conversation = found;
          token = frame.resume.token;
          await engine.store.setCapabilities(found.id, capabilitiesOf(frame.capabilities));
        } else {
          this.error("resume_invalid", "that conversation cannot be resumed; a new one was started", { path: "resume.token" });
        }
      }
      if (!conversation) {
        token = randomBytes(32).toString("base64url");
        const tokenHash = hashToken(token);
        conversation = await engine.openConversation({
          agent: release.agent,
          channel: "web",
          capabilities: capabilitiesOf(frame.capabilities),
          ownerId: ownerOf(tokenHash),
          resumeHash: tokenHash,
        });
      }
      // The socket may have closed while the store answered: dispose() has run, so nothing may be joined or
      // subscribed for it now (it would never be removed).
      if (this.closed) return;
      this.release = release;
      this.conversationId = conversation.id;
      this.ownerId = conversation.ownerId;
      this.sentSeq = frame.resume && token === frame.resume.token ? Math.min(frame.resume.after, conversation.lastSeq) : 0;
      // Subscribe before reading the backlog, so nothing stored in between is missed.
      // A notice says "stored up to seq N": one this connection has already sent up to needs no flush.
      this.unsubscribe = engine.subscribe(conversation.id, (seq) => {
        if (seq > this.sentSeq) void this.flush();
      });
      await this.unsubscribe.ready;
      if (this.closed) {
        this.unsubscribe();
        return;
      }
      this.deps.joined(this);
      this.send({ t: "welcome", v: PROTOCOL_VERSION, conversationId: conversation.id, resumeToken: token!, verified: conversation.subject !== null });
      await this.flush();
    } finally {
      this.starting = false;
    }
  }

  /** Send every stored event after the last one sent, in order; pause while the socket's buffer is full. */
  async flush(): Promise<void> {
    if (!this.conversationId || this.closed) return;
    if (this.flushing) {
      this.again = true;
      return;
    }
    this.flushing = true;
    try {
      do {
        this.again = false;
        if (this.congested()) return;
        const events = await this.deps.engine.eventsAfter(this.conversationId, this.sentSeq, EVENT_BATCH);
        for (const event of events) {
          if (this.closed) return;
          if (event.seq !== this.sentSeq + 1) break; // never skip: the next flush reads it again
          this.send({ t: "event", seq: event.seq, at: new Date(event.at).toISOString(), message: event.message });
          this.sentSeq = event.seq;
          if (this.congested()) return;
        }
        if (events.length === EVENT_BATCH) this.again = true;
      } while (this.again);
    } finally {
      this.flushing = false;
    }
  }

  /** Backpressure: true (and a retry scheduled) while the socket's buffer is over its limit. */
  private congested(): boolean {
    if (this.ws.bufferedAmount <= this.deps.limits.maxBufferedBytes) {
      this.stalledSince = undefined;
      return false;
    }
    const now = Date.now();
    this.stalledSince ??= now;
    if (now - this.stalledSince > this.deps.limits.stallTimeoutMs) {
      this.ws.close(1013, "too slow; resume from the last event");
      return true;
    }
    if (!this.retry) {
      this.retry = setTimeout(() => {
        this.retry = undefined;
        void this.flush();
      }, 50);
    }
    return true;
  }

  /** The sequence of the last event sent on this connection. */
  get lastSent(): number {
    return this.sentSeq;
  }

  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.unsubscribe?.();
    this.deps.left(this);
  }
}
