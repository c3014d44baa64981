// The fetch every connection to a remote MCP server goes through (the MCP SDK's Streamable HTTP and SSE
// transports take it as their `fetch`). checkRemoteUrl resolves the host once before connecting, but
// the global fetch would resolve it again: a DNS-rebinding server could answer a public address to the
// check and 127.0.0.1, 10.x or 169.254.169.254 to the connection. Here each new connection resolves the
// host itself, in node:http(s)'s `lookup`, refuses it when any answer is a private, loopback or
// link-local address (unless the operator allows private networks), and connects only to the addresses
// it checked. Sockets live in an agent of this fetch's own, so none made under another rule is reused.
import { lookup as dnsLookup } from "node:dns/promises";
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { LISTING_BYTES_MAX } from "@caplo/shared";
import { isForbiddenAddress, isIpLiteral } from "../runner/egressRule.ts";

/** A host's addresses, as the system resolver answers them; replaceable in tests of the address rule. */
export type RemoteResolve = (host: string) => Promise<string[]>;

export type RemoteRefusal = { code: string; message: string };

/**
 * Thrown into a request whose connection was refused by the address rule; its `code` is stable and leads
 * its message, so a refusal on a later connection of an open session reaches the call's result by code.
 */
export class RemoteAddressRefused extends Error {
  readonly code: string;
  constructor(refusal: RemoteRefusal) {
    super(`${refusal.code}: ${refusal.message}`);
    this.name = "RemoteAddressRefused";
    this.code = refusal.code;
  }
}

export type GuardedFetch = ((input: string | URL, init?: RequestInit) => Promise<Response>) & {
  /** The first connection this fetch refused, if any (the SDK may wrap or replace the thrown error). */
  readonly refusal: () => RemoteRefusal | undefined;
  /** Closes every socket this fetch holds open. */
  readonly close: () => void;
};

export async function resolveAll(host: string): Promise<string[]> {
  const answers = await dnsLookup(host, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
}

/** Answers checked at connect time: every one must be public unless private networks are allowed. */
export function checkAnswers(host: string, addresses: readonly string[], allowPrivateNetwork: boolean): RemoteRefusal | undefined {
  if (addresses.length === 0) return { code: "remote_address_private", message: `${host} resolved to no address when connecting` };
  if (allowPrivateNetwork) return undefined;
  const forbidden = addresses.filter((address) => isForbiddenAddress(address));
  if (forbidden.length === 0) return undefined;
  return {
    code: "remote_address_private",
    message: `${host} resolved to ${forbidden.join(", ")} when connecting, a private, loopback or link-local address; the connection was refused (the name answered differently when it was checked, as a DNS-rebinding server does)`,
  };
}

/**
 * A fetch (enough of one for the MCP SDK's transports: method, headers, body, signal, no redirect
 * following) whose connections resolve through `resolve` and are refused on a private address.
 */
export function guardedFetch(options: { resolve?: RemoteResolve; allowPrivateNetwork?: boolean } = {}): GuardedFetch {
  const resolve = options.resolve ?? resolveAll;
  const allowPrivateNetwork = options.allowPrivateNetwork === true;
  let refused: RemoteRefusal | undefined;
  const refuse = (refusal: RemoteRefusal) => {
    refused ??= refusal;
    return new RemoteAddressRefused(refusal);
  };

  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    resolve(hostname).then(
      (answers) => {
        const refusal = checkAnswers(hostname, answers, allowPrivateNetwork);
        if (refusal) return void callback(refuse(refusal), "", 0);
        const family = lookupOptions.family === 4 || lookupOptions.family === "IPv4" ? 4 : lookupOptions.family === 6 || lookupOptions.family === "IPv6" ? 6 : 0;
        const usable = answers.filter((address) => family === 0 || isIP(address) === family);
        if (usable.length === 0) return void callback(Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: "ENOTFOUND" }), "", 0);
        if (lookupOptions.all) return void callback(null, usable.map((address) => ({ address, family: isIP(address) })));
        callback(null, usable[0]!, isIP(usable[0]!));
      },
      (error: Error) => callback(error as NodeJS.ErrnoException, "", 0),
    );
  };
  // Keep-alive sockets in agents of this fetch alone: each was opened through the lookup above.
  const httpsAgent = new HttpsAgent({ keepAlive: true, lookup });
  const httpAgent = new HttpAgent({ keepAlive: true, lookup });

  const fetchGuarded = async (input: string | URL, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input);
    if (url.protocol !== "https:" && !(allowPrivateNetwork && url.protocol === "http:")) {
      throw refuse({ code: "remote_url_insecure", message: `${url.origin} refused: a remote MCP server must be reached over https` });
    }
    const host = url.hostname.replace(/^\[|\]$/g, "");
    // A literal address is never resolved, so it is checked here (the URL check refuses them anyway).
    if (isIpLiteral(host) && !allowPrivateNetwork) {
      throw refuse({ code: "remote_url_ip_literal", message: `${host} refused: use the server's host name, not an IP address` });
    }
    init.signal?.throwIfAborted();
    const method = (init.method ?? "GET").toUpperCase();
    const headers = new Headers(init.headers);
    if (!headers.has("accept-encoding")) headers.set("accept-encoding", "gzip, deflate, br");
    const body = init.body == null ? undefined : Buffer.from(await new Response(init.body).arrayBuffer());
    const max = body !== undefined && asksForListing(body) ? REMOTE_LISTING_MESSAGE_BYTES_MAX : REMOTE_MESSAGE_BYTES_MAX;
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    return await new Promise<Response>((resolveResponse, reject) => {
      const request = send(
        url,
        {
          method,
          headers: Object.fromEntries(headers),
          agent: url.protocol === "https:" ? httpsAgent : httpAgent,
          lookup,
          ...(init.signal && { signal: init.signal }),
        },
        (response) => resolveResponse(toResponse(response, method, max)),
      );
      request.on("error", reject);
      request.end(body);
    });
  };
  return Object.assign(fetchGuarded, {
    refusal: () => refused,
    close: () => {
      httpsAgent.destroy();
      httpAgent.destroy();
    },
  });
}

