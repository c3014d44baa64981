// What the multi-node benchmarks and the soak share: the benchmark agent's release (two tiny tool
// packages in bench/cluster/packages, built and published to a folder), the write backend the write tool
// calls (applies each idempotency key once, counts every run), a private PostgreSQL database created and
// dropped per run, and real `caplo serve` processes (bin/caplo.mjs) with their memory readable over IPC.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";
import { parseAgentConfig } from "@caplo/shared";
import { createRelease } from "../../server/src/agents/release.ts";
import { FileReleaseStore } from "../../server/src/agents/releaseStore.ts";
import { buildPackage } from "../../server/src/build/index.ts";

export const ROOT = join(import.meta.dirname, "..", "..");
export const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
export const BACKEND_HOST = "bench.caplo.test";

export const option = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} needs a positive number`);
  return value;
};

export const load = () => `${loadavg()[0]!.toFixed(1)} (${cpus().length} cores)`;
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Scripted model rules: a read turn (lookup, then a sentence) and a write turn (proposal, then a sentence once applied). */
export const SCRIPT = [
  { when: { regex: "order (SO-\\d{4})", flags: "i" }, replies: [{ toolCalls: [{ name: "bench_lookup__get_order", args: { orderId: "$1" } }] }, { text: "Your order is on its way." }] },
  { when: { regex: "note (SO-\\d{4}) (\\w+)", flags: "i" }, replies: [{ text: "Please review.", toolCalls: [{ name: "bench_record__record_note", args: { orderId: "$1", note: "$2" } }] }] },
  { whenNote: "outcome: applied", replies: [{ text: "Done: the note is recorded." }] },
  // A chat turn: the model answers without a tool (bench/engine's `--turn chat`: the read turn without its tool call).
  { when: { regex: "^hi\\b", flags: "i" }, replies: [{ text: "Hello! How can I help?" }] },
];

/** Build both packages and publish agent `shop-agent` (origin https://shop.example) to DIR/releases. */
export async function publishAgent(dir: string): Promise<{ releasesDir: string; scriptFile: string }> {
  const versions = [];
  for (const name of ["bench-lookup", "bench-record"]) {
    const built = await buildPackage(join(import.meta.dirname, "packages", name));
    if (!built.ok) throw new Error(`bench package ${name} did not build: ${JSON.stringify(built.errors)}`);
    versions.push(built.version);
  }
  const config = parseAgentConfig({
    apiVersion: "v1",
    kind: "Agent",
    name: "shop-agent",
    instructions: "Help shop customers.",
    origins: ["https://shop.example"],
    tools: ["bench-lookup/get_order", "bench-record/record_note"],
    channels: { web: {} },
  });
  if (!config.ok) throw new Error(`bench agent: ${JSON.stringify(config.issues)}`);
  const release = createRelease(config.agent, versions, new Date());
  if (!release.ok) throw new Error(`bench release: ${JSON.stringify(release.issues)}`);
  const releasesDir = join(dir, "releases");
  await new FileReleaseStore(releasesDir).put(release.release);
  const scriptFile = join(dir, "script.json");
  writeFileSync(scriptFile, JSON.stringify(SCRIPT));
  return { releasesDir, scriptFile };
}

/** The system the write tool changes: each idempotency key is applied once; every run is counted. */
export type Backend = { port: number; runs: Map<string, number>; requests: () => number; close: () => Promise<void> };

export async function startBackend(): Promise<Backend> {
  const runs = new Map<string, number>();
  let requests = 0;
  const server = createServer((request, response) => {
    requests += 1;
    const url = new URL(request.url ?? "/", "http://backend");
    if (request.method === "POST" && url.pathname === "/writes") {
      const key = String(request.headers["idempotency-key"] ?? "");
      request.resume();
      request.on("end", () => {
        if (!key) {
          response.writeHead(400).end("{}");
          return;
        }
        runs.set(key, (runs.get(key) ?? 0) + 1);
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ runs: runs.get(key) }));
      });
      return;
    }
    if (request.method === "GET" && url.pathname === "/writes") {
      const key = url.searchParams.get("key") ?? "";
      const count = runs.get(key);
      if (count === undefined) response.writeHead(404).end("{}");
      else response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ orderId: "SO-0000", runs: count }));
      return;
    }
    response.writeHead(404).end();
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    runs,
    requests: () => requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A PostgreSQL database of this run's own, dropped by `drop()`. */
export async function createDatabase(): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = `caplo_bench_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export type Memory = { rss: number; heapUsed: number; heapTotal: number; external: number; cpuMs: number };

