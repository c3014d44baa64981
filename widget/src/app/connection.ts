// The widget's WebSocket client: says hello with its capabilities and resume point, hands every frame
// it can read to the app, keeps the line alive with pings, and reconnects with growing, jittered gaps
// when the line drops, resuming after the last event the app has so nothing is lost or shown twice.
// A hello the gateway refuses for a passing reason (its store is away: `internal_error`) is treated as a
// dropped line: the socket is closed and the hello said again on a new one after the same growing gaps.
// So is an `internal_error` without a ref after the welcome: only the hello sends one, when the store
// failed while reading the events the widget missed; a new hello reads them again from its last seq.
// A hello refused for good (wrong protocol version, unknown agent, origin not allowed) is not retried.
import type { ClientFrame, ServerFrame } from "@caplo/shared";
import { PROTOCOL_VERSION, readServerFrame } from "./frames.ts";
import type { ConnectionView } from "./conversation.ts";

export interface ConnectionOptions {
  url: string;
  agent: string;
  locale: string;
  /** The stored resume token, if any. */
  resumeToken: () => string | undefined;
  /** The last event sequence the app has. */
  lastSeq: () => number;
  onFrame: (frame: ServerFrame) => void;
  onView: (view: ConnectionView) => void;
  WebSocketImpl?: typeof WebSocket;
  random?: () => number;
  now?: () => number;
}

/** The first gap before a reconnect, doubled per failed attempt up to the cap. */
export const RECONNECT_BASE_MS = 500;
export const RECONNECT_MAX_MS = 30_000;
const PING_EVERY_MS = 25_000;
const PONG_WITHIN_MS = 10_000;

/**
 * Error codes that answer a hello for a reason that passes: the gateway could not read or write its store
 * (`internal_error`, as during a PostgreSQL restart), the hello came too fast (`rate_limited`), or this
 * address holds too many sockets or started too many conversations this minute.
 */
export const HELLO_RETRYABLE = new Set(["internal_error", "rate_limited", "too_many_connections", "too_many_conversations", "hello_timeout"]);
/** Error codes sent before the welcome that do not refuse the hello: the welcome still follows. */
const HELLO_NOTICES = new Set(["resume_invalid"]);

/** What an error frame answering a hello means: say it again later, wait for the welcome, or give up. */
export function helloErrorKind(code: string): "retry" | "notice" | "refused" {
  if (HELLO_RETRYABLE.has(code)) return "retry";
  if (HELLO_NOTICES.has(code)) return "notice";
  return "refused";
}

/** The gap before attempt `attempt` (1-based): exponential, capped, with up to half of it as jitter. */
export function backoff(attempt: number, random: () => number = Math.random): number {
  const full = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** Math.max(0, attempt - 1));
  return Math.round(full * (0.5 + random() * 0.5));
}

export class Connection {
  private socket: WebSocket | undefined;
  private attempt = 0;
  /** The failed attempts before the last welcome, counted on if the hello fails after its welcome. */
  private attemptBeforeWelcome = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private pongTimer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private welcomed = false;
  /** False while preconnected: the socket is up but the hello waits for start(). */
  private helloAllowed = true;
  private readonly options: ConnectionOptions;

  constructor(options: ConnectionOptions) {
    this.options = options;
  }

  start(): void {
    this.stopped = false;
    this.helloAllowed = true;
    if (!this.socket) this.open();
    else if (this.socket.readyState === 1) this.hello(this.socket);
    // Still connecting: its onopen says hello.
  }

  /**
   * Opens the socket now and says hello only at start(): the connection is set up while the app renders
   * and waits for the loader's init (the resume token the hello carries).
   */
  preconnect(): void {
    if (this.socket) return;
    this.helloAllowed = false;
    this.open();
  }

  /** Closes for good (the app is going away). */
  stop(): void {
    this.stopped = true;
    this.clearTimers();
    this.socket?.close(1000);
    this.socket = undefined;
  }

