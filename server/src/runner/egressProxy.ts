// The egress proxy: the only way out of a sandbox. Each package process gets a Unix socket of its own
// (in a fresh directory, the only one its sandbox can see) that speaks HTTP CONNECT, admits exactly the
// hosts of the package's `egress` on 443/80, resolves names itself, and refuses IP literals and every
// private, loopback and link-local address. Inside a tunnel, the first message must name the tunnel's own
// host (the TLS server name on 443, the HTTP Host on 80: egressPeek.ts) before any byte is forwarded.
import { lookup } from "node:dns/promises";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { httpRequestHost, PEEK_BYTES_MAX, tlsServerName } from "./egressPeek.ts";
import { runtimeDir } from "./runtimeDir.ts";
import {
  EGRESS_PORTS,
  isForbiddenAddress,
  isHostListed,
  isIpLiteral,
  normalizeHost,
  type EgressRefusal,
  type ResolveOverride,
} from "./egressRule.ts";

export type EgressEvent = { host: string; port: number; allowed: boolean; address?: string; refusal?: EgressRefusal };

export type EgressSocket = {
  /** The directory holding the socket: bind this, and only this, into the sandbox. */
  dir: string;
  socketPath: string;
  close: () => Promise<void>;
};

export type EgressOptions = {
  egress: readonly string[];
  /** Operator-only mappings (CAPLO_EGRESS_RESOLVE); never taken from a package. */
  overrides?: readonly ResolveOverride[];
  onEvent?: (event: EgressEvent) => void;
  /** How long to wait for the upstream TCP connection. */
  connectTimeoutMs?: number;
  /** Resolver, replaceable in tests of the address rule. */
  resolve?: (host: string) => Promise<string[]>;
  /**
   * Connections to the proxy open at once (each tunnel holds two of the server's file descriptors);
   * beyond it a new connection is closed at once. Default EGRESS_CONNECTIONS_MAX.
   */
  maxConnections?: number;
};

/** How many tunnels one package process may hold open at once. */
export const EGRESS_CONNECTIONS_MAX = 64;

const HEADER_MAX = 8 * 1024;

async function resolveAll(host: string): Promise<string[]> {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
}

/** Decides where a CONNECT target may go: an address and port, or a refusal with a stable code. */
export async function decideTarget(
  authority: string,
  options: Pick<EgressOptions, "egress" | "overrides" | "resolve">,
): Promise<{ ok: true; host: string; address: string; port: number; requestedPort: number } | { ok: false; host: string; port: number; refusal: EgressRefusal }> {
  const match = /^(\[[^\]]*\]|[^:]+):([0-9]{1,5})$/.exec(authority);
  const rawHost = match?.[1] ?? authority;
  const port = Number(match?.[2] ?? 0);
  const fail = (code: string, message: string) => ({ ok: false as const, host: rawHost, port, refusal: { code, message } });
  if (!match) return fail("egress_bad_request", `CONNECT target '${authority}' is not host:port`);
  if (isIpLiteral(rawHost)) return fail("egress_ip_literal", `IP literal ${rawHost} refused: egress admits host names only`);
  const host = normalizeHost(rawHost);
  if (!host) return fail("egress_bad_host", `'${rawHost}' is not a valid host name`);
  if (!EGRESS_PORTS.includes(port)) return fail("egress_port", `port ${port} refused: egress admits 443 and 80 only`);
  if (!isHostListed(host, options.egress)) {
    return fail(
      "egress_host_not_listed",
      options.egress.length === 0
        ? `${host} refused: this package declares no egress, so it has no network`
        : `${host} refused: not in the package's egress list`,
    );
  }
  const override = options.overrides?.find((entry) => entry.host === host);
  if (override) return { ok: true, host, address: override.address, port: override.port, requestedPort: port };
  let addresses: string[];
  try {
    addresses = await (options.resolve ?? resolveAll)(host);
  } catch (error) {
    return fail("egress_dns", `${host} could not be resolved: ${(error as Error).message}`);
  }
  const address = addresses.find((candidate) => !isForbiddenAddress(candidate));
  if (!address) {
    return fail("egress_private_address", `${host} resolves only to private, loopback or link-local addresses (${addresses.join(", ") || "none"})`);
  }
  return { ok: true, host, address, port, requestedPort: port };
}

/**
 * Why a tunnel's first message may not go through, or undefined when it names the tunnel's host (or, over
 * TLS, no host at all: a server can then only answer for its own default name). "more" past the bound is
 * refused as too long to read.
 */
