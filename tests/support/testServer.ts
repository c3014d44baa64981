// A server for a test, started by the composition root as `caplo serve` starts one (server/src/app/server.ts),
// with its files in a folder of the test's, on a free loopback port, its log lines dropped.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { startServer, type RunningServer, type ServeOptions } from "../../server/src/app/server.ts";

/**
 * Started with the test's options and parts (ServeOptions.given); `dir` holds the SQLite store and the
 * releases folder. A start that fails throws with its coded error, and removes `dir` when `removeDir` says so.
 */
export async function startTestServer(dir: string, options: Omit<ServeOptions, "port" | "host" | "db" | "releasesDir">, removeDir: boolean): Promise<RunningServer> {
  const started = await startServer({ port: 0, host: "127.0.0.1", db: join(dir, "caplo.db"), releasesDir: join(dir, "releases"), ...options }, () => undefined);
  if (started.ok) return started.server;
  if (removeDir) rmSync(dir, { recursive: true, force: true });
  throw new Error(`the test server did not start: ${started.error.code} at ${started.error.path}: ${started.error.message}`);
}
