// One widget WebSocket connection: validates every inbound frame against the protocol's zod schema
// (a bad, oversized or too-frequent frame gets an error frame with the frame's ref, and the connection
// lives on), closes a socket that says no hello in time, binds the connection to a conversation by hello
// (new, within the address's limit, or resumed with its token; the token is replaced when the visitor
// signs in), and delivers the conversation's stored events in order, exactly once, with backpressure.
import { createHash, randomBytes } from "node:crypto";
import type WebSocket from "ws";
import {
  CLOSE,
  clientFrameSchema,
  PROTOCOL_VERSION,
  type ChannelCapabilities,
  type ClientCapabilities,
  type ClientFrame,
  type GatewayErrorCode,
  type ServerFrame,
  type WidgetAgent,
} from "@caplo/shared";
import { frameProblem, refOf, refOfText } from "./frameErrors.ts";
import type { Unsubscribe } from "../bus/eventBus.ts";
import type { AgentRelease } from "../engine/release.ts";
import type { ReplyDelta } from "../engine/replyStream.ts";
import type { ConnectionDeps } from "./connectionDeps.ts";

const EVENT_BATCH = 200;

/** Whether a frame has been acked while it is still being handled. */
type Answer = { acked: boolean };

export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Everyone holding the resume token is the conversation's owner; the owner id derives from the token's hash. */
export function ownerOf(tokenHash: string): string {
  return `web:${tokenHash.slice(0, 32)}`;
}

