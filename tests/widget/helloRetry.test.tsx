// @vitest-environment happy-dom
// The widget's hello during a store outage, against the REAL gateway and engine (tests/gateway/support's
// stack: SQLite store, scripted model) and the widget's real app and connection code over `ws` sockets.
// The store's hello read (findConversationByResume, the first thing a resuming hello asks the store) throws
// as a stopped PostgreSQL does until the test releases it, so the gateway answers the hello with
// `internal_error` on the open socket (what tests/faults/postgresRestart.test.ts saw). The widget must say
// hello again on a new socket after growing gaps, show the same "Connection lost" state as for a dropped
// line, and resume with its token and last seq, getting the events it missed once and in order; a hello
// refused for good (unknown agent, origin not allowed, another protocol version) is not said again.
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/preact";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import WebSocket from "ws";
import type { ClientFrame, ServerFrame } from "@caplo/shared";
import { App } from "../../widget/src/app/components/App.tsx";
import { backoff, Connection } from "../../widget/src/app/connection.ts";
import type { ConnectionView } from "../../widget/src/app/conversation.ts";
import { WidgetStorage } from "../../widget/src/app/storage.ts";
import type { ScriptedRule } from "../../server/src/model/scripted.ts";
import { TestClient } from "../gateway/support/client.ts";
import { ORIGIN, OTHER_ORIGIN, startStack, type Stack } from "../gateway/support/stack.ts";

const AGENT = "shop-agent";
const RULES: ScriptedRule[] = [{ when: /^say /, replies: [{ text: "You said: {{user}}" }] }];

let stack: Stack;
/** While true the store's hello read throws; every call it refused is counted. */
let storeDown = false;
let refusedReads = 0;
/** How many more reads of a conversation's events (the hello's backlog, after its welcome) throw. */
let failEventReads = 0;

