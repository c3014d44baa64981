// bench/engine: what a turn costs the server, from outside, against the minimal reference server of
// bench/reference/ (the irreducible work of a read turn), each after at least --warmup turns (JIT, caches).
//
//   npx tsx bench/engine/run.ts counts      # commits and statements per read turn and per confirmed write, both stores
//   npx tsx bench/engine/run.ts cpu         # server CPU per read turn, caplo serve vs reference, interleaved, both stores
//   npx tsx bench/engine/run.ts throughput  # read turns/s at 200 conversations, PostgreSQL + Redis vs SQLite, interleaved
//   npx tsx bench/engine/run.ts history     # server CPU per read turn at 10 vs 2,000 stored events, interleaved
//   npx tsx bench/engine/run.ts store-floor # the SQLite store's own CPU for a read turn's appends (taken from a real caplo serve run) vs the reference's
//   npx tsx bench/engine/run.ts all
//   options: --warmup 4000 --rounds 4 --customers 80 (history) --verbose (counts: the statements behind the figures)
//            --against DIR (cpu only: also run the caplo serve of another checkout, e.g. the commit before a
//            change, interleaved with this one and the reference: before/after figures from one run)
//            --turn chat (cpu, throughput, history: turns the model answers without a tool, the reference's
//            own work: the read turn's figure less its tool call)
//            --store sqlite|pg (cpu: one store only)
//            --message-first (cpu: also the reference storing the customer's message in a transaction of its
//            own before the reply, the floor of any server that keeps a turn owed on disk before the model runs)
//
// Counts come from the drivers themselves (bench/engine/countProbe.mjs wraps better-sqlite3, pg and
// ioredis in the server process, only for `counts`: the other figures are taken without the wrappers); background work (status-check polling, sweeps) is counted over an
// idle window as long as the measured one and subtracted. CPU is the server process's own (user +
// system), and for PostgreSQL also every `postgres` process on the machine (shared: other work adds to it).
import { execSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { BenchClient, percentile } from "../cluster/client.ts";
import { chatTurn, readTurn, writeTurn } from "../cluster/drive.ts";
import { createDatabase, option, publishAgent, REDIS_URL, ROOT, sleep, startBackend, table } from "../cluster/harness.ts";
import { commandCpuMs, cpuByKind } from "../runner/stats.ts";
import { startCaplo, startReference, type BenchServer, type Counts } from "./servers.ts";
import type { Outbound } from "@caplo/shared";
import type { ModelMessage } from "../../server/src/model/model.ts";

const WARMUP = option("warmup", 4000);
const ROUNDS = option("rounds", 4);
/** history: customers per window, each with a conversation of its own, long or fresh (--customers). */
const HISTORY_CUSTOMERS = option("customers", 80);
const VERBOSE = process.argv.includes("--verbose");
const AGAINST = process.argv.includes("--against") ? process.argv[process.argv.indexOf("--against") + 1] : undefined;
const what = process.argv[2] ?? "all";
/** --turn chat: cpu, throughput and history drive turns the model answers without a tool (the read turn less its tool call). */
const TURN = process.argv.includes("--turn") ? process.argv[process.argv.indexOf("--turn") + 1] : "read";
if (TURN !== "read" && TURN !== "chat") throw new Error(`--turn read|chat, not ${TURN}`);
const turn = TURN === "chat" ? chatTurn : readTurn;
/** --store sqlite|pg: cpu, one store only (both by default). */
const STORES = process.argv.includes("--store") ? [process.argv[process.argv.indexOf("--store") + 1] as "sqlite" | "pg"] : (["sqlite", "pg"] as const);
if (!STORES.every((store) => store === "sqlite" || store === "pg")) throw new Error(`--store sqlite|pg, not ${STORES.join()}`);
/** The checkout's commit (a copy outside git names it in a .commit file). */
const commitOf = (dir: string) => execSync("git rev-parse --short HEAD 2>/dev/null || cat .commit 2>/dev/null || echo unknown", { cwd: dir, shell: "/bin/sh" }).toString().trim();
const commit = commitOf(ROOT);
const againstCommit = AGAINST ? commitOf(AGAINST) : undefined;
const dir = mkdtempSync(join(tmpdir(), "caplo-bench-engine-"));
const backend = await startBackend();
const agent = await publishAgent(dir);
const cleanups: (() => Promise<void>)[] = [];
/** The machine's 1-minute load average every 5 s while the bench runs (printed as a range with each figure). */
const loads: number[] = [];
const loadSampler = setInterval(() => loads.push(loadavg()[0]!), 5_000);
loadSampler.unref();
const loadRange = () => {
  const sorted = [...loads, loadavg()[0]!].sort((a, b) => a - b);
  loads.length = 0;
  return `load ${sorted[0]!.toFixed(1)}–${sorted.at(-1)!.toFixed(1)}, median ${percentile(sorted, 50).toFixed(1)} on ${cpus().length} cores`;
};
const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);
let serial = 0;

