// Connects to a remote MCP server by URL: Streamable HTTP first, then SSE for older servers, with the
// authorization header built from a secret. The URL must be https and must not resolve to a private,
// loopback or link-local address unless the operator allows private networks (local development). The
// check runs before anything is sent, and again for every connection the transports open: they fetch
// through guardedFetch, which connects only to the addresses it resolved and checked itself (a name
// that answers differently the second time, as a DNS-rebinding server does, is refused).
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { isForbiddenAddress, isIpLiteral } from "../runner/egressRule.ts";
import { guardedFetch, resolveAll, type GuardedFetch, type RemoteResolve } from "./remoteFetch.ts";

export type RemoteEndpoint = {
  url: string;
  /** The authorization secret's value (from the secret store); sent as `Authorization`. */
  authorization?: string;
  /** Operator-only: allow http and private/loopback addresses (local development and tests). */
  allowPrivateNetwork?: boolean;
  /** Only this transport (what the version was reviewed over); absent: Streamable HTTP, then SSE. */
  transport?: RemoteTransport;
  /** The resolver for the URL check and every connection (default: the system's); tests replace it. */
  resolve?: RemoteResolve;
};

export type RemoteTransport = "streamable-http" | "sse";

export type RemoteProblem = { code: string; path: string; message: string };
export type Connected = { ok: true; client: Client; transport: RemoteTransport } | { ok: false; error: RemoteProblem };

/** An Authorization header value: the secret as given when it names its scheme, else a Bearer token. */
export function authorizationHeader(secret: string): string {
  return /^(Bearer|Basic|Token|Bot)\s+\S/i.test(secret) ? secret : `Bearer ${secret}`;
}

/** Checks the URL against the network rule before anything is sent to it. */
export async function checkRemoteUrl(endpoint: RemoteEndpoint): Promise<RemoteProblem | undefined> {
  let url: URL;
  try {
    url = new URL(endpoint.url);
  } catch {
    return { code: "remote_url_invalid", path: "/url", message: `'${endpoint.url}' is not a URL` };
  }
  if (endpoint.allowPrivateNetwork) return url.protocol === "https:" || url.protocol === "http:" ? undefined : { code: "remote_url_invalid", path: "/url", message: "the URL must be http(s)" };
  if (url.protocol !== "https:") return { code: "remote_url_insecure", path: "/url", message: "a remote MCP server must be reached over https" };
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIpLiteral(host)) return { code: "remote_url_ip_literal", path: "/url", message: "use the server's host name, not an IP address" };
  try {
    const addresses = await (endpoint.resolve ?? resolveAll)(host);
    if (addresses.length === 0 || addresses.some((address) => isForbiddenAddress(address))) {
      return { code: "remote_url_private", path: "/url", message: `${host} resolves to a private, loopback or link-local address` };
    }
  } catch (error) {
    return { code: "remote_url_dns", path: "/url", message: `${host} could not be resolved: ${(error as Error).message}` };
  }
  return undefined;
}

/**
 * Whether a connection failed because the server redirected elsewhere. The MCP SDK's transports follow
 * a redirect only within the URL's origin (redirectPolicy 'same-origin', the default kept here): the
 * reviewed URL is the server, and a redirect could lead to another server or a private address.
 */
function redirected(error: unknown): boolean {
  for (let current = error as { message?: unknown; cause?: unknown } | undefined, depth = 0; current && depth < 5; current = current.cause as typeof current, depth++) {
    if (typeof current.message === "string" && /redirect/i.test(current.message)) return true;
    if (typeof current === "string" && /redirect/i.test(current)) return true;
  }
  return false;
}

function newClient(): Client {
  return new Client({ name: "caplo-remote", version: "1.0.0" }, { capabilities: {} });
}

