// Preloaded (`--import`) into every package process on Node 24: routes the global `fetch` (and
// everything else on undici's global dispatcher) through the runner's egress proxy, an HTTP CONNECT
// tunnel over the Unix socket named by CAPLO_EGRESS_SOCKET. The sandbox has no other route out; this
// module only makes the allowed way work, it is not what enforces the rule.
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";

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
    const socket = netConnect({ path: socketPath });
    let head = Buffer.alloc(0);
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.once("error", fail);
    socket.once("connect", () => socket.write(`CONNECT ${host}:${port} HTTP/1.1\r\nhost: ${host}:${port}\r\n\r\n`));
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
      const secure = tlsConnect({ socket: tunnel, servername: options.servername ?? options.hostname, ALPNProtocols: ["http/1.1"] });
      secure.once("secureConnect", () => callback(null, secure));
      secure.once("error", (error) => callback(error, null));
    },
    (error: Error) => callback(error, null),
  );
}

// Loading fetch makes Node's bundled undici install its default Agent; reuse its class with our connector.
await fetch("data:,").catch(() => undefined);
const registry = globalThis as unknown as Record<symbol, object | undefined>;
const Agent = registry[DISPATCHER]?.constructor as AgentClass | undefined;
if (Agent) registry[DISPATCHER] = new Agent({ connect: connectThroughProxy });