function firstMessageRefusal(first: Buffer, host: string, requestedPort: number): EgressRefusal | "more" | undefined {
  const tls = requestedPort === 443;
  const seen = tls ? tlsServerName(first) : httpRequestHost(first);
  if (seen.state === "more") {
    return first.length <= PEEK_BYTES_MAX ? "more" : { code: tls ? "egress_not_tls" : "egress_not_http", message: `${host}: the first message is over ${PEEK_BYTES_MAX} bytes` };
  }
  if (seen.state === "invalid") return { code: tls ? "egress_not_tls" : "egress_not_http", message: `${host}:${requestedPort}: ${seen.message}` };
  if (seen.name === null || normalizeHost(seen.name) === host) return undefined;
  return {
    code: "egress_name_mismatch",
    message: `the tunnel to ${host} carried ${tls ? "a TLS ClientHello" : "an HTTP request"} for ${JSON.stringify(seen.name.slice(0, 253))}: a tunnel carries only the host it was opened for`,
  };
}

const STATUS_TEXT: Record<number, string> = { 400: "Bad Request", 403: "Forbidden", 405: "Method Not Allowed", 502: "Bad Gateway" };

function refuse(socket: Socket, status: number, refusal: EgressRefusal): void {
  const body = `${refusal.message}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? "Bad Gateway"}\r\n` +
      `x-caplo-egress: ${refusal.code}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

function handle(client: Socket, options: EgressOptions): void {
  let head = Buffer.alloc(0);
  client.on("error", () => client.destroy());
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf("\r\n\r\n");
    if (end === -1) {
      if (head.length > HEADER_MAX) {
        client.off("data", onData);
        refuse(client, 400, { code: "egress_bad_request", message: "request head too large" });
      }
      return;
    }
    client.off("data", onData);
    client.pause();
    const rest = head.subarray(end + 4);
    const [method = "", authority = ""] = head.subarray(0, end).toString("latin1").split("\r\n")[0]!.split(" ");
    if (method !== "CONNECT") {
      refuse(client, 405, { code: "egress_method", message: "only CONNECT tunnels are proxied" });
      return;
    }
    void decideTarget(authority, options).then((decision) => {
      if (!decision.ok) {
        options.onEvent?.({ host: decision.host, port: decision.port, allowed: false, refusal: decision.refusal });
        refuse(client, 403, decision.refusal);
        return;
      }
      const upstream = createConnection({ host: decision.address, port: decision.port });
      let connected = false;
      upstream.setTimeout(options.connectTimeoutMs ?? 10_000, () => upstream.destroy(new Error("connect timeout")));
      upstream.once("connect", () => {
        connected = true;
        upstream.setTimeout(0);
        options.onEvent?.({ host: decision.host, port: decision.port, allowed: true, address: decision.address });
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.pipe(client);
        // Nothing goes upstream until the first message names this tunnel's host: a ClientHello or a Host
        // naming another one would reach another site behind the same front end.
        let first = rest;
        const check = (chunk?: Buffer) => {
          if (chunk) first = Buffer.concat([first, chunk]);
          const refusal = firstMessageRefusal(first, decision.host, decision.requestedPort);
          if (refusal === "more") return;
          client.off("data", check);
          if (refusal) {
            options.onEvent?.({ host: decision.host, port: decision.port, allowed: false, refusal });
            client.destroy();
            upstream.destroy();
            return;
          }
          client.pause();
          upstream.write(first);
          client.pipe(upstream);
          client.resume();
        };
        client.on("data", check);
        if (rest.length) check();
        client.resume();
      });
      upstream.once("error", (error) => {
        if (connected) {
          client.destroy();
          return;
        }
        // Refused, unreachable or timed out before the tunnel opened: the package is told at once (a
        // 502 it reads as "egress refused: ..."), instead of waiting on a socket that was cut.
        const refusal = { code: "egress_upstream", message: `${decision.host}:${decision.port} unreachable: ${error.message}` };
        options.onEvent?.({ host: decision.host, port: decision.port, allowed: false, refusal });
        if (!client.destroyed) refuse(client, 502, refusal);
      });
      client.once("close", () => upstream.destroy());
    });
  };
  client.on("data", onData);
}

/** Opens a proxy socket for one package process, in a fresh directory of its own. */
export async function openEgressSocket(options: EgressOptions): Promise<EgressSocket> {
  const dir = await mkdtemp(join(runtimeDir(), "egress-"));
  const socketPath = join(dir, "proxy.sock");
  const connections = new Set<Socket>();
  const server: Server = createServer((socket) => {
    connections.add(socket);
    socket.once("close", () => connections.delete(socket));
    handle(socket, options);
  });
  // A package cannot hold more of the server's sockets than this, however many it opens.
  server.maxConnections = options.maxConnections ?? EGRESS_CONNECTIONS_MAX;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => resolve());
  });
  // The sandbox connects as an unprivileged user; the folder (0711) cannot be listed.
  await chmod(socketPath, 0o666);
  return {
    dir,
    socketPath,
    close: async () => {
      for (const socket of connections) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
