// A loopback TCP proxy a test can cut and restore: everything through it fails as if the server behind
// it were down (used to take PostgreSQL away from one client without touching the shared server).
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { freePort } from "./redisServer.ts";

export class TcpProxy {
  readonly port: number;
  #target: { host: string; port: number };
  #server: Server | undefined;
  #sockets = new Set<Socket>();

  private constructor(port: number, target: { host: string; port: number }) {
    this.port = port;
    this.#target = target;
  }

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(await freePort(), target);
    await proxy.start();
    return proxy;
  }

  async start(): Promise<void> {
    if (this.#server) return;
    const server = createServer((client) => {
      const upstream = createConnection(this.#target);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on("close", () => this.#sockets.delete(socket));
        socket.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
  }

  /** Refuse new connections and drop every open one. */
  async stop(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