beforeAll(async () => {
  stack = await startStack({ rules: RULES });
  const store = stack.store;
  const read = store.findConversationByResume.bind(store);
  store.findConversationByResume = async (resumeHash) => {
    if (storeDown) {
      refusedReads += 1;
      throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
    }
    return read(resumeHash);
  };
  // The events a hello sends after its welcome come through the engine (from its memory of recent events
  // when it has them, else the store), so the failure is put there.
  const engine = stack.engine;
  const eventsAfter = engine.eventsAfter.bind(engine);
  engine.eventsAfter = async (...args) => {
    if (failEventReads > 0) {
      failEventReads -= 1;
      throw new Error("Connection terminated unexpectedly");
    }
    return eventsAfter(...args);
  };
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

afterEach(() => {
  cleanup();
  localStorage.clear();
  sessionStorage.clear();
  storeDown = false;
  refusedReads = 0;
  failEventReads = 0;
});

/** A socket the widget opened: what it said and every frame it got, in order. */
interface Opened {
  ws: WebSocket;
  sent: ClientFrame[];
  got: ServerFrame[];
}

/**
 * The `ws` WebSocket as the widget's WebSocketImpl, from `origin`, recording every socket the widget opens.
 * `rewrite` changes a frame on its way out (to speak as a widget of another protocol version would).
 */
function sockets(origin: string, rewrite: (frame: ClientFrame) => unknown = (frame) => frame) {
  const opened: Opened[] = [];
  class RecordedSocket extends WebSocket {
    constructor(url: string) {
      super(url, { origin });
      const record: Opened = { ws: this, sent: [], got: [] };
      opened.push(record);
      this.addEventListener("message", (event) => record.got.push(JSON.parse(String(event.data)) as ServerFrame));
      const send = this.send.bind(this);
      this.send = ((data: string) => {
        const frame = JSON.parse(data) as ClientFrame;
        record.sent.push(frame);
        send(JSON.stringify(rewrite(frame)));
      }) as WebSocket["send"];
    }
  }
  return { opened, Impl: RecordedSocket as unknown as typeof globalThis.WebSocket };
}

const seqs = (frames: ServerFrame[]) => frames.flatMap((frame) => (frame.t === "event" ? [frame.seq] : []));
const params = (agent: string) => ({ agent, parentOrigin: null, locale: "en", color: null, theme: null, preload: false });

function mount(agent: string, Impl: typeof globalThis.WebSocket) {
  return render(<App params={params(agent)} url={stack.wsUrl} storage={new WidgetStorage(agent)} parent={null} WebSocketImpl={Impl} />);
}

const sendButton = () => screen.getByRole("button", { name: "Send" }) as HTMLButtonElement;

/** Types `text` and sends it once the widget is connected (the Send button is enabled). */
async function say(text: string) {
  const input = screen.getByLabelText("Your message");
  fireEvent.input(input, { target: { value: text } });
  await waitFor(() => expect(sendButton().disabled).toBe(false), { timeout: 5000 });
  fireEvent.keyDown(input, { key: "Enter" });
}

describe("a hello refused while the store is away", () => {
  test("is said again on new sockets, shown as reconnecting, and resumes with exactly the missed events once, in order", async () => {
    const { opened, Impl } = sockets(ORIGIN);
    const view = mount(AGENT, Impl);
    await waitFor(() => expect(opened[0]?.got.some((frame) => frame.t === "welcome")).toBe(true), { timeout: 5000 });
    await say("say one");
    await screen.findByText("You said: say one", {}, { timeout: 5000 });
    const welcome = opened[0]!.got.find((frame) => frame.t === "welcome")!;
    // The reply streams in (delta frames) before its stored event arrives.
    await waitFor(() => expect(seqs(opened[0]!.got)).toEqual([1, 2]), { timeout: 5000 });

    // Another tab of the same visitor stays connected through the outage and talks meanwhile.
    const other = await TestClient.open(stack.wsUrl, ORIGIN);
    await other.hello(AGENT, { token: welcome.resumeToken, after: 2 });

    // The store goes away and the widget's line drops: its hellos are now answered with internal_error.
    storeDown = true;
    opened[0]!.ws.terminate();
    await waitFor(() => expect(refusedReads).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
    // The same state as a dropped line, not an error banner.
    await screen.findByText(/Connection lost\. Reconnecting in/, {}, { timeout: 5000 });
    expect(screen.queryByRole("alert")).toBeNull();

    // Events stored while the widget cannot get in.
    other.send({ t: "in", ref: "o1", event: { type: "message", text: "say two" } });
    await other.waitFor((frame) => frame.t === "event" && frame.message.type === "text" && frame.message.text === "You said: say two", 10_000);
    expect(seqs(other.frames)).toEqual([3, 4]);
    storeDown = false;

    await screen.findByText("You said: say two", {}, { timeout: 15_000 });
    await waitFor(() => expect(screen.queryByText(/Connection lost|Connecting/)).toBeNull());

    const refused = opened.slice(1, -1);
    const resumed = opened.at(-1)!;
    expect(refused.length).toBeGreaterThanOrEqual(2);
    for (const socket of refused) {
      // Each refused socket: one hello with the token and the last seq, one internal_error, closed by the widget.
      expect(socket.sent).toEqual([expect.objectContaining({ t: "hello", resume: { token: welcome.resumeToken, after: 2 } })]);
      expect(socket.got).toEqual([expect.objectContaining({ t: "error", code: "internal_error" })]);
      expect(socket.ws.readyState).toBe(WebSocket.CLOSED);
    }
    // The resumed socket: the same conversation, and exactly the missed events, once, in order.
    expect(resumed.sent[0]).toMatchObject({ t: "hello", resume: { token: welcome.resumeToken, after: 2 } });
    expect(resumed.got[0]).toMatchObject({ t: "welcome", conversationId: welcome.conversationId });
    expect(seqs(resumed.got)).toEqual([3, 4]);

    // On screen: each message once, in order, and the widget can talk again.
    const log = view.container.textContent ?? "";
    for (const text of ["say one", "You said: say one", "say two", "You said: say two"]) expect(screen.getAllByText(text)).toHaveLength(1);
    expect(log.indexOf("You said: say one")).toBeLessThan(log.indexOf("say two"));
    expect(log.indexOf("say two")).toBeLessThan(log.indexOf("You said: say two"));
    await say("say three");
    await screen.findByText("You said: say three", {}, { timeout: 5000 });
    await waitFor(() => expect(seqs(resumed.got)).toEqual([3, 4, 5, 6]), { timeout: 5000 });
    await other.close();
  }, 40_000);

  test("the gaps between hellos grow by the reconnect backoff, and the count starts again after the welcome", async () => {
    const first = await TestClient.open(stack.wsUrl, ORIGIN);
    const welcome = await first.hello(AGENT);
    await first.close();
    storeDown = true;
    const { opened, Impl } = sockets(ORIGIN);
    const views: ConnectionView[] = [];
    const connection = new Connection({
      url: stack.wsUrl,
      agent: AGENT,
      locale: "en",
      resumeToken: () => welcome.resumeToken,
      lastSeq: () => 0,
      onFrame: () => undefined,
      onView: (next) => {
        views.push(next);
        if (next.phase === "waiting" && next.attempt >= 3) storeDown = false;
      },
      WebSocketImpl: Impl,
      random: () => 0,
      now: () => 1_000_000,
    });
    connection.start();
    try {
      await waitFor(() => expect(connection.ready).toBe(true), { timeout: 10_000 });
      const waits = views.filter((next) => next.phase === "waiting");
      // Attempt n waits backoff(n): half of the full gap with this jitter, the full gap doubling per attempt.
      expect(waits.map((next) => [next.attempt, next.retryAt! - 1_000_000])).toEqual([1, 2, 3].map((attempt) => [attempt, backoff(attempt, () => 0)]));
      expect(waits.map((next) => next.retryAt! - 1_000_000)).toEqual([250, 500, 1000]);
      expect(views.at(-1)).toEqual({ phase: "open", attempt: 0 });
      expect(opened).toHaveLength(4);
      expect(refusedReads).toBe(3);
    } finally {
      connection.stop();
    }
  }, 20_000);
  test("the backlog read fails after the welcome: internal_error, and a new hello gets the events once", async () => {
    const first = await TestClient.open(stack.wsUrl, ORIGIN);
    const welcome = await first.hello(AGENT);
    first.send({ t: "in", ref: "f1", event: { type: "message", text: "say before" } });
    await first.waitFor((frame) => frame.t === "event" && frame.message.type === "text" && frame.message.text === "You said: say before");
    await first.close();
    // This browser has the token but none of the events (they were said in another tab).
    new WidgetStorage(AGENT).saveResumeToken(welcome.resumeToken);
    failEventReads = 2;
    const { opened, Impl } = sockets(ORIGIN);
    mount(AGENT, Impl);
    await screen.findByText("You said: say before", {}, { timeout: 10_000 });
    expect(opened).toHaveLength(3);
    for (const socket of opened.slice(0, 2)) {
      expect(socket.sent).toEqual([expect.objectContaining({ t: "hello", resume: { token: welcome.resumeToken, after: 0 } })]);
      expect(socket.got).toEqual([expect.objectContaining({ t: "welcome" }), expect.objectContaining({ t: "error", code: "internal_error" })]);
    }
    expect(seqs(opened[2]!.got)).toEqual([1, 2]);
    expect(screen.getAllByText("say before")).toHaveLength(1);
    expect(screen.queryByRole("alert")).toBeNull();
  });

  test("a backlog read that keeps failing after each welcome still makes the gaps grow", async () => {
    const first = await TestClient.open(stack.wsUrl, ORIGIN);
    const welcome = await first.hello(AGENT);
    first.send({ t: "in", ref: "g1", event: { type: "message", text: "say again" } });
    await first.waitFor((frame) => frame.t === "event" && frame.message.type === "text" && frame.message.text === "You said: say again");
    await first.close();
    failEventReads = 3;
    const { Impl } = sockets(ORIGIN);
    const views: ConnectionView[] = [];
    const seen: number[] = [];
    const connection = new Connection({
      url: stack.wsUrl,
      agent: AGENT,
      locale: "en",
      resumeToken: () => welcome.resumeToken,
      lastSeq: () => seen.at(-1) ?? 0,
      onFrame: (frame) => {
        if (frame.t === "event") seen.push(frame.seq);
      },
      onView: (next) => views.push(next),
      WebSocketImpl: Impl,
      random: () => 0,
      now: () => 1_000_000,
    });
    connection.start();
    try {
      await waitFor(() => expect(seen).toEqual([1, 2]), { timeout: 10_000 });
      const waits = views.filter((next) => next.phase === "waiting");
      expect(waits.map((next) => [next.attempt, next.retryAt! - 1_000_000])).toEqual([
        [1, 250],
        [2, 500],
        [3, 1000],
      ]);
    } finally {
      connection.stop();
    }
  }, 20_000);
});

describe("a hello refused for good is not said again", () => {
  const cases: { name: string; agent: string; origin: string; rewrite?: (frame: ClientFrame) => unknown; code: string; shown: RegExp }[] = [
    { name: "an unknown agent", agent: "no-such-agent", origin: ORIGIN, code: "agent_unknown", shown: /no agent named no-such-agent/ },
    { name: "an origin the agent is not embedded on", agent: AGENT, origin: OTHER_ORIGIN, code: "origin_not_allowed", shown: /not embedded on https:\/\/other\.example/ },
    {
      name: "another protocol version",
      agent: AGENT,
      origin: ORIGIN,
      rewrite: (frame) => (frame.t === "hello" ? { ...frame, v: 2 } : frame),
      code: "protocol_unsupported",
      shown: /speaks protocol version 1/,
    },
  ];
  for (const { name, agent, origin, rewrite, code, shown } of cases) {
    test(`${name}: ${code} is shown, the socket is closed and no other is opened`, async () => {
      const { opened, Impl } = sockets(origin, rewrite);
      mount(agent, Impl);
      expect((await screen.findByRole("alert", {}, { timeout: 5000 })).textContent).toMatch(shown);
      await waitFor(() => expect(opened[0]!.ws.readyState).toBe(WebSocket.CLOSED), { timeout: 5000 });
      // The close has been handled (a retry would be scheduled, and shown, at that moment): none is.
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(opened[0]!.got).toEqual([expect.objectContaining({ t: "error", code })]);
      expect(opened).toHaveLength(1);
      expect(screen.queryByText(/Connection lost|Connecting/)).toBeNull();
      // Nothing can be sent on a refused connection.
      fireEvent.input(screen.getByLabelText("Your message"), { target: { value: "hello?" } });
      expect(sendButton().disabled).toBe(true);
    });
  }

  test("an unknown resume token is not a refusal: resume_invalid, then the welcome on the same socket, and the widget talks", async () => {
    new WidgetStorage(AGENT).saveResumeToken("a-token-this-gateway-never-gave");
    const { opened, Impl } = sockets(ORIGIN);
    mount(AGENT, Impl);
    await say("say hi");
    await screen.findByText("You said: say hi", {}, { timeout: 5000 });
    expect(opened).toHaveLength(1);
    expect(opened[0]!.got.slice(0, 2)).toEqual([
      expect.objectContaining({ t: "error", code: "resume_invalid" }),
      expect.objectContaining({ t: "welcome" }),
    ]);
  });
});
