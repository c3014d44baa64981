import { describe, expect, test, vi } from "vitest";
import { backoff, Connection, RECONNECT_BASE_MS, RECONNECT_MAX_MS } from "./connection.ts";

describe("reconnect backoff", () => {
  test("doubles per failed attempt from the base, with at most half of it as jitter", () => {
    expect(backoff(1, () => 1)).toBe(RECONNECT_BASE_MS);
    expect(backoff(1, () => 0)).toBe(RECONNECT_BASE_MS / 2);
    expect(backoff(2, () => 1)).toBe(RECONNECT_BASE_MS * 2);
    expect(backoff(4, () => 1)).toBe(RECONNECT_BASE_MS * 8);
  });

  test("never waits longer than the cap", () => {
    expect(backoff(50, () => 1)).toBe(RECONNECT_MAX_MS);
  });
});

describe("preconnect", () => {
  test("opens the socket at once and says hello only at start, on that same socket", async () => {
    const { WebSocket: NodeWebSocket, WebSocketServer } = await import("ws");
    const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise((resolve) => wss.once("listening", resolve));
    const connected: unknown[] = [];
    const said: string[] = [];
    wss.on("connection", (socket) => {
      connected.push(socket);
      socket.on("message", (data) => said.push(JSON.parse(String(data)).t));
    });
    const conn = new Connection({
      url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}`,
      agent: "shop",
      locale: "en",
      resumeToken: () => undefined,
      lastSeq: () => 0,
      onFrame: () => {},
      onView: () => {},
      WebSocketImpl: NodeWebSocket as unknown as typeof WebSocket,
    });
    try {
      conn.preconnect();
      await vi.waitFor(() => expect(connected).toHaveLength(1));
      // A round trip on another socket: anything the first one had sent would have arrived by now.
      const probe = new NodeWebSocket(`ws://127.0.0.1:${(wss.address() as { port: number }).port}`);
      await new Promise((resolve) => probe.once("open", resolve));
      probe.close();
      expect(said).toEqual([]);
      conn.start();
      await vi.waitFor(() => expect(said).toEqual(["hello"]));
      expect(connected).toHaveLength(2); // the preconnected socket and the probe: start opened no new one
    } finally {
      conn.stop();
      for (const client of wss.clients) client.terminate();
      await new Promise((resolve) => wss.close(resolve));
    }
  });
});
