// An MCP Transport over a sandboxed child's stdin/stdout, with a cap on message size so a package
// cannot exhaust the runner's memory, and tolerant of stray non-protocol lines on stdout.
import type { ChildProcess } from "node:child_process";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { JSONRPCErrorResponseSchema, JSONRPCNotificationSchema, JSONRPCRequestSchema, JSONRPCResultResponseSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** Largest single message accepted from a package: 3 files of 10 MiB as base64 plus the result. */
export const MESSAGE_BYTES_MAX = 48 * 1024 * 1024;
/**
 * What a package may write to stdout while the runner waits for no answer from it (no call, status check,
 * ping or listing in flight): a late log line or a cancelled call's late answer, nothing more. Each byte
 * the runner reads it parses on its own thread, so a package that kept writing between calls (messages of
 * up to MESSAGE_BYTES_MAX, one after another) would take the server's CPU from every other customer.
 */
export const IDLE_BYTES_MAX = 1024 * 1024;
/**
 * What a package may write beside the answers while the runner waits (log lines, questions to the
 * visitor): each request in flight allows its answer (at most the message cap) and this much more. Past
 * it the package is stopped: log lines of up to the message cap, one after another until the call's
 * timeout, were parsed on the server's thread for up to 30 seconds a call.
 */
export const REQUEST_EXTRA_BYTES = 16 * 1024 * 1024;

/**
 * JSONRPCMessageSchema.parse without trying each kind in turn: the four kinds are strict objects told apart
 * by their keys (a request has method and id, a notification method only, a response result, an error
 * response error), so at most one of them can accept a message, and that one is the only one tried. Accepts
 * and rejects exactly what the union does, with the same output.
 */
export function parseMessage(value: unknown): JSONRPCMessage {
  const keys = value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  if (keys && "method" in keys) return "id" in keys ? JSONRPCRequestSchema.parse(value) : JSONRPCNotificationSchema.parse(value);
  if (keys && "result" in keys) return JSONRPCResultResponseSchema.parse(value);
  return JSONRPCErrorResponseSchema.parse(value);
}

export class ChildTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private buffer: Buffer = Buffer.alloc(0);
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private closed = false;
  private readonly child: ChildProcess;
  private readonly onStrayLine: (line: string) => void;
  private readonly maxBytes: number;
  private readonly idleBytesMax: number;
  /** Ids of the runner's requests the package has not answered (nor had cancelled). */
  private readonly awaiting = new Set<string>();
  /** Bytes read since the runner last waited for an answer. */
  private idleBytes = 0;
  /** Bytes the requests in flight still allow (REQUEST_EXTRA_BYTES and the message cap each). */
  private busyBudget = 0;
  private stopped = false;
  /** How many requests the runner has sent (a watch between two looks tells whether one was made). */
  requestsSent = 0;

  constructor(child: ChildProcess, onStrayLine: (line: string) => void, maxBytes = MESSAGE_BYTES_MAX, idleBytesMax = IDLE_BYTES_MAX) {
    this.child = child;
    this.onStrayLine = onStrayLine;
    this.maxBytes = maxBytes;
    this.idleBytesMax = idleBytesMax;
  }

  async start(): Promise<void> {
    this.child.stdout!.on("data", (chunk: Buffer) => this.receive(chunk));
    this.child.stdin!.on("error", (error) => this.onerror?.(error));
    this.child.once("close", () => this.finish());
  }

  /** Whether the runner waits for an answer from the package (a call, status check, ping or listing in flight). */
  get waiting(): boolean {
    return this.awaiting.size > 0;
  }

  /**
   * Counts bytes the package wrote (to stdout, or to stderr, which the runner reads too) against what the
   * requests in flight allow, or the bound between calls; false once it is over, and the package is being stopped.
   */
  count(bytes: number, stream: "stdout" | "stderr"): boolean {
    if (this.stopped) return false;
    if (this.awaiting.size > 0) {
      this.busyBudget -= bytes;
      if (this.busyBudget >= 0) return true;
      this.stop(`wrote more to ${stream} than its requests in flight allow (${this.maxBytes + REQUEST_EXTRA_BYTES} bytes each)`);
      return false;
    }
    this.idleBytes += bytes;
    if (this.idleBytes <= this.idleBytesMax) return true;
    this.stop(`wrote over ${this.idleBytesMax} bytes to ${stream} while no call was in flight`);
    return false;
  }

  private receive(chunk: Buffer): void {
    if (!this.count(chunk.length, "stdout")) return;
    // Chunks of a long line are kept apart and joined once, when its end arrives: joining on every chunk
    // copied a multi-MiB message hundreds of times (the runner's memory grew by hundreds of MiB).
    if (chunk.indexOf(10) === -1) {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      if (this.pendingBytes > this.maxBytes) this.oversize();
      return;
    }
    this.buffer = this.pending.length ? Buffer.concat([...this.pending, chunk]) : chunk;
    this.pending = [];
    this.pendingBytes = 0;
    for (;;) {
      const end = this.buffer.indexOf(10);
      if (end === -1) break;
      if (end > this.maxBytes) return this.oversize();
      const line = this.buffer.toString("utf8", 0, end).replace(/\r$/, "");
      this.buffer = this.buffer.subarray(end + 1);
      if (!line.trim()) continue;
      let message: JSONRPCMessage;
      try {
        message = parseMessage(JSON.parse(line));
      } catch {
        this.onStrayLine(line.slice(0, 2000));
        continue;
      }
      if (("result" in message || "error" in message) && message.id !== undefined) this.answered(String(message.id));
      this.onmessage?.(message);
    }
    if (this.buffer.length) {
      this.pending = [Buffer.from(this.buffer)];
      this.pendingBytes = this.buffer.length;
      if (this.pendingBytes > this.maxBytes) this.oversize();
    }
    this.buffer = Buffer.alloc(0);
  }

  /** The runner waits no more for this request; with none left, what the package writes is between calls. */
  private answered(id: string): void {
    this.awaiting.delete(id);
    if (this.awaiting.size === 0) this.busyBudget = 0;
  }

  /** A message over the cap: the package is stopped, nothing of it is parsed. */
  private oversize(): void {
    this.stop(`sent a message over ${this.maxBytes} bytes`);
  }

  /** Stops the package for what it wrote (the error says what, after "package "); nothing more of it is parsed. */
  private stop(what: string): void {
    this.stopped = true;
    this.buffer = Buffer.alloc(0);
    this.pending = [];
    this.pendingBytes = 0;
    this.child.stdout!.removeAllListeners("data");
    this.child.stderr?.removeAllListeners("data");
    this.onerror?.(new Error(`package ${what}`));
    this.child.kill("SIGKILL");
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || !this.child.stdin?.writable) throw new Error("package process is not running");
    if ("method" in message && "id" in message) {
      this.requestsSent += 1;
      this.awaiting.add(String(message.id));
      this.busyBudget += this.maxBytes + REQUEST_EXTRA_BYTES;
      this.idleBytes = 0;
    }
    // A cancelled request is answered by nobody: the runner no longer waits for it.
    if ("method" in message && message.method === "notifications/cancelled") this.answered(String((message.params as { requestId?: unknown } | undefined)?.requestId));
    const line = JSON.stringify(message) + "\n";
    await new Promise<void>((resolve, reject) => this.child.stdin!.write(line, (error) => (error ? reject(error) : resolve())));
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }

  async close(): Promise<void> {
    this.child.stdin?.end();
    this.finish();
  }
}
