// The benchmarks' WebSocket customer: hello/welcome (optionally resuming), one turn at a time, and a
// count of the conversation's events by seq, so a gap (an event lost) or a repeat shows. Plain JSON, no
// schema check per frame: on a 2-core machine the clients share the CPU with the servers.
import WebSocket from "ws";

export const ORIGIN = "https://shop.example";

export type Frame = {
  t: string;
  seq?: number;
  ref?: string;
  code?: string;
  conversationId?: string;
  resumeToken?: string;
  message?: { type: string; from?: string; text?: string; proposalId?: string; state?: string };
};

export type ConnectOptions = { agent?: string; origin?: string; resume?: { token: string; after: number } };

export class BenchClient {
  /** Highest event seq received in order; events come with seq lastSeq + 1. */
  lastSeq = 0;
  /** Events whose seq skipped ahead (lost in between) and events received again (seq already seen). */
  gaps = 0;
  repeats = 0;
  events = 0;
  closed = false;
  private waiters = new Set<{ match: (frame: Frame) => boolean; resolve: (frame: Frame) => void }>();

  readonly ws: WebSocket;
  readonly welcome: Frame;

  private constructor(ws: WebSocket, welcome: Frame) {
    this.ws = ws;
    this.welcome = welcome;
  }

  /** Open a connection and say hello (resuming if asked); resolves on welcome. */
  static open(url: string, options: ConnectOptions = {}): Promise<BenchClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { origin: options.origin ?? ORIGIN, perMessageDeflate: false });
      let client: BenchClient | undefined;
      const early: Frame[] = [];
      ws.once("error", reject);
      ws.once("unexpected-response", (_request, response) => reject(new Error(`HTTP ${response.statusCode} on the WebSocket upgrade`)));
      ws.once("open", () => ws.send(JSON.stringify({ t: "hello", v: 1, agent: options.agent ?? "shop-agent", capabilities: {}, ...(options.resume && { resume: options.resume }) })));
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data)) as Frame;
        if (!client) {
          if (frame.t === "welcome") {
            client = new BenchClient(ws, frame);
            if (options.resume) client.lastSeq = options.resume.after;
            ws.off("error", reject);
            ws.on("error", () => undefined);
            for (const before of early) client.receive(before);
            resolve(client);
          } else if (frame.t === "error") reject(new Error(`refused: ${frame.code}`));
          else early.push(frame);
          return;
        }
        client.receive(frame);
      });
      ws.on("close", () => {
        if (!client) return reject(new Error("closed before welcome"));
        client.closed = true;
        for (const waiter of client.waiters) waiter.resolve({ t: "closed" });
        client.waiters.clear();
      });
    });
  }

  private receive(frame: Frame): void {
    if (frame.t === "event" && frame.seq !== undefined) {
      this.events += 1;
      if (frame.seq <= this.lastSeq) this.repeats += 1;
      else {
        if (frame.seq !== this.lastSeq + 1) this.gaps += frame.seq - this.lastSeq - 1;
        this.lastSeq = frame.seq;
      }
    }
    for (const waiter of this.waiters) {
      if (waiter.match(frame)) {
        this.waiters.delete(waiter);
        waiter.resolve(frame);
      }
    }
  }

  /** The next frame matching, or a frame `{ t: "closed" }` / `{ t: "timeout" }`. */
  next(match: (frame: Frame) => boolean, timeoutMs = 60_000): Promise<Frame> {
    if (this.closed) return Promise.resolve({ t: "closed" });
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        resolve({ t: "timeout" });
      }, timeoutMs);
      timer.unref();
      const waiter = {
        match,
        resolve: (frame: Frame) => {
          clearTimeout(timer);
          resolve(frame);
        },
      };
      this.waiters.add(waiter);
    });
  }

  send(frame: unknown): void {
    this.ws.send(JSON.stringify(frame));
  }

  /** Send the customer's message and wait for the frame `until` picks; resolves with it. */
  say(text: string, ref: string, until: (frame: Frame) => boolean, timeoutMs?: number): Promise<Frame> {
    const answer = this.next(until, timeoutMs);
    this.send({ t: "in", ref, event: { type: "message", text } });
    return answer;
  }

  close(): void {
    this.ws.close();
  }
}

/** The agent's text reply: the end of a read turn. */
export const agentText = (frame: Frame) => frame.t === "event" && frame.message?.type === "text" && frame.message.from === "agent";
/** A write's review card (proposal). */
export const review = (frame: Frame) => frame.t === "event" && frame.message?.type === "review";
/** A write's final outcome event (applied, not applied, unknown...); pending is not final. */
export const outcome = (frame: Frame) => frame.t === "event" && frame.message?.type === "outcome" && !["proposed", "running", "pending"].includes(frame.message.state ?? "");

export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
