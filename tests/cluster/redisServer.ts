// A redis-server of the test's own, as a child process on a free loopback port, that a test may kill
// and start again on the same port (the machine's shared Redis on 6379 is never touched).
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { tmpdir } from "node:os";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export class RedisServer {
  readonly port: number;
  #child: ChildProcess | undefined;

  private constructor(port: number) {
    this.port = port;
  }

  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await freePort());
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  /** Start (again) on the same port; resolves once it accepts connections. */
  async start(): Promise<void> {
    if (this.#child) return;
    const child = spawn(
      "redis-server",
      ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"],
      { cwd: tmpdir(), stdio: ["ignore", "pipe", "pipe"] },
    );
    this.#child = child;
    await new Promise<void>((resolve, reject) => {
      let output = "";
      const timer = setTimeout(() => reject(new Error(`redis-server did not start on ${this.port}: ${output}`)), 10_000);
      child.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("Ready to accept connections")) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code}: ${output}`));
      });
    });
    child.stdout?.removeAllListeners("data");
    child.stdout?.resume();
    child.stderr?.resume();
    child.removeAllListeners("exit");
  }

  /** kill -9: the connections drop without a goodbye, as when a machine is lost. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = undefined;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    });
  }
}
