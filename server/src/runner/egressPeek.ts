// What a package's first bytes through an egress tunnel name: the server name (SNI) of a TLS ClientHello
// on port 443, the Host of an HTTP request on port 80. The tunnel was opened for one listed host, but the
// bytes inside it choose which site a shared front end (a CDN, a virtual host) serves: a ClientHello naming
// another host through a tunnel to a listed one reaches that other site ("domain fronting"). The proxy
// reads these bytes before it forwards any, and closes a tunnel whose bytes name another host.

/** More bytes are needed; the bytes name a host (null: none); or they are not what the port carries. */
export type Peek = { state: "more" } | { state: "named"; name: string | null } | { state: "invalid"; message: string };

const MORE: Peek = { state: "more" };
const invalid = (message: string): Peek => ({ state: "invalid", message });

/** Bytes read at most before the first message is whole: a ClientHello of several records, or an HTTP head. */
export const PEEK_BYTES_MAX = 64 * 1024;

const TLS_HANDSHAKE = 22;
const CLIENT_HELLO = 1;
const SERVER_NAME_EXTENSION = 0;
const HOST_NAME = 0;

/**
 * The server name a TLS ClientHello at the start of `bytes` asks for. The ClientHello may span several
 * handshake records; anything else first (a record of another type, another handshake message, a malformed
 * one) is invalid.
 */
export function tlsServerName(bytes: Buffer): Peek {
  const payload: Buffer[] = [];
  let offset = 0;
  for (;;) {
    if (bytes.length < offset + 5) return MORE;
    if (bytes[offset] !== TLS_HANDSHAKE) return invalid("the first bytes are not a TLS handshake");
    const length = bytes.readUInt16BE(offset + 3);
    if (length === 0 || length > 16384) return invalid("a TLS record of an impossible length");
    if (bytes.length < offset + 5 + length) return MORE;
    payload.push(bytes.subarray(offset + 5, offset + 5 + length));
    offset += 5 + length;
    const handshake = Buffer.concat(payload);
    if (handshake.length < 4) continue;
    if (handshake[0] !== CLIENT_HELLO) return invalid("the first TLS handshake message is not a ClientHello");
    const helloLength = handshake.readUIntBE(1, 3);
    if (helloLength > PEEK_BYTES_MAX) return invalid("a ClientHello over 64 KiB");
    if (handshake.length >= 4 + helloLength) return helloServerName(handshake.subarray(4, 4 + helloLength));
  }
}

/** The server_name extension's host name in a ClientHello's body, null when it has none. */
function helloServerName(hello: Buffer): Peek {
  let at = 2 + 32; // version, random
  const skip = (lengthBytes: number): boolean => {
    if (hello.length < at + lengthBytes) return false;
    at += lengthBytes + hello.readUIntBE(at, lengthBytes);
    return at <= hello.length;
  };
  // session id, cipher suites, compression methods
  if (!skip(1) || !skip(2) || !skip(1)) return invalid("a malformed ClientHello");
  if (at === hello.length) return { state: "named", name: null };
  if (hello.length < at + 2) return invalid("a malformed ClientHello");
  const end = at + 2 + hello.readUInt16BE(at);
  if (end > hello.length) return invalid("a malformed ClientHello");
  at += 2;
  while (at + 4 <= end) {
    const type = hello.readUInt16BE(at);
    const length = hello.readUInt16BE(at + 2);
    const data = hello.subarray(at + 4, at + 4 + length);
    at += 4 + length;
    if (at > end) return invalid("a malformed ClientHello");
    if (type !== SERVER_NAME_EXTENSION) continue;
    if (data.length < 2 || data.readUInt16BE(0) !== data.length - 2) return invalid("a malformed server name");
    for (let entry = 2; entry + 3 <= data.length; ) {
      const nameType = data[entry]!;
      const nameLength = data.readUInt16BE(entry + 1);
      const name = data.subarray(entry + 3, entry + 3 + nameLength);
      if (name.length !== nameLength) return invalid("a malformed server name");
      if (nameType === HOST_NAME) return { state: "named", name: name.toString("latin1") };
      entry += 3 + nameLength;
    }
    return { state: "named", name: null };
  }
  return { state: "named", name: null };
}

/**
 * The host an HTTP/1 request at the start of `bytes` names: its Host header, and the host of an
 * absolute-form target too (both must name the same one). A request without a Host is invalid.
 */
export function httpRequestHost(bytes: Buffer): Peek {
  const end = bytes.indexOf("\r\n\r\n");
  if (end === -1) return bytes.length > PEEK_BYTES_MAX ? invalid("an HTTP request head over 64 KiB") : MORE;
  const [requestLine = "", ...headers] = bytes.subarray(0, end).toString("latin1").split("\r\n");
  const request = /^[A-Z]+ (\S+) HTTP\/1\.[01]$/.exec(requestLine);
  if (!request) return invalid("the first bytes are not an HTTP/1 request");
  const hosts = headers.filter((line) => /^host:/i.test(line)).map((line) => line.slice(5).trim());
  if (hosts.length !== 1) return invalid(hosts.length === 0 ? "an HTTP request without a Host header" : "an HTTP request with several Host headers");
  const host = hostOf(hosts[0]!);
  if (host === undefined) return invalid("an HTTP request whose Host is not host[:port]");
  const target = request[1]!;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) {
    let named: string;
    try {
      named = new URL(target).hostname;
    } catch {
      return invalid("an HTTP request whose target is not a URL");
    }
    if (named.toLowerCase() !== host) return { state: "named", name: named };
  }
  return { state: "named", name: host };
}

/** The host of a Host header's value (without its port), lower case; undefined when malformed. */
function hostOf(value: string): string | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+)(?::[0-9]{1,5})?$/.exec(value);
  return match ? match[1]!.toLowerCase() : undefined;
}
