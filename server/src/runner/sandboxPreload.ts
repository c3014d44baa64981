// Preloaded (`--import`) into every package process on Node 24: routes the global `fetch` (and
// everything else on undici's global dispatcher) through the runner's egress proxy, an HTTP CONNECT
// tunnel over the Unix socket named by CAPLO_EGRESS_SOCKET. The sandbox has no other route out; this
// module only makes the allowed way work, it is not what enforces the rule.
//
// Lazily: loading undici costs a package process about 60 ms of CPU at start, and most packages make
// no request before their first call (many make none). So the dispatcher is installed on the first use
// of `fetch` or `WebSocket`, or as soon as anything else loads undici or reads its global dispatcher.
import type { RequestOptions } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";

type ConnectOptions = { hostname: string; host?: string; protocol: string; port: string | number; servername?: string };
type ConnectCallback = (error: Error | null, socket: Socket | null) => void;
type AgentClass = new (options: { connect: (options: ConnectOptions, callback: ConnectCallback) => void }) => object;

const DISPATCHER = Symbol.for("undici.globalDispatcher.1");
const socketPath = process.env.CAPLO_EGRESS_SOCKET;
delete process.env.CAPLO_EGRESS_SOCKET;
// bash's exec (the sandbox's launcher) exports SHLVL whatever it was told: not part of the package's environment.
delete process.env.SHLVL;

// What would tell the package where it runs on the host: Node's own flags (the permission model's folders,
// this preload's path) and the diagnostic report (command line, libraries, host details). Neither is its.
const denied = (what: string) => Object.assign(new Error(`${what} is not available in the sandbox`), { code: "ERR_ACCESS_DENIED" });
const frozen = (target: object, key: string, value: unknown) => Object.defineProperty(target, key, { value, writable: false, configurable: false, enumerable: true });
frozen(process, "execArgv", Object.freeze([]));
process.argv.splice(0, 2, "node", "caplo-host");
const noReport = () => {
  throw denied("process.report");
};
frozen(process, "report", Object.freeze({ getReport: noReport, writeReport: noReport, directory: "", filename: "", compact: true, signal: "SIGUSR2", reportOnFatalError: false, reportOnSignal: false, reportOnUncaughtException: false, excludeNetwork: true }));
// V8 flags set at run time (natives syntax, GC internals) are not the package's to change.
const v8 = process.getBuiltinModule("node:v8") as { setFlagsFromString: (flags: string) => void };
v8.setFlagsFromString = () => {
  throw denied("v8.setFlagsFromString");
};
(process.getBuiltinModule("node:module") as unknown as { syncBuiltinESMExports: () => void }).syncBuiltinESMExports();