type Store = "sqlite" | "pg";
/** A store of its own for one server: a SQLite file, or a private PostgreSQL database (dropped at the end). */
async function storeFor(store: Store): Promise<string> {
  if (store === "sqlite") return join(dir, `s${++serial}.db`);
  const database = await createDatabase();
  cleanups.push(database.drop);
  return database.url;
}
async function caplo(store: Store, counting = false, root?: string, db?: string): Promise<BenchServer> {
  const server = await startCaplo({
    ...agent,
    backendPort: backend.port,
    db: db ?? (await storeFor(store)),
    id: `bench-${++serial}`,
    counting,
    ...(store === "pg" && { redisUrl: REDIS_URL }),
    ...(root && { root, label: `@${againstCommit}` }),
  });
  cleanups.push(server.stop);
  return server;
}
const MESSAGE_FIRST = process.argv.includes("--message-first");
async function reference(store: Store, messageFirst = false): Promise<BenchServer> {
  const server = await startReference(await storeFor(store), { messageFirst });
  cleanups.push(server.stop);
  return server;
}

/**
 * The gateway allows a connection 10 frames a second with a burst of 20 (a person types slower): each
 * client keeps the same token bucket and waits before a frame the gateway would drop.
 */
const buckets = new WeakMap<BenchClient, { tokens: number; at: number }>();
async function paced(client: BenchClient, frames = 1): Promise<void> {
  const bucket = buckets.get(client) ?? { tokens: 18, at: performance.now() };
  buckets.set(client, bucket);
  for (;;) {
    const now = performance.now();
    bucket.tokens = Math.min(18, bucket.tokens + ((now - bucket.at) / 1000) * 9);
    bucket.at = now;
    if (bucket.tokens >= frames) break;
    await sleep(((frames - bucket.tokens) / 9) * 1000 + 5);
  }
  bucket.tokens -= frames;
}

const open = (server: BenchServer, count: number) => Promise.all(Array.from({ length: count }, () => BenchClient.open(server.wsUrl)));

/** Each client `turns` read turns (paced), all clients at once; returns the latencies (ms) and the wall time (s). */
async function readLoad(server: BenchServer, clients: BenchClient[], turns: number): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    clients.map(async (client) => {
      for (let n = 0; n < turns; n++) {
        await paced(client);
        const result = await turn(client, n);
        if (!result.ok) throw new Error(`${server.label}: ${result.why}`);
        latencies.push(result.ms);
      }
    }),
  );
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

async function warm(server: BenchServer): Promise<void> {
  await warmAll([server]);
}

/**
 * Warm several servers in turns, a chunk of 200 customers × 18 turns each (within the burst: no waiting on
 * the rate limit), so none sits idle for long between its warm-up and its measurement: warmed one after
 * another, the first server measured cost about twice the last with the same code (V8 drops the idle
 * process's compiled code and the caches go cold).
 */