/** What the widget shows of the agent: agent.yaml `widget`, and whether the web channel can hand over to a person. */
function widgetAgent(release: AgentRelease): WidgetAgent {
  const widget = release.config.widget;
  return {
    ...(widget?.name && { name: widget.name }),
    ...(widget?.avatar && { avatar: widget.avatar }),
    ...(widget?.starters?.length && { starters: widget.starters }),
    ...(widget?.mapTiles && { mapTiles: widget.mapTiles }),
    handoff: release.config.channels.web?.handoff !== undefined,
  };
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
  /** Reply parts received this turn of the event loop, sent as one delta frame (delta()). */
  private pendingDelta: ReplyDelta | undefined;
  /** The hash of the resume token this connection joined its conversation with. */
  private tokenHash: string | undefined;
  private helloTimer: NodeJS.Timeout | undefined;
  /** While reading is held because the client does not read what it is sent (holdReading): closes it at the stall limit. */
  private holding: NodeJS.Timeout | undefined;
  /** When the resume token was last found current (deps.now). */
  private checkedAt = 0;
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
    // A socket that never says hello holds a slot of its address and a file descriptor: close it.
    this.helloTimer = setTimeout(() => {
      if (this.conversationId || this.starting) return;
      this.error("hello_timeout", `no hello within ${deps.helloTimeoutMs / 1000} s; connect again and say hello first`);
      this.ws.close(CLOSE.helloTimeout, "no hello in time");
    }, deps.helloTimeoutMs);
    this.helloTimer.unref();
  }

  send(frame: ServerFrame): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.cork();
    this.sendDelta();
    this.ws.send(JSON.stringify(frame));
  }

  /**
   * A part of the reply being written: the parts that follow one another within this turn of the event loop
   * go out as one `delta` frame (the model often hands over several at once), before any other frame.
   */
  delta(delta: ReplyDelta): void {
    if (this.ws.readyState !== this.ws.OPEN || !this.mayStream()) return;
    const pending = this.pendingDelta;
    if (pending && pending.id === delta.id && pending.at + pending.text.length === delta.at) {
      pending.text += delta.text;
      return;
    }
    this.cork();
    this.sendDelta();
    this.pendingDelta = { id: delta.id, at: delta.at, text: delta.text };
  }

  /** Send the reply parts held this turn of the event loop, if any. */
  private sendDelta(): void {
    const pending = this.pendingDelta;
    if (!pending) return;
    this.pendingDelta = undefined;
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify({ t: "delta", id: pending.id, at: pending.at, text: pending.text } satisfies ServerFrame));
  }

  /**
   * Hold the frames of this turn of the event loop and the next in the socket and write them together (held
   * reply parts first). Two turns, so a reply's last part and the turn's end stored on the next turn (SQLite's
   * group commit: its events and the typing stop) go out in one write instead of two.
   */
  private cork(): void {
    if (this.corked) return;
    this.corked = true;
    const socket = this.deps.socket;
    const cork = socket !== undefined && !socket.destroyed;
    if (cork) socket.cork();
    setImmediate(() =>
      setImmediate(() => {
        this.corked = false;
        this.sendDelta();
        if (cork) socket.uncork();
      }),
    );
  }

  /** A gateway error (its code from the widget protocol's list), or an engine's or identity check's passed on. */
  private error(code: GatewayErrorCode | (string & {}), message: string, extra: { path?: string; ref?: string } = {}): void {
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

  /**
   * A client that sends but does not read: every frame it sends is answered (an ack, a pong, an error of ten
   * times its size), so its answers piled up in this process without bound. While more than maxBufferedBytes
   * wait to be sent, nothing more is read from it (TCP pushes back on the client) until they drain; still held
   * at the stall limit, it is closed as a slow reader is.
   */
  private holdReading(): void {
    const socket = this.deps.socket;
    if (this.holding || this.closed || !socket || socket.destroyed || this.ws.bufferedAmount <= this.deps.limits.maxBufferedBytes) return;
    this.ws.pause();
    const resume = () => {
      clearTimeout(this.holding);
      this.holding = undefined;
      if (!this.closed) this.ws.resume();
    };
    socket.once("drain", resume);
    this.holding = setTimeout(() => {
      socket.off("drain", resume);
      this.holding = undefined;
      this.ws.close(1013, "too slow; resume from the last event");
      // Read again, so the client's closing frame is read and the socket let go as soon as it answers (paused,
      // it waited out the library's 30 s close timeout); what it sent before is dropped unread (receive).
      this.ws.resume();
    }, this.deps.limits.stallTimeoutMs);
    this.holding.unref();
  }

  private async receive(data: Buffer | Buffer[] | ArrayBuffer, isBinary: boolean): Promise<void> {
    if (this.ws.readyState !== this.ws.OPEN) return; // closing: nothing more is acted on or answered
    this.holdReading();
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    // A dropped or refused frame is still answered with its ref, so the client knows which action failed
    // (a rate-limited confirm's card becomes usable again instead of waiting forever).
    const unread = () => (isBinary ? {} : { ref: refOfText(bytes) }).ref;
    const withRef = (ref: string | undefined) => (ref !== undefined ? { ref } : {});
    if (!this.allow()) return this.error("rate_limited", `Too many actions at once: this one was not handled; please try again in a moment (at most ${this.deps.limits.framesPerSecond} per second)`, withRef(unread()));
    if (bytes.length > this.deps.limits.maxFrameBytes) return this.error("frame_too_large", `frames are at most ${this.deps.limits.maxFrameBytes} bytes; this one had ${bytes.length}`, withRef(unread()));
    if (isBinary) return this.error("frame_invalid", "frames are JSON text, not binary");
    let raw: unknown;
    try {
      raw = JSON.parse(bytes.toString("utf8"));
    } catch {
      return this.error("frame_invalid", "the frame is not valid JSON");
    }
    // A ref that cannot be echoed as sent (too long, not text) is refused by itself: cut short it could
    // match another action of the client's.
    const ref = refOf(raw);
    if (!ref.ok) return this.error(ref.problem.code, ref.problem.message, { path: ref.problem.path });
    // A widget speaking another version of the protocol is told which one this gateway speaks.
    if (raw && typeof raw === "object" && (raw as { t?: unknown }).t === "hello" && (raw as { v?: unknown }).v !== PROTOCOL_VERSION) {
      const asked = (raw as { v?: unknown }).v;
      return this.error("protocol_unsupported", `this gateway speaks protocol version ${PROTOCOL_VERSION}; the hello asked for ${asked === undefined ? "no version" : JSON.stringify(asked).slice(0, 20)}`, { path: "v" });
    }
    const parsed = clientFrameSchema.safeParse(raw);
    if (!parsed.success) {
      const problem = frameProblem(parsed.error.issues, raw);
      return this.error(problem.code, problem.message, { path: problem.path, ...withRef(ref.ref) });
    }
    const answer: Answer = { acked: false };
    try {
      await this.handle(parsed.data, answer);
    } catch (error) {
      this.deps.log("error", "frame handling failed", { error: String(error) });
      // With the frame's ref, so the client knows which message to send again (the store may be restarting);
      // not after its ack: the decision is recorded and its outcome will follow as events.
      if (!answer.acked) this.error("internal_error", "something went wrong on our side; please try again", withRef(ref.ref));
    }
  }

  /** Ack a frame once (a confirm is acked when recorded, before its write runs; not again when it ends). */
  private ack(answer: Answer, ref: string, extra: { resumeToken?: string } = {}): void {
    if (answer.acked) return;
    answer.acked = true;
    this.send({ t: "ack", ref, ...extra });
  }

  /**
   * Before an action: the resume token this connection joined with must still be the conversation's. It is
   * replaced when the visitor signs in (perhaps on another node): a connection of the old token is closed.
   */
  private async stillCurrent(ref: string): Promise<boolean> {
    if (this.tokenHash && (await this.deps.engine.resumeCurrent(this.conversationId!, this.tokenHash))) {
      this.checkedAt = this.deps.now();
      return true;
    }
    this.closeRotated(ref);
    return false;
  }

  /**
   * Before sending events up to `seq`: the resume token must have been the conversation's when they were
   * stored, else the connection is closed. The row this node's own append read within resumeCheckMs, with
   * those events already stored (the turn that stored them), answers without a read; else the store is read.
   * A token once found current is not trusted for a while after: an event another node stored after the
   * visitor signed in there would reach the old token's socket in that while.
   */
  private async tokenStillCurrent(seq: number): Promise<boolean> {
    if (this.tokenHash && this.deps.engine.resumeSeen(this.conversationId!, this.tokenHash, seq, this.deps.limits.resumeCheckMs)) return true;
    if (!this.tokenHash || !(await this.deps.engine.resumeCurrent(this.conversationId!, this.tokenHash))) {
      this.closeRotated();
      return false;
    }
    this.checkedAt = this.deps.now();
    return !this.closed;
  }

  /**
   * Whether a part of the reply being written may go to this connection. A part carries no seq to check, so
   * it goes only while the row this node's latest append of the conversation read (the turn's own, for a
   * reply written here) shows this connection's token: a turn on this node that began after the visitor
   * signed in on another node shows the new one, and the old token's socket gets none of its reply until the
   * stored event, whose check closes it. With no row known here (forgotten at a sign-in on this node, which
   * closed the old token's sockets, or evicted), only within resumeCheckMs of the token last found current.
   */
  private mayStream(): boolean {
    if (!this.tokenHash || !this.conversationId) return false;
    const seen = this.deps.engine.seenResumeHash(this.conversationId);
    if (seen !== undefined) return seen === this.tokenHash;
    return this.deps.now() - this.checkedAt < this.deps.limits.resumeCheckMs;
  }

  /** This connection's resume token was replaced on another connection: say so and close. */
  closeRotated(ref?: string): void {
    this.error("resume_rotated", "this conversation's resume token was replaced (the visitor signed in); resume with the new token", ref !== undefined ? { ref } : {});
    this.ws.close(CLOSE.resumeRotated, "resume token replaced");
  }

  private async handle(frame: ClientFrame, answer: Answer): Promise<void> {
    switch (frame.t) {
      case "ping":
        return this.send({ t: "pong" });
      case "hello":
        return this.hello(frame);
      case "in": {
        if (!this.conversationId || !this.ownerId) return this.error("not_started", "say hello first", { ref: frame.ref });
        if (!this.tokenHash) return this.closeRotated(frame.ref);
        if (frame.event.type === "message") {
          // The resume token is checked in the transaction that stores the message (a replaced one stores
          // nothing); the frame is acked once the message is stored, and the turn runs on: its events arrive as they are stored.
          const result = await this.deps.engine.handle(this.conversationId, this.ownerId, frame.event, { resumeHash: this.tokenHash }, () => {
            this.checkedAt = this.deps.now();
            this.ack(answer, frame.ref);
          });
          if (!result.ok && result.error.code === "resume_rotated") return this.closeRotated(frame.ref);
          if (!result.ok) this.error(result.error.code, result.error.message, { path: result.error.path, ref: frame.ref });
          return;
        }
        if (!(await this.stillCurrent(frame.ref))) return;
        // A confirm or decline is acked once recorded: the write and the model's next turn run after it,
        // and their outcome arrives as events.
        const result = await this.deps.engine.handle(this.conversationId, this.ownerId, frame.event, undefined, () => this.ack(answer, frame.ref));
        if (result.ok) this.ack(answer, frame.ref);
        else if (!answer.acked) this.error(result.error.code, result.error.message, { path: result.error.path, ref: frame.ref });
        return;
      }
      case "rate": {
        if (!this.conversationId || !this.ownerId) return this.error("not_started", "say hello first", { ref: frame.ref });
        // Every action of the conversation's owner, not only a message or a decision: a socket of a token from
        // before sign-in (on another node) must not rate or stop the verified visitor's replies either.
        if (!(await this.stillCurrent(frame.ref))) return;
        const result = await this.deps.engine.rate(this.conversationId, this.ownerId, frame.seq, frame.rating);
        if (result.ok) this.send({ t: "ack", ref: frame.ref });
        else this.error(result.error.code, result.error.message, { path: result.error.path, ref: frame.ref });
        return;
      }
      case "stop": {
        if (!this.conversationId || !this.ownerId) return this.error("not_started", "say hello first", { ref: frame.ref });
        if (!(await this.stillCurrent(frame.ref))) return;
        const result = await this.deps.engine.stopReply(this.conversationId, this.ownerId);
        if (result.ok) this.send({ t: "ack", ref: frame.ref });
        else this.error(result.error.code, result.error.message, { path: result.error.path, ref: frame.ref });
        return;
      }
      case "identify": {
        if (!this.conversationId || !this.release) return this.error("not_started", "say hello first", { ref: frame.ref });
        if (!(await this.stillCurrent(frame.ref))) return;
        const verified = await this.deps.verifyIdentity(this.release, frame.token);
        if (!verified.ok) return this.error(verified.error.code, verified.error.message, { path: verified.error.path, ref: frame.ref });
        // Signed in (or stepped up): a new resume token, so one handed out before cannot resume the verified
        // conversation. It replaces this connection's before the subject is set, in one step of the engine: a
        // sign-in racing this one on a socket of the same old token (another tab, or whoever copied the token)
        // either wins both or changes nothing. Other connections joined with the old token are closed.
        const token = randomBytes(32).toString("base64url");
        const tokenHash = hashToken(token);
        const conversationId = this.conversationId;
        const result = await this.deps.engine.verify(conversationId, verified.subject, {
          from: this.tokenHash!,
          to: tokenHash,
          // This connection holds the new token from now on, whatever follows (an identify sent again rotates from it).
          rotated: () => {
            this.tokenHash = tokenHash;
            this.checkedAt = this.deps.now();
            this.deps.rotated(conversationId, this);
          },
        });
        if (!result.ok && result.error.code === "resume_rotated") return this.closeRotated(frame.ref);
        if (!result.ok) return this.error(result.error.code, result.error.message, { path: result.error.path, ref: frame.ref });
        this.ack(answer, frame.ref, { resumeToken: token });
        return;
      }
    }
  }

  private async hello(frame: Extract<ClientFrame, { t: "hello" }>): Promise<void> {
    if (this.conversationId || this.starting) return this.error("already_started", "this connection already said hello");
    const release = this.deps.releases.get(frame.agent);
    if (!release) return this.error("agent_unknown", `no agent named ${frame.agent}`, { path: "agent" });
    if (!this.deps.ownOrigin && !release.config.origins.includes(this.origin)) {
      this.error("origin_not_allowed", `this agent is not embedded on ${this.origin}`);
      this.ws.close(CLOSE.originNotAllowed, "origin not allowed");
      return;
    }
    this.starting = true;
    try {
      const engine = this.deps.engine;
      let token: string | undefined;
      let conversation = undefined;
      if (frame.resume) {
        const found = await engine.resumeConversation(hashToken(frame.resume.token), release.agent, capabilitiesOf(frame.capabilities));
        if (found) {
          conversation = found;
          token = frame.resume.token;
        } else {
          this.error("resume_invalid", "that conversation cannot be resumed; a new one was started", { path: "resume.token" });
        }
      }
      if (!conversation) {
        const wait = this.deps.startConversation();
        if (wait > 0) {
          this.error("too_many_conversations", `too many new conversations from your address; try again in ${Math.ceil(wait / 1000)} s`);
          this.ws.close(CLOSE.tryAgainLater, "too many new conversations");
          return;
        }
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
      // A resumed conversation's ratings (a new one has none): the thumbs a reload shows pressed.
      const resumed = token === frame.resume?.token;
      const ratings = resumed ? (await engine.ratings(conversation.id)).map(({ seq, rating }) => ({ seq, rating })) : [];
      // The socket may have closed while the store answered: dispose() has run, so nothing may be joined or
      // subscribed for it now (it would never be removed).
      if (this.closed) return;
      this.release = release;
      this.tokenHash = hashToken(token!);
      this.checkedAt = this.deps.now(); // just found by it, or just made
      clearTimeout(this.helloTimer);
      this.helloTimer = undefined;
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
      // A sign-in that replaced the token while this hello read the store did not see this connection (it was
      // not joined yet) and cannot close it: the token is read again now that it is, before anything is sent.
      // Without this, a socket of the token from before sign-in resumed into the verified conversation.
      if (resumed && !(await engine.resumeCurrent(conversation.id, this.tokenHash))) return this.closeRotated();
      if (this.closed) return;
      this.send({ t: "welcome", v: PROTOCOL_VERSION, conversationId: conversation.id, resumeToken: token!, verified: conversation.subject !== null, agent: widgetAgent(release), ratings });
      // A reply the model is writing now: what it has so far (its later parts follow as deltas, its stored event after).
      const partial = engine.replyInProgress(conversation.id);
      if (partial) this.send({ t: "delta", ...partial });
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
        if (events.length > 0 && !(await this.tokenStillCurrent(events.at(-1)!.seq))) return;
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
    clearTimeout(this.helloTimer);
    clearTimeout(this.holding);
    if (this.retry) clearTimeout(this.retry);
    this.unsubscribe?.();
    this.deps.left(this);
  }
}