/** Opens a CONNECT tunnel to host:port through the proxy socket; resolves with the raw tunnel. */
function openTunnel(host: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    if (!socketPath) {
      reject(new Error(`egress refused: ${host} is unreachable, this package has no network`));
      return;
    }
    const socket = process.getBuiltinModule("node:net").connect({ path: socketPath });
    let head = Buffer.alloc(0);
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.once("error", fail);
    // The proxy closing before it answered is a refusal too, never a request left waiting.
    const onClose = () => fail(new Error(`egress refused: the proxy closed the connection to ${host}:${port} without an answer`));
    socket.once("close", onClose);
    // undici gives an IPv6 literal without brackets; the proxy must see it as one (and refuse it as such).
    const authority = `${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}`;
    socket.once("connect", () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`));
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end === -1) return;
      socket.off("data", onData);
      socket.off("close", onClose);
      const text = head.toString("latin1");
      const status = Number(/^HTTP\/1\.[01] ([0-9]{3})/.exec(text)?.[1] ?? 0);
      if (status !== 200) {
        const body = text.slice(end + 4).trim();
        fail(new Error(`egress refused: ${body || `proxy answered ${status}`}`));
        return;
      }
      socket.off("error", fail);
      const rest = head.subarray(end + 4);
      if (rest.length) socket.unshift(rest);
      resolve(socket);
    };
    socket.on("data", onData);
  });
}

function connectThroughProxy(options: ConnectOptions, callback: ConnectCallback): void {
  const https = options.protocol === "https:";
  const port = Number(options.port) || (https ? 443 : 80);
  openTunnel(options.hostname, port).then(
    (tunnel) => {
      if (!https) {
        callback(null, tunnel);
        return;
      }
      const secure = process.getBuiltinModule("node:tls").connect({ socket: tunnel, servername: options.servername ?? options.hostname, ALPNProtocols: ["http/1.1"] });
      secure.once("secureConnect", () => callback(null, secure));
      secure.once("error", (error) => callback(error, null));
    },
    (error: Error) => callback(error, null),
  );
}

const registry = globalThis as unknown as Record<PropertyKey, unknown>;
/** undici's WebSocket class as node:http exposes it (Node 22.5+; not in @types/node 20). */
const undiciWebSocket = (): unknown => (process.getBuiltinModule("node:http") as unknown as { WebSocket: unknown }).WebSocket;
let installed = false;

/** Loads undici (which installs its default Agent) and replaces that Agent by one with our connector. */
function install(): void {
  if (installed) return;
  installed = true;
  // node:http exposes undici's WebSocket class: reading it loads undici once, without making a request.
  void undiciWebSocket();
  const Agent = (registry[DISPATCHER] as object | undefined)?.constructor as AgentClass | undefined;
  if (Agent) registry[DISPATCHER] = new Agent({ connect: connectThroughProxy });
}

// fetch: install before the first request (undici reads the global dispatcher synchronously).
const originalFetch = globalThis.fetch;
globalThis.fetch = function fetch(input: Parameters<typeof originalFetch>[0], init?: Parameters<typeof originalFetch>[1]) {
  install();
  return originalFetch(input, init);
} as typeof originalFetch;

// WebSocket: assigning does not load undici (reading or redefining the lazy global would).
registry.WebSocket = undefined;
Object.defineProperty(globalThis, "WebSocket", {
  configurable: true,
  enumerable: false,
  get() {
    install();
    const WebSocket = undiciWebSocket();
    Object.defineProperty(globalThis, "WebSocket", { value: WebSocket, writable: true, configurable: true, enumerable: false });
    return WebSocket;
  },
  set(value: unknown) {
    Object.defineProperty(globalThis, "WebSocket", { value, writable: true, configurable: true, enumerable: false });
  },
});

// node:http and node:https (axios, got, SDKs built on https.request): their global agents open each
// connection as a tunnel through the same proxy (TLS end to end, as for fetch). Installed when the
// package first imports or requires either module, so a package that never does pays nothing for it.
type Created = ((error: Error | null, stream: Duplex) => void) | undefined;
let agentsInstalled = false;

function installAgents(): void {
  if (agentsInstalled) return;
  agentsInstalled = true;
  const http = process.getBuiltinModule("node:http");
  const https = process.getBuiltinModule("node:https");
  const target = (options: RequestOptions, secure: boolean) => ({
    host: String(options.hostname ?? options.host ?? "localhost").replace(/^\[|\]$/g, ""),
    port: Number(options.port) || (secure ? 443 : 80),
  });
  class TunnelAgent extends http.Agent {
    override createConnection(options: RequestOptions, callback?: Created): undefined {
      const { host, port } = target(options, false);
      openTunnel(host, port).then((tunnel) => callback?.(null, tunnel), (error: Error) => callback?.(error, undefined as never));
      return undefined;
    }
  }
  class SecureTunnelAgent extends https.Agent {
    override createConnection(options: RequestOptions, callback?: Created): undefined {
      const { host, port } = target(options, true);
      const servername = (options as { servername?: string }).servername || host;
      openTunnel(host, port).then(
        (tunnel) => callback?.(null, process.getBuiltinModule("node:tls").connect({ ...(options as object), socket: tunnel, servername })),
        (error: Error) => callback?.(error, undefined as never),
      );
      return undefined;
    }
  }
  http.globalAgent = new TunnelAgent({ keepAlive: true });
  https.globalAgent = new SecureTunnelAgent({ keepAlive: true });
}

type ResolveHook = (specifier: string, context: object, next: (specifier: string, context: object) => unknown) => unknown;
const moduleApi = process.getBuiltinModule("node:module") as unknown as { registerHooks?: (hooks: { resolve: ResolveHook }) => void };
moduleApi.registerHooks?.({
  resolve(specifier, context, next) {
    // node:sqlite opens and creates database files without asking the permission model (Node 24). The
    // sandbox starts Node with --no-experimental-sqlite too; this says why.
    if (specifier === "node:sqlite") throw denied("node:sqlite (it ignores the permission model)");
    if (!agentsInstalled && /^(node:)?https?$/.test(specifier)) installAgents();
    return next(specifier, context);
  },
});

// Anything else that loads undici (Request, Response, a package's own undici…) reads the global
// dispatcher first: undici then installs its default Agent, and we replace it right after.
Object.defineProperty(globalThis, DISPATCHER, {
  configurable: true,
  enumerable: false,
  get() {
    if (!installed) queueMicrotask(install);
    return undefined;
  },
  set(value: unknown) {
    Object.defineProperty(globalThis, DISPATCHER, { value, writable: true, configurable: true, enumerable: false });
  },
});
