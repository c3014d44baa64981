// The two servers bench/engine compares, each a process of its own with bench/engine/countProbe.mjs
// preloaded (driver counts and CPU over IPC): a real `caplo serve` (bin/caplo.mjs, the benchmark agent of
// bench/cluster, its sandboxed tools) and the minimal reference server of bench/reference/.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { BACKEND_HOST, ROOT, stopChild } from "../cluster/harness.ts";

export type Counts = {
  sqlite: { statements: number; commits: number };
  pg: { queries: number; commits: number };
  redis: { commands: number };
  by: Record<string, number>;
};

export type BenchServer = {
  label: string;
  wsUrl: string;
  process: ChildProcess;
  problems: string[];
  cpuMs: () => Promise<number>;
  counts: () => Promise<Counts>;
  resetCounts: () => Promise<void>;
  /** Sample the server's CPU (V8 profiler) until the returned function writes the profile to `file`. */
  profile: () => Promise<(file: string) => Promise<void>>;
  stop: () => Promise<void>;
};

const PROBE = join(import.meta.dirname, "countProbe.mjs");

async function start(label: string, args: string[], env: Record<string, string>): Promise<BenchServer> {
  const child = spawn(process.execPath, ["--import", PROBE, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe", "ipc"], env: { ...process.env, ...env } });
  const problems: string[] = [];
  const lines: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      lines.push(line);
      const started = /^caplo serve: (http:\/\/\S+)/.exec(line);
      if (started) resolve(started[1]!);
      if (/^(warn|error): /.test(line)) problems.push(line);
    });
    createInterface({ input: child.stderr! }).on("line", (line) => {
      lines.push(line);
      problems.push(line);
    });
    child.once("exit", (code) => reject(new Error(`${label} exited with ${code}:\n${lines.slice(-20).join("\n")}`)));
  });
  const waiting: ((message: unknown) => void)[] = [];
  child.on("message", (message) => waiting.shift()?.(message));
  const ask = <T>(request: string) =>
    new Promise<T>((resolve) => {
      waiting.push((message) => resolve(message as T));
      child.send(request);
    });
  return {
    label,
    wsUrl: `${url.replace("http", "ws")}/v1/ws`,
    process: child,
    problems,
    cpuMs: async () => (await ask<{ cpuMs: number }>("cpu")).cpuMs,
    counts: async () => (await ask<{ counts: Counts }>("counts")).counts,
    resetCounts: async () => void (await ask("counts-reset")),
    profile: async () => {
      await ask("profile-start");
      return async (file: string) => void (await ask(`profile-stop:${file}`));
    },
    stop: () => stopChild(child),
  };
}

export type CaploOptions = {
  db: string;
  releasesDir: string;
  scriptFile: string;
  backendPort: number;
  redisUrl?: string;
  id: string;
  counting?: boolean;
  /** Another checkout of Caplo to run instead of this one (its bin/caplo.mjs), e.g. the commit before a change; named in the label. */
  root?: string;
  label?: string;
};

/** The probe wraps the database drivers to count only when asked (their wrappers cost CPU of their own). */
const counting = (on: boolean | undefined): Record<string, string> => (on ? { CAPLO_BENCH_COUNTS: "1" } : {});

/** `caplo serve` as an operator starts it, for the benchmark agent. */
export function startCaplo(options: CaploOptions): Promise<BenchServer> {
  return start(
    `caplo serve${options.label ? ` ${options.label}` : ""} (${options.redisUrl ? "PostgreSQL + Redis" : "SQLite"})`,
    [join(options.root ?? ROOT, "bin", "caplo.mjs"), "serve", "--port", "0", "--agent", "shop-agent", "--db", options.db, "--releases", options.releasesDir, "--script", options.scriptFile],
    {
      CAPLO_NODE_ID: options.id,
      CAPLO_EGRESS_RESOLVE: `${BACKEND_HOST}=127.0.0.1:${options.backendPort}`,
      CAPLO_SECRET_BENCH_URL: `http://${BACKEND_HOST}`,
      // Every benchmark customer comes from 127.0.0.1: the per-address limits (tested elsewhere) are lifted.
      CAPLO_WIDGET_SOCKETS_PER_ADDRESS: "1000000",
      CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE: "1000000",
      ...(options.redisUrl && { CAPLO_REDIS_URL: options.redisUrl }),
      ...counting(options.counting),
    },
  );
}

/** bench/reference/server.ts on the same kind of store. */
export function startReference(db: string, options: { counting?: boolean; messageFirst?: boolean } = {}): Promise<BenchServer> {
  return start(
    `reference${options.messageFirst ? ", message first" : ""} (${db.startsWith("postgres") ? "PostgreSQL" : "SQLite"})`,
    ["--import", "tsx", join(ROOT, "bench", "reference", "server.ts"), "--db", db, ...(options.messageFirst ? ["--message-first"] : [])],
    counting(options.counting),
  );
}
