// guardedFetch against a real HTTP server on loopback: it connects to the addresses its resolver answered,
// decodes the body as fetch does, and refuses a connection when any answer is a forbidden address.
import { createServer, type Server } from "node:http";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { guardedFetch, RemoteAddressRefused, REMOTE_LISTING_MESSAGE_BYTES_MAX, REMOTE_MESSAGE_BYTES_MAX } from "./remoteFetch.ts";

let server: Server;
let port = 0;
let connections = 0;
const seen: { method: string; auth: string | undefined; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", auth: req.headers.authorization, body });
      if (req.url === "/gzip") return void res.writeHead(200, { "content-encoding": "gzip", "content-type": "text/plain" }).end(gzipSync("hello, decoded"));
      if (req.url === "/events" || req.url === "/one-event") {
        // 56 MiB either way: 1 MiB events, or one event that never ends.
        res.writeHead(200, { "content-type": "text/event-stream" });
        const line = `data: ${"x".repeat(1024 * 1024 - 8)}\n`;
        for (let index = 0; index < 56; index++) res.write(req.url === "/events" ? `${line}\n` : line);
        return void res.end();
      }
      // An answer of 9 MiB, whatever was asked: over the listing's bound, under any other message's.
      if (req.url === "/nine") return void res.writeHead(200, { "content-type": "application/json" }).end(Buffer.alloc(9 * 1024 * 1024, " "));
      if (req.url === "/moved") return void res.writeHead(307, { location: "https://elsewhere.test/" }).end();
      res.writeHead(201, { "content-type": "application/json", "x-two": "a" }).end(JSON.stringify({ echoed: body }));
    });
  });
  server.on("connection", () => void (connections += 1));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("guardedFetch", () => {
  it("connects to its resolver's answer, sends method, headers and body, decodes gzip, and leaves redirects unfollowed", async () => {
    const asked: string[] = [];
    const fetch = guardedFetch({ allowPrivateNetwork: true, resolve: async (host) => (asked.push(host), ["127.0.0.1"]) });
    try {
      const posted = await fetch(`http://only-here.test:${port}/echo`, { method: "POST", headers: { authorization: "Bearer t" }, body: '{"a":1}' });
      expect([posted.status, posted.headers.get("x-two"), await posted.json()]).toEqual([201, "a", { echoed: '{"a":1}' }]);
      expect(seen.at(-1)).toEqual({ method: "POST", auth: "Bearer t", body: '{"a":1}' });
      expect(await (await fetch(`http://only-here.test:${port}/gzip`)).text()).toBe("hello, decoded");
      const moved = await fetch(`http://only-here.test:${port}/moved`, { redirect: "manual" });
      expect([moved.status, moved.headers.get("location")]).toEqual([307, "https://elsewhere.test/"]);
      expect(new Set(asked)).toEqual(new Set(["only-here.test"]));
    } finally {
      fetch.close();
    }
  });

  it("refuses a connection when any answer is private, loopback or link-local, and plain http or IP literals without the allowance", async () => {
    const before = connections;
    for (const answers of [["93.184.216.34", "10.0.0.1"], ["127.0.0.1"], ["169.254.169.254"], ["fd00::1"], []]) {
      const fetch = guardedFetch({ resolve: async () => answers });
      const refused = await fetch(`https://mixed.test:${port}/echo`).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(Error);
      expect(refused).toBeInstanceOf(RemoteAddressRefused);
      expect((refused as Error).message).toMatch(/^remote_address_private: mixed.test resolved to/);
      expect(fetch.refusal()).toMatchObject({ code: "remote_address_private" });
      fetch.close();
    }
    const plain = guardedFetch({ resolve: async () => ["93.184.216.34"] });
    await expect(plain(`http://public.test:${port}/`)).rejects.toMatchObject({ code: "remote_url_insecure" });
    await expect(plain(`https://127.0.0.1:${port}/`)).rejects.toBeInstanceOf(RemoteAddressRefused);
    expect(plain.refusal()).toMatchObject({ code: "remote_url_insecure" });
    plain.close();
    expect(connections).toBe(before);
  });

  it("reads an answer to tools/list up to the listing's bound only (alone or in a batch); any other request's up to the message bound", async () => {
    const fetch = guardedFetch({ allowPrivateNetwork: true, resolve: async () => ["127.0.0.1"] });
    const post = (body: unknown) => fetch(`http://nine.test:${port}/nine`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then((response) => response.arrayBuffer());
    try {
      expect(REMOTE_LISTING_MESSAGE_BYTES_MAX).toBeLessThan(9 * 1024 * 1024);
      await expect(post({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })).rejects.toThrow();
      await expect(post([{ jsonrpc: "2.0", id: 1, method: "tools/list" }, { jsonrpc: "2.0", id: 2, method: "tools/list", params: { cursor: "2" } }])).rejects.toThrow();
      expect((await post({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "get_invoice", arguments: {} } })).byteLength).toBe(9 * 1024 * 1024);
    } finally {
      fetch.close();
    }
  });

  it("reads an event stream of any length, but not one event over the message bound", async () => {
    expect(REMOTE_MESSAGE_BYTES_MAX).toBeLessThan(56 * 1024 * 1024);
    const fetch = guardedFetch({ allowPrivateNetwork: true, resolve: async () => ["127.0.0.1"] });
    try {
      const events = await (await fetch(`http://stream.test:${port}/events`)).arrayBuffer();
      expect(events.byteLength).toBe(56 * 1024 * 1024);
      await expect((await fetch(`http://stream.test:${port}/one-event`)).arrayBuffer()).rejects.toThrow();
    } finally {
      fetch.close();
    }
  });
});