/** A fetch for one transport, whose sockets are closed with it. */
function withGuardedFetch<T extends Transport>(endpoint: RemoteEndpoint, make: (fetch: GuardedFetch) => T): { transport: T; fetch: GuardedFetch } {
  const fetch = guardedFetch({ ...(endpoint.resolve && { resolve: endpoint.resolve }), ...(endpoint.allowPrivateNetwork && { allowPrivateNetwork: true }) });
  const transport = make(fetch);
  const close = transport.close.bind(transport);
  transport.close = async () => {
    try {
      await close();
    } finally {
      fetch.close();
    }
  };
  return { transport, fetch };
}

/** Connects, trying Streamable HTTP and then SSE (or only the endpoint's transport when it names one). */
export async function connectRemote(endpoint: RemoteEndpoint): Promise<Connected> {
  const problem = await checkRemoteUrl(endpoint);
  if (problem) return { ok: false, error: problem };
  const url = new URL(endpoint.url);
  const requestInit: RequestInit = endpoint.authorization ? { headers: { authorization: authorizationHeader(endpoint.authorization) } } : {};
  const streamable = newClient();
  let firstError: unknown;
  if (endpoint.transport !== "sse") {
    const { transport, fetch } = withGuardedFetch(endpoint, (fetch) => new StreamableHTTPClientTransport(url, { requestInit, fetch }));
    try {
      await streamable.connect(transport, { timeout: 15_000 });
      return { ok: true, client: streamable, transport: "streamable-http" };
    } catch (error) {
      firstError = error;
      await streamable.close().catch(() => undefined);
      fetch.close();
    }
    // A refused address is not retried over SSE: the same name, the same rule.
    const refusal = fetch.refusal();
    if (refusal) return { ok: false, error: { ...refusal, path: "/url" } };
    if (endpoint.transport === "streamable-http") return { ok: false, error: failure(endpoint, firstError, undefined) };
  }
  const sse = newClient();
  // The SSE stream's GET must carry the header too: eventSourceInit's fetch adds it (to the SDK's own
  // headers, a Headers object whose Accept says text/event-stream).
  const extra = Object.entries((requestInit.headers ?? {}) as Record<string, string>);
  const withHeader = (init: RequestInit | undefined): RequestInit => {
    const merged = new Headers(init?.headers);
    for (const [name, value] of extra) merged.set(name, value);
    return { ...init, headers: merged };
  };
  const { transport, fetch } = withGuardedFetch(
    endpoint,
    (fetch) =>
      new SSEClientTransport(url, {
        requestInit,
        fetch,
        eventSourceInit: { fetch: (input, init) => fetch(input, withHeader(init as RequestInit | undefined)) },
      }),
  );
  try {
    await sse.connect(transport, { timeout: 15_000 });
    return { ok: true, client: sse, transport: "sse" };
  } catch (error) {
    await sse.close().catch(() => undefined);
    fetch.close();
    const refusal = fetch.refusal();
    if (refusal) return { ok: false, error: { ...refusal, path: "/url" } };
    return { ok: false, error: failure(endpoint, firstError, error) };
  }
}

/** Why a connection failed, by code: a redirect, a refused authorization, or anything else. */
function failure(endpoint: RemoteEndpoint, streamableError: unknown, sseError: unknown): RemoteProblem {
  if (redirected(streamableError) || redirected(sseError)) {
    return { code: "remote_redirect", path: "/url", message: `${endpoint.url} redirects to another origin, which is never followed: list, review and publish the URL it points to instead` };
  }
  const describe = (error: unknown) => (error as Error)?.message ?? String(error);
  const message = [streamableError !== undefined && describe(streamableError), sseError !== undefined && `SSE: ${describe(sseError)}`].filter(Boolean).join("; ");
  const unauthorized = /401|403|unauthori[sz]ed|forbidden/i.test(message);
  return { code: unauthorized ? "remote_unauthorized" : "remote_unreachable", path: "/url", message: `could not connect to ${endpoint.url}: ${message}` };
}
