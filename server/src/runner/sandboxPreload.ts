// Preloaded (`--import`) into every package process on Node 24: routes the global `fetch` (and
// everything else on undici's global dispatcher) through the runner's egress proxy, an HTTP CONNECT
// tunnel over the Unix socket named by CAPLO_EGRESS_SOCKET. The sandbox has no other route out; this
// module only makes the allowed way work, it is not what enforces the rule.
//
// Lazily: loading undici costs a package process about 60 ms of CPU at start, and most packages make
// no request before their first call (many make none). So the dispatcher is installed on the first use
// of `fetch` or `WebSocket`, or as soon as anything else loads undici or reads its global dispatcher.
import type { Socket } from "node:net";

type ConnectOptions = { hostname: string; host?: string; protocol: string; port: string | number; servername?: string };
type ConnectCallback = (error: Error | null, socket: Socket | null) => void;
type AgentClass = new (options: { connect: (options: ConnectOptions, callback: ConnectCallback) => void }) => object;

const DISPATCHER = Symbol.for("undici.globalDispatcher.1");
const socketPath = process.env.CAPLO_EGRESS_SOCKET;
delete process.env.CAPLO_EGRESS_SOCKET;

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
    // undici gives an IPv6 literal without brackets; the proxy must see it as one (and refuse it as such).
    const authority = `${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}`;
    socket.once("connect", () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`));
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end === -1) return;
      socket.off("data", onData);
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