async function warmAll(servers: BenchServer[]): Promise<void> {
  for (let done = 0; done < WARMUP; done += 200 * 18) {
    for (const server of servers) {
      const clients = await open(server, 200);
      await readLoad(server, clients, 18);
      for (const client of clients) client.close();
    }
  }
}

/**
 * CPU (ms) of the server, and of PostgreSQL's processes, while fn runs. With --profile DIR, each measured
 * window of a caplo server is also sampled by V8's profiler, written to DIR/<what>-<label>-<n>.cpuprofile
 * (summarise with `npx tsx bench/engine/profile.ts FILE...`).
 */
const PROFILE_DIR = process.argv.includes("--profile") ? process.argv[process.argv.indexOf("--profile") + 1] : undefined;
let profiles = 0;
async function cpuOf<T>(server: BenchServer, fn: () => Promise<T>): Promise<{ value: T; serverMs: number; postgresMs: number }> {
  const write = PROFILE_DIR && server.label.startsWith("caplo") ? await server.profile() : undefined;
  const pgBefore = commandCpuMs("postgres");
  const before = await server.cpuMs();
  const value = await fn();
  const serverMs = (await server.cpuMs()) - before;
  const postgresMs = commandCpuMs("postgres") - pgBefore;
  await write?.(join(PROFILE_DIR!, `${what}-${server.label.replace(/\W+/g, "_")}-${++profiles}.cpuprofile`));
  return { value, serverMs, postgresMs };
}

/** The driver counts of fn, less those of an idle window as long (background polling). */
async function countsOf(server: BenchServer, fn: () => Promise<void>): Promise<Counts> {
  await server.resetCounts();
  const started = performance.now();
  await fn();
  const busy = await server.counts();
  await server.resetCounts();
  await sleep(performance.now() - started);
  const idle = await server.counts();
  const by: Record<string, number> = {};
  for (const [key, value] of Object.entries(busy.by)) if (value - (idle.by[key] ?? 0) > 0) by[key] = value - (idle.by[key] ?? 0);
  return {
    sqlite: { statements: busy.sqlite.statements - idle.sqlite.statements, commits: busy.sqlite.commits - idle.sqlite.commits },
    pg: { queries: busy.pg.queries - idle.pg.queries, commits: busy.pg.commits - idle.pg.commits },
    redis: { commands: busy.redis.commands - idle.redis.commands },
    by,
  };
}

function breakdown(title: string, counts: Counts, per: number): void {
  if (!VERBOSE) return;
  console.log(`\n  ${title} (per turn):`);
  for (const [key, value] of Object.entries(counts.by).sort((a, b) => b[1] - a[1])) console.log(`    ${(value / per).toFixed(2).padStart(6)}  ${key}`);
}

async function counts(): Promise<void> {
  const rows: (string | number)[][] = [];
  for (const store of ["sqlite", "pg"] as const) {
    const server = await caplo(store, true);
    await warm(server);
    // One customer at a time, each on a connection opened before the counted window (10 turns each, within the burst).
    const reads = 200;
    const writes = 50;
    const readers = await open(server, reads / 10);
    const writers = await open(server, writes / 5);
    const read = await countsOf(server, async () => {
      for (let n = 0; n < reads; n++) if (!(await readTurn(readers[Math.floor(n / 10)]!, n)).ok) throw new Error("read turn failed");
    });
    const write = await countsOf(server, async () => {
      for (let n = 0; n < writes; n++) {
        const result = await writeTurn(writers[Math.floor(n / 5)]!, n);
        if (!result.ok) throw new Error(`write failed: ${result.why}`);
      }
    });
    for (const client of [...readers, ...writers]) client.close();
    const label = store === "sqlite" ? "SQLite" : "PostgreSQL + Redis";
    const statements = (c: Counts) => (store === "sqlite" ? c.sqlite.statements : c.pg.queries);
    const commits = (c: Counts) => (store === "sqlite" ? c.sqlite.commits : c.pg.commits);
    rows.push([label, "read turn", (commits(read) / reads).toFixed(2), (statements(read) / reads).toFixed(2), (read.redis.commands / reads).toFixed(2)]);
    rows.push([label, "confirmed write", (commits(write) / writes).toFixed(2), (statements(write) / writes).toFixed(2), (write.redis.commands / writes).toFixed(2)]);
    breakdown(`${label}, read turn`, read, reads);
    breakdown(`${label}, confirmed write`, write, writes);
    await server.stop();
  }
  console.log(`\nCommits and statements (round trips on PostgreSQL) per read turn and per confirmed write, one customer at a time, after ${WARMUP} warm-up turns (commit ${commit})\n`);
  console.log(table(["store", "what", "commits", "statements", "redis commands"], rows));
}

