// A real `ws` client for gateway tests: collects server frames and waits for the ones a test expects.
import WebSocket from "ws";
import { serverFrameSchema, type ServerFrame } from "@caplo/shared";

export class TestClient {
  readonly ws: WebSocket;
  readonly frames: ServerFrame[] = [];
  closed: { code: number; reason: string } | undefined;
  private waiters: (() => void)[] = [];

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on("message", (data) => {
      // Every frame the server sends must be a valid protocol frame.
      this.frames.push(serverFrameSchema.parse(JSON.parse(String(data))));
      for (const wake of this.waiters.splice(0)) wake();
    });
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: String(reason) };
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  static open(url: string, origin: string): Promise<TestClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { origin });
      const client = new TestClient(ws);
      ws.once("open", () => resolve(client));
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  async waitFor<T extends ServerFrame>(predicate: (frame: ServerFrame) => frame is T, timeoutMs?: number): Promise<T>;
  async waitFor(predicate: (frame: ServerFrame) => boolean, timeoutMs?: number): Promise<ServerFrame>;
  async waitFor(predicate: (frame: ServerFrame) => boolean, timeoutMs = 5000): Promise<ServerFrame> {
    const deadline = Date.now() + timeoutMs;
    let seen = 0;
    for (;;) {
      for (; seen < this.frames.length; seen++) if (predicate(this.frames[seen]!)) return this.frames[seen]!;
      if (this.closed) throw new Error(`connection closed (${this.closed.code}) before the expected frame; got ${JSON.stringify(this.frames)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; frames: ${JSON.stringify(this.frames)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The conversation events received, in order of arrival. */
  events() {
    return this.frames.flatMap((frame) => (frame.t === "event" ? [frame] : []));
  }

  async hello(agent: string, resume?: { token: string; after: number }) {
    this.send({ t: "hello", v: 1, agent, capabilities: { forms: true, files: false, pages: false, questions: true }, ...(resume && { resume }) });
    return this.waitFor((frame): frame is Extract<ServerFrame, { t: "welcome" }> => frame.t === "welcome");
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once("close", () => resolve());
      this.ws.close();
    });
  }
}

export type Frame<T extends ServerFrame["t"]> = Extract<ServerFrame, { t: T }>;

/** Whether a frame is of type `t` (narrowed to it) and passes `extra`. */
export const isT =
  <T extends ServerFrame["t"]>(t: T, extra: (frame: Frame<T>) => boolean = () => true) =>
  (frame: ServerFrame): frame is Frame<T> =>
    frame.t === t && extra(frame as Frame<T>);

/** Whether a frame is the ack or error answering the frame sent with `ref`. */
export const answerTo = (ref: string) => (frame: ServerFrame) => (frame.t === "ack" || frame.t === "error") && frame.ref === ref;

/** Asks the shop agent to cancel `orderId` (SHOP_RULES answer with a review card) and returns the card's proposalId. */
export async function proposeCancel(c: TestClient, orderId: string): Promise<string> {
  c.send({ t: "in", ref: `m-${orderId}`, event: { type: "message", text: `please cancel ${orderId}` } });
  const review = await c.waitFor(isT("event", (frame) => frame.message.type === "review"));
  return (review.message as { proposalId: string }).proposalId;
}

/** Opens a conversation with the shop agent on `c` with a proposal to cancel `orderId`: the welcome and the card's proposalId. */
export async function openProposal(c: TestClient, orderId: string): Promise<{ welcome: Frame<"welcome">; proposalId: string }> {
  const welcome = await c.hello("shop-agent");
  return { welcome, proposalId: await proposeCancel(c, orderId) };
}

/** The clients a test file opens, every one closed by closeAll (from afterEach). */
export class OpenClients {
  private readonly opened: TestClient[] = [];

  async open(url: string, origin: string): Promise<TestClient> {
    const client = await TestClient.open(url, origin);
    this.opened.push(client);
    return client;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.opened.splice(0).map((client) => client.close()));
  }
}