/** Whether a request's body is a JSON-RPC tools/list request (alone or in a batch of them). */
function asksForListing(body: Buffer): boolean {
  // Most bodies are calls: only one that names the method at all is parsed.
  if (body.length > 64 * 1024 || !body.includes("tools/list")) return false;
  try {
    const message = JSON.parse(body.toString("utf8")) as unknown;
    const messages = Array.isArray(message) ? message : [message];
    return messages.length > 0 && messages.every((one) => typeof one === "object" && one !== null && (one as { method?: unknown }).method === "tools/list");
  } catch {
    return false;
  }
}

function toResponse(response: IncomingMessage, method: string, max: number): Response {
  const headers = new Headers();
  for (let index = 0; index + 1 < response.rawHeaders.length; index += 2) headers.append(response.rawHeaders[index]!, response.rawHeaders[index + 1]!);
  const status = response.statusCode ?? 502;
  if (method === "HEAD" || [204, 205, 304].includes(status)) {
    response.resume();
    return new Response(null, { status, statusText: response.statusMessage ?? "", headers });
  }
  // As fetch does: the body arrives decoded (the request asked for these encodings).
  const encoding = (headers.get("content-encoding") ?? "").trim().toLowerCase();
  const decoder = encoding === "gzip" || encoding === "x-gzip" ? createGunzip() : encoding === "deflate" ? createInflate() : encoding === "br" ? createBrotliDecompress() : undefined;
  let stream: Readable = response;
  if (decoder) {
    headers.delete("content-encoding");
    headers.delete("content-length");
    stream = response.pipe(decoder);
    response.on("error", (error) => decoder.destroy(error));
    decoder.on("close", () => response.destroy());
  }
  const web = Readable.toWeb(stream) as ReadableStream<Uint8Array>;
  const over = messageBound((headers.get("content-type") ?? "").toLowerCase().includes("text/event-stream"), max);
  // Beside the reader toWeb attaches, so each chunk is counted as it is read.
  stream.on("data", (chunk: Buffer) => {
    const error = over(chunk);
    if (error) stream.destroy(error);
  });
  return new Response(web, { status, statusText: response.statusMessage ?? "", headers });
}

/**
 * The largest message a remote server may send, as for a package's (childTransport.ts): a JSON answer's
 * whole body, or one event of an event stream (a stream itself may run long). Counted after decoding, so
 * a small gzip body that inflates to gigabytes is stopped here too, not held and parsed on the server.
 */
export const REMOTE_MESSAGE_BYTES_MAX = 48 * 1024 * 1024;
/**
 * The largest answer to a tools/list request (Streamable HTTP: its answer comes on the request's own
 * response): a page may list at most LISTING_BYTES_MAX of tools, and room for its envelope and formatting
 * (indented JSON) is as much again. Without it every page (and a listing runs before every call) was read
 * and parsed up to REMOTE_MESSAGE_BYTES_MAX before its size was checked. The old SSE transport answers on
 * its long-lived stream, which no request names: there the message bound holds.
 */
export const REMOTE_LISTING_MESSAGE_BYTES_MAX = 2 * LISTING_BYTES_MAX;

function messageBound(eventStream: boolean, max = REMOTE_MESSAGE_BYTES_MAX): (chunk: Buffer) => Error | undefined {
  let bytes = 0;
  let tail = "";
  return (chunk) => {
    if (!eventStream) {
      bytes += chunk.length;
    } else {
      // Bytes since the last blank line (an event's end), whichever line ending the server uses.
      const text = tail + chunk.toString("latin1");
      const ends = [text.lastIndexOf("\n\n"), text.lastIndexOf("\r\r"), text.lastIndexOf("\r\n\r\n")].map((at, index) => (at < 0 ? -1 : at + [2, 2, 4][index]!));
      const end = Math.max(...ends);
      bytes = end < 0 ? bytes + chunk.length : text.length - end;
      tail = text.slice(-3);
    }
    return bytes > max ? new Error(`the server sent a message over ${max} bytes, which is not read`) : undefined;
  };
}