async function cpu(): Promise<void> {
  const rows: (string | number)[][] = [];
  for (const store of STORES) {
    const servers = [await caplo(store), await reference(store), ...(AGAINST ? [await caplo(store, false, AGAINST)] : []), ...(MESSAGE_FIRST ? [await reference(store, true)] : [])];
    await warmAll(servers);
    const server = new Map<BenchServer, number[]>(servers.map((s) => [s, []]));
    const postgres = new Map<BenchServer, number[]>(servers.map((s) => [s, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // Each round measures the servers in another order (rotated), so none is always first or last.
      for (const s of servers.map((_, i) => servers[(i + round) % servers.length]!)) {
        const clients = await open(s, 40);
        const measured = await cpuOf(s, () => readLoad(s, clients, 10));
        for (const client of clients) client.close();
        const n = measured.value.latencies.length;
        server.get(s)!.push(measured.serverMs / n);
        postgres.get(s)!.push(measured.postgresMs / n);
      }
    }
    const [, ref] = servers as [BenchServer, BenchServer];
    for (const s of servers) {
      rows.push([
        s.label,
        median(server.get(s)!).toFixed(3),
        `${Math.min(...server.get(s)!).toFixed(3)}–${Math.max(...server.get(s)!).toFixed(3)}`,
        store === "pg" ? median(postgres.get(s)!).toFixed(3) : "",
        s === ref ? "1x" : `${(median(server.get(s)!) / median(server.get(ref)!)).toFixed(2)}x`,
      ]);
    }
    for (const s of servers) await s.stop();
  }
  console.log(`\nServer CPU per ${TURN} turn, ${ROUNDS} interleaved rounds of 40 customers × 10 turns each, after ${WARMUP} warm-up turns each (commit ${commit}${AGAINST ? ` against ${againstCommit}` : ""}, ${loadRange()})\n`);
  console.log(table(["server", "CPU ms/turn (median)", "range", "postgres CPU ms/turn (machine-wide)", "vs reference"], rows));
}

/** The machine's CPU ticks from /proc/stat: all, and idle (idle + iowait). */
function machineTicks(): { all: number; idle: number } {
  const fields = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  return { all: fields.reduce((sum, value) => sum + value, 0), idle: fields[3]! + fields[4]! };
}
/** Which part of the bench a process is (for --verbose's CPU by process): the server, the bench, its backend, a tool package, a store. */
const processKind = (server: BenchServer) => (name: string, commandLine: string, pid: number) => {
  if (pid === server.process.pid) return "caplo serve";
  if (pid === process.pid) return "bench client";
  if (name === "postgres" || name === "redis-server") return name;
  if (commandLine.includes("node24")) return "tool package";
  if (commandLine.includes("node")) return "other node";
  return undefined;
};
/** The share of the machine's CPU busy between two readings. */
const machineBusy = (a: { all: number; idle: number }, b: { all: number; idle: number }) => 1 - (b.idle - a.idle) / Math.max(1, b.all - a.all);

async function throughput(): Promise<void> {
  const servers = [await caplo("sqlite"), await caplo("pg")];
  await warmAll(servers);
  const rates = new Map<BenchServer, number[]>(servers.map((s) => [s, []]));
  const p50 = new Map<BenchServer, number[]>(servers.map((s) => [s, []]));
  const busy = new Map<BenchServer, number[]>(servers.map((s) => [s, []]));
  const conversations = 200;
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of servers) {
      const clients = await open(s, conversations);
      const before = machineTicks();
      const kindsBefore = VERBOSE ? cpuByKind(processKind(s)) : undefined;
      const { latencies, seconds } = await readLoad(s, clients, 10);
      busy.get(s)!.push(machineBusy(before, machineTicks()));
      if (kindsBefore) {
        const after = cpuByKind(processKind(s));
        const perTurn = [...after].map(([kind, ms]) => [kind, (ms - (kindsBefore.get(kind) ?? 0)) / latencies.length] as const).filter(([, ms]) => ms > 0.005);
        console.log(`  round ${round + 1} ${s.label}: CPU ms per turn by process: ${perTurn.sort((a, b) => b[1] - a[1]).map(([kind, ms]) => `${kind} ${ms.toFixed(3)}`).join(", ")}`);
      }
      for (const client of clients) client.close();
      rates.get(s)!.push(latencies.length / seconds);
      p50.get(s)!.push(median(latencies));
      if (VERBOSE) console.log(`  round ${round + 1} ${s.label}: ${(latencies.length / seconds).toFixed(0)} turns/s, p50 ${median(latencies).toFixed(1)} ms, machine ${(100 * busy.get(s)!.at(-1)!).toFixed(0)}% busy`);
    }
  }
  const [sqlite, postgres] = servers as [BenchServer, BenchServer];
  console.log(`\nRead turns per second at ${conversations} conversations on one node, ${ROUNDS} interleaved rounds of 10 turns each, after ${WARMUP} warm-up turns each (commit ${commit}, ${loadRange()})\n`);
  console.log(
    table(
      ["server", "turns/s (median)", "range", "p50 ms (median)", "machine busy (median)", "vs SQLite"],
      servers.map((s) => [
        s.label,
        median(rates.get(s)!).toFixed(0),
        `${Math.min(...rates.get(s)!).toFixed(0)}–${Math.max(...rates.get(s)!).toFixed(0)}`,
        median(p50.get(s)!).toFixed(1),
        `${(100 * median(busy.get(s)!)).toFixed(0)}%`,
        `${((100 * median(rates.get(s)!)) / median(rates.get(sqlite)!)).toFixed(0)}%`,
      ]),
    ),
  );
  void postgres;
}

