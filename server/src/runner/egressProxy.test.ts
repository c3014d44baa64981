// The egress proxy's socket as a package meets it: CONNECT only, refusals by code, and a cap on how many
// connections one package process may hold open (each would hold the server's file descriptors).
import { connect, createServer, type Server, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { EGRESS_CONNECTIONS_MAX, openEgressSocket, type EgressEvent, type EgressSocket } from "./egressProxy.ts";

let proxy: EgressSocket | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});

/** Opens a connection; resolves with it once connected, and records whether the proxy closed it. */
function open(path: string): Promise<{ socket: Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ path });
    const closed = new Promise<void>((done) => socket.once("close", () => done()));
    socket.once("error", reject);
    socket.once("connect", () => resolve({ socket, closed }));
  });
}

/** Sends a request head and reads the proxy's answer (status line and refusal code). */
function ask(socket: Socket, head: string): Promise<{ status: string; code?: string }> {
  return new Promise((resolve) => {
    let data = "";
    socket.on("data", (chunk: Buffer) => {
      data += chunk.toString("latin1");
      if (data.includes("\r\n\r\n")) resolve({ status: data.split("\r\n")[0]!, code: /x-caplo-egress: (\S+)/.exec(data)?.[1] });
    });
    socket.write(`${head}\r\n\r\n`);
  });
}

describe("egress proxy socket", () => {
  it("answers each connection with the rule's refusal code", async () => {
    proxy = await openEgressSocket({ egress: ["api.shop.example"] });
    const { socket } = await open(proxy.socketPath);
    expect(await ask(socket, "CONNECT 10.0.0.1:443 HTTP/1.1")).toEqual({ status: "HTTP/1.1 403 Forbidden", code: "egress_ip_literal" });
    const other = await open(proxy.socketPath);
    expect(await ask(other.socket, "GET http://api.shop.example/ HTTP/1.1")).toEqual({ status: "HTTP/1.1 405 Method Not Allowed", code: "egress_method" });
  });

  it("refuses a request head over 8 KiB (without its end) as a bad request, once", async () => {
    proxy = await openEgressSocket({ egress: ["api.shop.example"] });
    const { socket, closed } = await open(proxy.socketPath);
    let data = "";
    socket.on("data", (chunk: Buffer) => (data += chunk.toString("latin1")));
    socket.write(`CONNECT api.shop.example:443 HTTP/1.1\r\nx-pad: ${"a".repeat(8 * 1024)}`);
    socket.write("b".repeat(4096));
    await closed;
    expect(data.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
    expect(data.match(/HTTP\/1\.1/g)).toHaveLength(1);
    expect(data).toContain("x-caplo-egress: egress_bad_request");
  });

  it(`holds at most maxConnections open (default ${EGRESS_CONNECTIONS_MAX}); one more is closed at once, and a freed place is usable again`, async () => {
    proxy = await openEgressSocket({ egress: [], maxConnections: 3 });
    const held = await Promise.all([1, 2, 3].map(() => open(proxy!.socketPath)));
    const extra = await open(proxy.socketPath);
    await extra.closed; // closed by the proxy without an answer
    // The three held connections still work.
    for (const { socket } of held) expect((await ask(socket, "CONNECT 127.0.0.1:80 HTTP/1.1")).code).toBe("egress_ip_literal");
    // Each answered refusal ended its connection: places are free again.
    await Promise.all(held.map(({ closed }) => closed));
    const again = await open(proxy.socketPath);
    expect((await ask(again.socket, "CONNECT api.shop.example:443 HTTP/1.1")).code).toBe("egress_host_not_listed");
  });
});

describe("the first message in a tunnel", () => {
  let upstream: Server | undefined;
  afterEach(async () => {
    await new Promise((done) => (upstream ? upstream.close(done) : done(undefined)));
    upstream = undefined;
  });

  /** A listed host mapped (as an operator's CAPLO_EGRESS_RESOLVE would) to a local server that keeps what it is sent. */
  async function tunnelTo(port: 443 | 80) {
    const received: Buffer[] = [];
    upstream = createServer((socket) => socket.on("data", (chunk: Buffer) => received.push(chunk)).on("error", () => undefined));
    await new Promise<void>((done) => upstream!.listen(0, "127.0.0.1", done));
    const events: EgressEvent[] = [];
    proxy = await openEgressSocket({
      egress: ["api.shop.example"],
      overrides: [{ host: "api.shop.example", address: "127.0.0.1", port: (upstream.address() as { port: number }).port }],
      onEvent: (event) => events.push(event),
    });
    const { socket, closed } = await open(proxy.socketPath);
    expect((await ask(socket, `CONNECT api.shop.example:${port} HTTP/1.1`)).status).toBe("HTTP/1.1 200 Connection Established");
    socket.removeAllListeners("data");
    return { socket, closed, events, received: () => Buffer.concat(received) };
  }

  const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

  it("a TLS ClientHello naming another host than the tunnel's (domain fronting) is never forwarded: the tunnel is closed and the refusal recorded", async () => {
    const tunnel = await tunnelTo(443);
    const tls = tlsConnect({ socket: tunnel.socket, servername: "evil.example", rejectUnauthorized: false });
    tls.on("error", () => undefined);
    await tunnel.closed;
    await settle();
    expect(tunnel.received().length).toBe(0);
    expect(tunnel.events.at(-1)).toMatchObject({ host: "api.shop.example", allowed: false, refusal: { code: "egress_name_mismatch", message: expect.stringContaining('"evil.example"') } });
  });

  it("a ClientHello naming the tunnel's own host goes through, as do plain bytes on 443 not at all", async () => {
    const tunnel = await tunnelTo(443);
    const tls = tlsConnect({ socket: tunnel.socket, servername: "API.shop.example", rejectUnauthorized: false });
    tls.on("error", () => undefined);
    await settle();
    expect(tunnel.received()[0]).toBe(22);
    expect(tunnel.events.map((event) => event.allowed)).toEqual([true]);
    tls.destroy();

    const plain = await tunnelTo(443);
    plain.socket.write("GET / HTTP/1.1\r\nHost: api.shop.example\r\n\r\n");
    await plain.closed;
    expect(plain.received().length).toBe(0);
    expect(plain.events.at(-1)).toMatchObject({ allowed: false, refusal: { code: "egress_not_tls" } });
  });

  it("on port 80 an HTTP request for another host is never forwarded; one for the tunnel's host is, whole", async () => {
    const fronted = await tunnelTo(80);
    fronted.socket.write("GET /steal HTTP/1.1\r\nHost: evil.example\r\n\r\n");
    await fronted.closed;
    expect(fronted.received().length).toBe(0);
    expect(fronted.events.at(-1)).toMatchObject({ allowed: false, refusal: { code: "egress_name_mismatch" } });

    const own = await tunnelTo(80);
    // In two pieces: nothing goes up until the head is whole, then all of it.
    own.socket.write("GET /orders HTTP/1.1\r\nHo");
    await settle();
    expect(own.received().length).toBe(0);
    own.socket.write("st: api.shop.example\r\n\r\nand a body");
    await settle();
    expect(own.received().toString()).toBe("GET /orders HTTP/1.1\r\nHost: api.shop.example\r\n\r\nand a body");
    own.socket.destroy();
  });
});