  /** True when the frame went out on an open, welcomed connection. */
  send(frame: ClientFrame): boolean {
    if (!this.socket || this.socket.readyState !== 1 || !this.welcomed) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  get ready(): boolean {
    return this.welcomed && this.socket?.readyState === 1;
  }

  /** Drops the line and says hello again at once (a new conversation: the resume token is read afresh). */
  restart(): void {
    this.stop();
    this.stopped = false;
    this.attempt = 0;
    this.open();
  }

  /** Skips the wait of a pending reconnect. */
  reconnectNow(): void {
    if (this.stopped || this.socket) return;
    clearTimeout(this.retryTimer);
    this.open();
  }

  private open(): void {
    const Impl = this.options.WebSocketImpl ?? WebSocket;
    this.options.onView({ phase: "connecting", attempt: this.attempt });
    let socket: WebSocket;
    try {
      socket = new Impl(this.options.url);
    } catch {
      this.scheduleRetry();
      return;
    }
    this.socket = socket;
    this.welcomed = false;
    socket.onopen = () => {
      if (this.helloAllowed) this.hello(socket);
    };
    socket.onmessage = (event: MessageEvent) => {
      if (this.socket !== socket || typeof event.data !== "string") return;
      const frame = readServerFrame(event.data);
      if (!frame) return;
      if (frame.t === "welcome") {
        this.welcomed = true;
        this.attemptBeforeWelcome = this.attempt;
        this.attempt = 0;
        this.startPings();
        this.options.onView({ phase: "open", attempt: 0 });
      }
      if (frame.t === "pong") clearTimeout(this.pongTimer);
      // An error without a ref answers the hello (before the welcome, or its backlog read after it).
      if (frame.t === "error" && frame.ref === undefined) {
        const kind = this.welcomed ? (frame.code === "internal_error" ? "retry" : "notice") : helloErrorKind(frame.code);
        if (kind === "retry") {
          // Shown as a dropped line (reconnecting), not as an error: this socket is dropped and a new one
          // says hello again, with the resume token and last seq read afresh at that time. The gaps keep
          // growing even when a welcome came in between.
          if (this.welcomed) this.attempt = this.attemptBeforeWelcome;
          this.drop(socket, 4000);
          if (!this.stopped) this.scheduleRetry();
          return;
        }
        if (kind === "refused") {
          // Saying hello again would get the same answer: stop, and let the app show why.
          this.drop(socket, 1000);
          this.options.onView({ phase: "refused", attempt: this.attempt });
          this.options.onFrame(frame);
          return;
        }
      }
      this.options.onFrame(frame);
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.welcomed = false;
      this.clearTimers();
      if (!this.stopped) this.scheduleRetry();
    };
    socket.onerror = () => {
      // onclose follows and schedules the retry.
    };
  }

  private hello(socket: WebSocket): void {
    const token = this.options.resumeToken();
    const hello: ClientFrame = {
      t: "hello",
      v: PROTOCOL_VERSION,
      agent: this.options.agent,
      capabilities: { forms: true, files: true, pages: true, questions: true },
      locale: this.options.locale,
      ...(token ? { resume: { token, after: this.options.lastSeq() } } : {}),
    };
    socket.send(JSON.stringify(hello));
  }

  /** Forget `socket` (its close no longer schedules anything) and close it. */
  private drop(socket: WebSocket, code: number): void {
    if (this.socket === socket) this.socket = undefined;
    this.welcomed = false;
    this.clearTimers();
    try {
      socket.close(code);
    } catch {
      // Already closing.
    }
  }

  private scheduleRetry(): void {
    // Preconnected and the line went (the gateway's hello timeout): nothing to resume; start() opens a new one.
    if (!this.helloAllowed) return;
    this.attempt += 1;
    const wait = backoff(this.attempt, this.options.random);
    const now = (this.options.now ?? Date.now)();
    const offline = typeof navigator !== "undefined" && navigator.onLine === false;
    this.options.onView({ phase: offline ? "offline" : "waiting", attempt: this.attempt, retryAt: now + wait });
    this.retryTimer = setTimeout(() => this.open(), wait);
  }

  private startPings(): void {
    clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => {
      if (!this.send({ t: "ping" })) return;
      clearTimeout(this.pongTimer);
      // No pong in time: the line is dead even if the socket has not noticed; close to reconnect.
      this.pongTimer = setTimeout(() => this.socket?.close(4000), PONG_WITHIN_MS);
    }, PING_EVERY_MS);
  }

  private clearTimers(): void {
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    clearTimeout(this.pongTimer);
  }
}
