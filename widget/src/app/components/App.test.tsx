// @vitest-environment happy-dom
// The app against a real WebSocket server on a loopback port (the `ws` package on both ends): hello,
// history, sending, acks, reconnect with resume, and history restored after a reload.
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/preact";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { WebSocket as NodeWebSocket, WebSocketServer } from "ws";
import type { AddressInfo } from "node:net";
import { clientFrameSchema, type ClientFrame, type ServerFrame } from "@caplo/shared/protocol";
import type { Outbound } from "@caplo/shared";
import { WidgetStorage } from "../storage.ts";
import { App } from "./App.tsx";

interface Gateway {
  url: string;
  frames: ClientFrame[];
  sockets: NodeWebSocket[];
  events: Outbound[];
  send(socket: NodeWebSocket, frame: ServerFrame): void;
  close(): Promise<void>;
}

/** A gateway stand-in that validates every client frame with the shared schema and replays history. */
async function startGateway(): Promise<Gateway> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0, path: "/v1/ws" });
  await new Promise((resolve) => wss.once("listening", resolve));
  const gw: Gateway = {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1/ws`,
    frames: [],
    sockets: [],
    events: [],
    send: (socket, frame) => socket.send(JSON.stringify(frame)),
    close: () => {
      for (const s of gw.sockets) s.terminate();
      return new Promise((resolve) => wss.close(() => resolve()));
    },
  };
  const emit = (socket: NodeWebSocket, message: Outbound) => {
    gw.events.push(message);
    gw.send(socket, { t: "event", seq: gw.events.length, at: new Date().toISOString(), message });
  };
  wss.on("connection", (socket) => {
    gw.sockets.push(socket);
    socket.on("message", (data) => {
      const frame = clientFrameSchema.parse(JSON.parse(String(data)));
      gw.frames.push(frame);
      if (frame.t === "hello") {
        gw.send(socket, { t: "welcome", v: 1, conversationId: "conv-1", resumeToken: "resume-1", verified: false });
        const after = frame.resume?.after ?? 0;
        gw.events.forEach((message, i) => {
          if (i + 1 > after) gw.send(socket, { t: "event", seq: i + 1, at: "2026-01-01T00:00:00Z", message });
        });
      } else if (frame.t === "in" && frame.event.type === "message") {
        gw.send(socket, { t: "ack", ref: frame.ref });
        emit(socket, { type: "text", id: `c${gw.events.length}`, from: "customer", text: frame.event.text });
        emit(socket, { type: "text", id: `a${gw.events.length}`, from: "agent", text: `You said: ${frame.event.text}` });
      }
    });
  });
  return gw;
}

let gw: Gateway;
beforeEach(async () => {
  localStorage.clear();
  sessionStorage.clear();
  gw = await startGateway();
  gw.events.push({ type: "text", id: "m0", from: "agent", text: "Hello! How can I help?" });
});
afterEach(async () => {
  cleanup();
  await gw.close();
});

const params = { agent: "shop", parentOrigin: null, locale: "en", color: null, theme: null, preload: false };
const mount = () =>
  render(<App params={params} url={gw.url} storage={new WidgetStorage("shop")} parent={null} WebSocketImpl={NodeWebSocket as unknown as typeof WebSocket} />);

describe("widget app over a real WebSocket", () => {
  test("says hello with its capabilities and shows the history it gets back", async () => {
    mount();
    await screen.findByText("Hello! How can I help?");
    expect(gw.frames[0]).toEqual({
      t: "hello",
      v: 1,
      agent: "shop",
      capabilities: { forms: true, files: true, pages: true, questions: true },
      locale: "en",
    });
  });

  test("a sent message goes out as an `in` frame and is shown once when the gateway echoes it", async () => {
    mount();
    await screen.findByText("Hello! How can I help?");
    const input = screen.getByLabelText("Your message");
    fireEvent.input(input, { target: { value: "Where is SO-1002?" } });
    fireEvent.keyDown(input, { key: "Enter" });
    await screen.findByText("You said: Where is SO-1002?");
    expect(screen.getAllByText("Where is SO-1002?")).toHaveLength(1);
    const sent = gw.frames.find((f) => f.t === "in");
    expect(sent).toMatchObject({ t: "in", event: { type: "message", text: "Where is SO-1002?" } });
    expect((input as HTMLTextAreaElement).value).toBe("");
  });

  test("a dropped connection shows the reconnect state, then resumes after the last event without repeats", async () => {
    mount();
    await screen.findByText("Hello! How can I help?");
    gw.sockets[0]!.terminate();
    await screen.findByText(/Connection lost/);
    await waitFor(() => expect(gw.frames.filter((f) => f.t === "hello")).toHaveLength(2), { timeout: 5000 });
    expect(gw.frames.at(-1)).toMatchObject({ t: "hello", resume: { token: "resume-1", after: 1 } });
    await waitFor(() => expect(screen.queryByText(/Connection lost/)).toBeNull());
    expect(screen.getAllByText("Hello! How can I help?")).toHaveLength(1);
  });

  test("after a reload the history is shown from storage and the app resumes after its last event", async () => {
    const first = mount();
    await screen.findByText("Hello! How can I help?");
    const input = screen.getByLabelText("Your message");
    fireEvent.input(input, { target: { value: "Hi" } });
    fireEvent.keyDown(input, { key: "Enter" });
    await screen.findByText("You said: Hi");
    first.unmount();
    await gw.close();
    gw = await startGateway(); // a gateway that does not answer with history: what shows comes from storage
    mount();
    expect(screen.getByText("Hello! How can I help?")).toBeTruthy();
    expect(screen.getByText("You said: Hi")).toBeTruthy();
    await waitFor(() => expect(gw.frames[0]).toMatchObject({ t: "hello", resume: { token: "resume-1", after: 3 } }));
  });
});