async function history(): Promise<void> {
  const rows: (string | number)[][] = [];
  for (const store of ["sqlite", "pg"] as const) {
    const server = await caplo(store);
    // 400 measured turns a window (80 customers × 5): with 20 customers (100 turns, about 70 ms of server CPU)
    // one old-generation GC more or less in a window moved the figure by 10 points between runs.
    const conversations = HISTORY_CUSTOMERS;
    // The long conversations: 400 read turns each (5 events a turn, 2,000 events), which is also the warm-up.
    const long = await open(server, conversations);
    await readLoad(server, long, Math.max(400, Math.ceil(WARMUP / conversations)));
    const events = long[0]!.lastSeq;
    const short: number[] = [];
    const longCost: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const fresh = await open(server, conversations);
      await readLoad(server, fresh, 2); // 10 stored events each
      // Short and long in turn first, and the fresh customers' sockets closed only after both windows: closed
      // between them (as until session 11), the server's work on 80 closing sockets landed in the long window,
      // about +20 points of "growth" on SQLite.
      // Each window starts once the server has settled: the work that trails a window's last reply (its
      // commit, log record, publish) is not counted in the next window.
      const measure = async (clients: BenchClient[], into: number[]) => {
        await sleep(300);
        const measured = await cpuOf(server, () => readLoad(server, clients, 5));
        into.push(measured.serverMs / measured.value.latencies.length);
      };
      if (round % 2 === 0) await measure(fresh, short).then(() => measure(long, longCost));
      else await measure(long, longCost).then(() => measure(fresh, short));
      for (const client of fresh) client.close();
      await sleep(500);
    }
    for (const client of long) client.close();
    if (VERBOSE) console.log(`  ${server.label}: short ${short.map((ms) => ms.toFixed(3)).join(" ")}; long ${longCost.map((ms) => ms.toFixed(3)).join(" ")}`);
    rows.push([server.label, median(short).toFixed(3), `${events}`, median(longCost).toFixed(3), `${((100 * (median(longCost) - median(short))) / median(short)).toFixed(0)}%`]);
    await server.stop();
  }
  console.log(`\nServer CPU per ${TURN} turn by conversation length, ${ROUNDS} interleaved rounds of ${HISTORY_CUSTOMERS} customers × 5 turns (commit ${commit}, ${loadRange()})\n`);
  console.log(table(["server", "CPU ms/turn at 10 events", "long conversation events", "CPU ms/turn there", "growth"], rows));
}

