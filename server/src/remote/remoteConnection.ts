// Connects to a remote MCP server by URL: Streamable HTTP first, then SSE for older servers, with the
// authorization header built from a secret. The URL must be https and must not resolve to a private,
// loopback or link-local address unless the operator allows private networks (local development).
import { lookup } from "node:dns/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { isForbiddenAddress, isIpLiteral } from "../runner/egressRule.ts";

export type RemoteEndpoint = {
  url: string;
  /** The authorization secret's value (from the secret store); sent as `Authorization`. */
  authorization?: string;
  /** Operator-only: allow http and private/loopback addresses (local development and tests). */
  allowPrivateNetwork?: boolean;
  /** Only this transport (what the version was reviewed over); absent: Streamable HTTP, then SSE. */
  transport?: RemoteTransport;
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
    const addresses = await lookup(host, { all: true });
    if (addresses.length === 0 || addresses.some((answer) => isForbiddenAddress(answer.address))) {
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

/** Connects, trying Streamable HTTP and then SSE (or only the endpoint's transport when it names one). */
export async function connectRemote(endpoint: RemoteEndpoint): Promise<Connected> {
  const problem = await checkRemoteUrl(endpoint);
  if (problem) return { ok: false, error: problem };
  const url = new URL(endpoint.url);
  const requestInit: RequestInit = endpoint.authorization ? { headers: { authorization: authorizationHeader(endpoint.authorization) } } : {};
  const streamable = newClient();
  let firstError: unknown;
  if (endpoint.transport !== "sse") {
    try {
      await streamable.connect(new StreamableHTTPClientTransport(url, { requestInit }), { timeout: 15_000 });
      return { ok: true, client: streamable, transport: "streamable-http" };
    } catch (error) {
      firstError = error;
      await streamable.close().catch(() => undefined);
    }
    if (endpoint.transport === "streamable-http") return { ok: false, error: failure(endpoint, firstError, undefined) };
  }
  const sse = newClient();
  try {
    // The SSE stream's GET must carry the header too: eventSourceInit's fetch adds it.
    const headers = (requestInit.headers ?? {}) as Record<string, string>;
    await sse.connect(
      new SSEClientTransport(url, {
        requestInit,
        eventSourceInit: { fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
      }),
      { timeout: 15_000 },
    );
    return { ok: true, client: sse, transport: "sse" };
  } catch (error) {
    await sse.close().catch(() => undefined);
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
