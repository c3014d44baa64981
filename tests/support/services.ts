// Where the tests find PostgreSQL, Redis and Chromium. `npm test` resolves them once in its global setup
// (tests/support/globalSetup.ts), which may start them from npm packages on a bare machine, and hands the
// answers to every test process through these environment variables:
//   CAPLO_TEST_DATABASE_URL  a PostgreSQL database the tests may create schemas in
//   CAPLO_TEST_REDIS_URL     a Redis server the tests may use ("" or "none": Redis tests are skipped, and say why;
//                            "none" also skips those that start a redis-server of their own, as on a machine without one)
//   CAPLO_TEST_CHROMIUM      the Chromium executable playwright-core drives
//   CAPLO_TEST_CHROMIUM_WS   a browser server of that Chromium (launchServer) the browser tests connect to
// A test file run alone (without the global setup) gets the machine's own services, as before.
import { execFileSync } from "node:child_process";

/** The PostgreSQL database the tests use (trust or password auth, as the URL says). */
export const TEST_DATABASE_URL = process.env.CAPLO_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** The test database's URL with another database name on the same server (e.g. "postgres"). */
export function testDatabaseUrl(database: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

/** The test server's connection settings, for code that takes host/port/user rather than a URL. */
export function testPg(): { host: string; port: number; user: string; password?: string; database: string } {
  const url = new URL(TEST_DATABASE_URL);
  return {
    host: url.hostname,
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username || "postgres"),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    database: decodeURIComponent(url.pathname.slice(1) || "postgres"),
  };
}

/** A Redis server the tests may use, or undefined (then Redis tests are skipped with `REDIS_SKIP_REASON`). */
const NO_REDIS = process.env.CAPLO_TEST_REDIS_URL === "none";
export const TEST_REDIS_URL: string | undefined =
  process.env.CAPLO_TEST_REDIS_URL === undefined ? "redis://127.0.0.1:6379" : (!NO_REDIS && process.env.CAPLO_TEST_REDIS_URL) || undefined;

/** Whether `redis-server` is on the PATH (tests that kill and restart a Redis of their own need it); never with CAPLO_TEST_REDIS_URL=none. */
export const REDIS_SERVER_ON_PATH: boolean = !NO_REDIS && onPath("redis-server");

export const REDIS_SKIP_REASON =
  "skipped: no Redis for the tests (set CAPLO_TEST_REDIS_URL, or put redis-server on the PATH; see docs/testing.md)";

/** The Chromium executable the browser tests drive. */
export const CHROMIUM_PATH = process.env.CAPLO_TEST_CHROMIUM ?? "/usr/bin/chromium";

/** The flags this environment needs: headless, no setuid sandbox (root in a container), nothing phoning home. */
export const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"];

/** The run's shared browser server (set by the global setup), or undefined: then each test launches its own. */
export const CHROMIUM_WS: string | undefined = process.env.CAPLO_TEST_CHROMIUM_WS || undefined;

export function onPath(command: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