export type ServeNode = {
  id: string;
  url: string;
  wsUrl: string;
  process: ChildProcess;
  /** The serve process's memory after a full GC (and its CPU time so far). */
  memory: () => Promise<Memory>;
  /** Lines the node logged at warn or error level. */
  problems: string[];
  stop: () => Promise<void>;
};

export type NodeOptions = { db: string; releasesDir: string; scriptFile: string; backendPort: number; redisUrl?: string; id: string; extraEnv?: Record<string, string> };

/**
 * One `caplo serve` process, as an operator starts it (bin/caplo.mjs, flags and environment), plus
 * bench/cluster/probe.ts preloaded for its memory figures. Resolves once it listens.
 */
export async function startNode(options: NodeOptions): Promise<ServeNode> {
  const child = spawn(
    process.execPath,
    ["--expose-gc", "--import", join(import.meta.dirname, "probe.mjs"), join(ROOT, "bin", "caplo.mjs"), "serve", "--port", "0", "--agent", "shop-agent", "--db", options.db, "--releases", options.releasesDir, "--script", options.scriptFile],
    {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      env: {
        ...process.env,
        CAPLO_NODE_ID: options.id,
        CAPLO_EGRESS_RESOLVE: `${BACKEND_HOST}=127.0.0.1:${options.backendPort}`,
        CAPLO_SECRET_BENCH_URL: `http://${BACKEND_HOST}`,
        // Every benchmark client connects from 127.0.0.1 (the per-address limits would refuse most).
        CAPLO_WIDGET_SOCKETS_PER_ADDRESS: "1000000",
        CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE: "1000000",
        ...(options.redisUrl && { CAPLO_REDIS_URL: options.redisUrl }),
        ...options.extraEnv,
      },
    },
  );
  const problems: string[] = [];
  const lines: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    const onLine = (line: string) => {
      lines.push(line);
      const started = /^caplo serve: (http:\/\/\S+)/.exec(line);
      if (started) resolve(started[1]!);
      if (/^(warn|error): /.test(line)) problems.push(line);
    };
    createInterface({ input: child.stdout! }).on("line", onLine);
    createInterface({ input: child.stderr! }).on("line", (line) => {
      lines.push(line);
      problems.push(line);
    });
    child.once("exit", (code) => reject(new Error(`caplo serve ${options.id} exited with ${code}:\n${lines.slice(-20).join("\n")}`)));
  });
  let pending: ((memory: Memory) => void)[] = [];
  child.on("message", (message) => {
    const waiting = pending;
    pending = [];
    for (const resolve of waiting) resolve(message as Memory);
  });
  return {
    id: options.id,
    url,
    wsUrl: `${url.replace("http", "ws")}/v1/ws`,
    process: child,
    problems,
    memory: () =>
      new Promise<Memory>((resolve) => {
        pending.push(resolve);
        child.send("mem");
      }),
    stop: () => stopChild(child),
  };
}

/** SIGTERM, then SIGKILL after 10 s; resolves once the process has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Start N nodes on one store; the first alone (it migrates), then the others together. */
export async function startNodes(count: number, options: Omit<NodeOptions, "id">, prefix = "bench-node"): Promise<ServeNode[]> {
  const first = await startNode({ ...options, id: `${prefix}-1` });
  const rest = await Promise.all(Array.from({ length: count - 1 }, (_, index) => startNode({ ...options, id: `${prefix}-${index + 2}` })));
  return [first, ...rest];
}

/** A fixed-width text table. */
export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => row[column]!.length)));
  const line = (row: string[]) => `| ${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join(" | ")} |`;
  return [line(cells[0]!), `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`, ...cells.slice(1).map(line)].join("\n");
}

export const mib = (bytes: number) => (bytes / 1048576).toFixed(1);