/**
 * The floor of the store's work: a read turn's appends as caplo serve made them (its SQLite file read after
 * real read turns: rows grouped by their append's time), replayed through SqliteStore.append in this
 * process, 40 conversations at once (so appends group-commit as in the server), against the reference's
 * one append and the message-first reference's two, interleaved. No socket, model, tool or engine: only the
 * store, so what it prints is the least CPU a server storing those rows spends.
 */
async function storeFloor(): Promise<void> {
  const { SqliteStore } = await import("../../server/src/store/sqliteStore.ts");
  const { default: Database } = await import("better-sqlite3");
  const file = await storeFor("sqlite");
  const server = await caplo("sqlite", false, undefined, file);
  const clients = await open(server, 4);
  await readLoad(server, clients, 3);
  for (const client of clients) client.close();
  await server.stop();
  type Batch = { events: Outbound[]; transcript: ModelMessage[] };
  const db = new Database(file, { readonly: true });
  const rows = (table: string) => db.prepare(`SELECT at, message FROM ${table} WHERE conversation_id = (SELECT id FROM conversations ORDER BY last_seq DESC LIMIT 1) ORDER BY seq`).all() as { at: number; message: string }[];
  const events = rows("events");
  const transcript = rows("transcript");
  db.close();
  // The last turn: from the customer's last message on.
  const lastUser = transcript.findLastIndex((row) => (JSON.parse(row.message) as ModelMessage).role === "user");
  const from = transcript[lastUser]!.at;
  const byAt = new Map<number, Batch>();
  const batchAt = (at: number) => byAt.get(at) ?? byAt.set(at, { events: [], transcript: [] }).get(at)!;
  for (const row of events) if (row.at >= from) batchAt(row.at).events.push(JSON.parse(row.message) as Outbound);
  for (const row of transcript) if (row.at >= from) batchAt(row.at).transcript.push(JSON.parse(row.message) as ModelMessage);
  const caploBatches = [...byAt.entries()].sort(([a], [b]) => a - b).map(([, batch]) => batch);
  const customer = caploBatches[0]!.events[0]!;
  const reply = caploBatches.at(-1)!.events.at(-1)!;
  const user = caploBatches[0]!.transcript[0]!;
  const assistant = caploBatches.at(-1)!.transcript.at(-1)!;
  const shapes: { label: string; batches: Batch[] }[] = [
    { label: `caplo serve's read turn (${caploBatches.length} appends: ${caploBatches.map((b) => `${b.events.length} events + ${b.transcript.length} entries`).join(", ")}; ${JSON.stringify(caploBatches).length} bytes)`, batches: caploBatches },
    { label: "reference (1 append: 2 events + 2 entries)", batches: [{ events: [customer, reply], transcript: [user, assistant] }] },
    { label: "reference, message first (2 appends: 1 + 1 each)", batches: [{ events: [customer], transcript: [user] }, { events: [reply], transcript: [assistant] }] },
  ];
  const stores = await Promise.all(
    shapes.map(async (_, index) => {
      const store = new SqliteStore(join(dir, `floor-${index}.db`));
      await store.migrate();
      const ids: string[] = [];
      for (let i = 0; i < 200; i++) {
        const created = await store.createConversation({ id: `c_floor_${i}`, workspaceId: "default", agent: "shop", releaseId: "floor", channel: "web", externalId: null, resumeHash: null, ownerId: `o_${i}`, capabilities: { editableFields: false, forms: false, questions: true, files: false, pages: false, richText: false }, createdAt: Date.now() });
        ids.push(created.id);
      }
      return { store, ids, turns: 0 };
    }),
  );
  /** `count` turns of one shape, 40 conversations at once; each turn's appends in order, the first owing the turn and the last finishing it. */
  const turns = async (index: number, count: number) => {
    const { store, ids } = stores[index]!;
    const batches = shapes[index]!.batches;
    for (let done = 0; done < count; done += 40) {
      const base = stores[index]!.turns;
      stores[index]!.turns += 40;
      await Promise.all(
        Array.from({ length: 40 }, async (_, j) => {
          const id = ids[(base + j) % ids.length]!;
          let owed = 0;
          for (let b = 0; b < batches.length; b++) {
            const last = b === batches.length - 1;
            const stored = await store.append(id, { ...batches[b]!, ...(b === 0 && batches.length > 1 && { owedBy: "floor" }), ...(last && batches.length > 1 && { finish: { nodeId: "floor", seq: owed } }) }, Date.now());
            if (b === 0) owed = stored.conversation.lastTranscriptSeq;
          }
        }),
      );
    }
  };
  for (let index = 0; index < shapes.length; index++) await turns(index, WARMUP);
  const cpuPerTurn = shapes.map(() => [] as number[]);
  const windowTurns = 2000;
  for (let round = 0; round < ROUNDS * 2; round++) {
    for (const index of shapes.map((_, i) => (i + round) % shapes.length)) {
      const before = process.cpuUsage();
      await turns(index, windowTurns);
      const used = process.cpuUsage(before);
      cpuPerTurn[index]!.push((used.user + used.system) / 1000 / windowTurns);
    }
  }
  for (const { store } of stores) await store.close();
  const reference = median(cpuPerTurn[1]!);
  console.log(`\nThe SQLite store's own CPU per turn, ${ROUNDS * 2} interleaved windows of ${windowTurns} turns (40 conversations at once), after ${WARMUP} warm-up turns each, in one process (commit ${commit}, ${loadRange()})\n`);
  console.log(
    table(
      ["appends of", "store CPU ms/turn (median)", "range", "vs reference"],
      shapes.map((shape, index) => [shape.label, median(cpuPerTurn[index]!).toFixed(3), `${Math.min(...cpuPerTurn[index]!).toFixed(3)}–${Math.max(...cpuPerTurn[index]!).toFixed(3)}`, `${(median(cpuPerTurn[index]!) / reference).toFixed(2)}x`]),
    ),
  );
}

try {
  console.log(`bench/engine ${what}: warm-up ${WARMUP} turns per server, commit ${commit}; this machine's 2 cores are shared with whatever else runs`);
  if (what === "counts" || what === "all") await counts();
  if (what === "cpu" || what === "all") await cpu();
  if (what === "throughput" || what === "all") await throughput();
  if (what === "history" || what === "all") await history();
  if (what === "store-floor") await storeFloor();
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await backend.close();
  rmSync(dir, { recursive: true, force: true });
}
