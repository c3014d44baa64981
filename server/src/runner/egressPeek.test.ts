// The first message of an egress tunnel as the proxy reads it: real ClientHellos from Node's TLS (captured
// from a socket, never sent anywhere) and HTTP request heads.
import { Duplex } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import { describe, expect, it } from "vitest";
import { httpRequestHost, PEEK_BYTES_MAX, tlsServerName } from "./egressPeek.ts";

/** The bytes Node's TLS client sends first with these options: its ClientHello. */
function clientHello(options: { servername?: string }): Promise<Buffer> {
  return new Promise((resolve) => {
    const socket = new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, done) {
        resolve(Buffer.from(chunk));
        done();
      },
    });
    const tls = tlsConnect({ socket, ...options, rejectUnauthorized: false });
    tls.on("error", () => undefined);
    setTimeout(() => tls.destroy(), 100);
  });
}

describe("tlsServerName", () => {
  it("reads the server name of Node's ClientHello, whole or in pieces, and none when it sends none", async () => {
    const hello = await clientHello({ servername: "api.shop.example" });
    expect(hello[0]).toBe(22);
    expect(tlsServerName(hello)).toEqual({ state: "named", name: "api.shop.example" });
    for (const cut of [0, 1, 4, 5, 40, hello.length - 1]) expect(tlsServerName(hello.subarray(0, cut))).toEqual({ state: "more" });
    // An IP address as the host: Node sends no server name.
    expect(tlsServerName(await clientHello({ servername: "" }))).toEqual({ state: "named", name: null });
  });

  it("reads a ClientHello split over several TLS records", async () => {
    const hello = await clientHello({ servername: "api.shop.example" });
    const handshake = hello.subarray(5, 5 + hello.readUInt16BE(3));
    const record = (part: Buffer) => Buffer.concat([Buffer.from([22, 3, 1, part.length >> 8, part.length & 0xff]), part]);
    const split = Buffer.concat([record(handshake.subarray(0, 3)), record(handshake.subarray(3, 100)), record(handshake.subarray(100))]);
    expect(tlsServerName(split)).toEqual({ state: "named", name: "api.shop.example" });
  });

  it("calls anything else invalid: plain text, another record type, another handshake message, a truncated extension", async () => {
    expect(tlsServerName(Buffer.from("GET / HTTP/1.1\r\n\r\n"))).toMatchObject({ state: "invalid" });
    expect(tlsServerName(Buffer.from([23, 3, 3, 0, 1, 0]))).toMatchObject({ state: "invalid" });
    expect(tlsServerName(Buffer.from([22, 3, 3, 0, 4, 2, 0, 0, 0]))).toMatchObject({ state: "invalid", message: "the first TLS handshake message is not a ClientHello" });
    const hello = await clientHello({ servername: "api.shop.example" });
    const broken = Buffer.from(hello);
    // The extensions' total length says more than the ClientHello holds. After the record and handshake
    // headers, the version and the random: the session id, the cipher suites, the compression methods.
    const sessionIdAt = 5 + 4 + 2 + 32;
    const suitesAt = sessionIdAt + 1 + broken[sessionIdAt]!;
    const afterSuites = suitesAt + 2 + broken.readUInt16BE(suitesAt);
    const afterCompression = afterSuites + 1 + broken[afterSuites]!;
    broken.writeUInt16BE(0xffff, afterCompression);
    expect(tlsServerName(broken)).toEqual({ state: "invalid", message: "a malformed ClientHello" });
  });
});

describe("httpRequestHost", () => {
  it("reads the Host of an HTTP/1 request, without its port, and the host of an absolute target", () => {
    expect(httpRequestHost(Buffer.from("GET /orders HTTP/1.1\r\nHost: API.shop.example:80\r\n\r\n"))).toEqual({ state: "named", name: "api.shop.example" });
    expect(httpRequestHost(Buffer.from("GET http://evil.example/ HTTP/1.1\r\nHost: api.shop.example\r\n\r\n"))).toEqual({ state: "named", name: "evil.example" });
    expect(httpRequestHost(Buffer.from("GET / HTTP/1.1\r\nHost: api.shop.example"))).toEqual({ state: "more" });
  });

  it("calls a request without one Host, with a malformed one, or not HTTP/1 invalid; a head over 64 KiB too", () => {
    expect(httpRequestHost(Buffer.from("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"))).toEqual({ state: "invalid", message: "an HTTP request without a Host header" });
    expect(httpRequestHost(Buffer.from("GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n"))).toEqual({ state: "invalid", message: "an HTTP request with several Host headers" });
    expect(httpRequestHost(Buffer.from("GET / HTTP/1.1\r\nHost: a.example b\r\n\r\n"))).toMatchObject({ state: "invalid" });
    expect(httpRequestHost(Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))).toMatchObject({ state: "invalid" });
    expect(httpRequestHost(Buffer.alloc(PEEK_BYTES_MAX + 1, "a"))).toEqual({ state: "invalid", message: "an HTTP request head over 64 KiB" });
  });
});
