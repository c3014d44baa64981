// bench/cluster/nodes.ts: read turns per second and p50/p99 turn latency with 1, 2 and 3 real `caplo
// serve` processes on one PostgreSQL database (a private one, created and dropped) and Redis, customers
// spread round-robin over the nodes; then memory per idle connection of one node. A first row runs one
// node on a SQLite file for comparison.
//
//   npx tsx bench/cluster/nodes.ts [--conversations 40] [--turns 25] [--nodes 3] [--idle 2000]
//
// A turn: the customer's message → the scripted model asks for bench-lookup/get_order → the sandboxed
// tool answers (no network) → result event → the agent's sentence; timed from send to that sentence.
// PostgreSQL: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/test, used only to create and
// drop the private database); Redis: BENCH_REDIS_URL (default redis://127.0.0.1:6379).
import { execSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BenchClient, percentile } from "./client.ts";
import { readTurn } from "./drive.ts";
import { createDatabase, load, mib, option, publishAgent, REDIS_URL, ROOT, type ServeNode, sleep, startBackend, startNodes, table } from "./harness.ts";

const CONVERSATIONS = option("conversations", 40);
const TURNS = option("turns", 25);
const MAX_NODES = option("nodes", 3);
const IDLE = option("idle", 2000);

const commit = execSync("git rev-parse --short HEAD", { cwd: ROOT }).toString().trim();
const dir = mkdtempSync(join(tmpdir(), "caplo-bench-nodes-"));
const backend = await startBackend();
const { releasesDir, scriptFile } = await publishAgent(dir);
const base = { releasesDir, scriptFile, backendPort: backend.port };

type Row = (string | number)[];
const rows: Row[] = [];
let idleRow: Row | undefined;

/** CONVERSATIONS customers at once, customer i on node i mod N, TURNS turns each. */
async function measure(label: string, nodes: ServeNode[]): Promise<void> {
  // Warm up each node (module loading, the tool's sandbox, statement caches, JIT).
  await Promise.all(
    nodes.map(async (node) => {
      const client = await BenchClient.open(node.wsUrl);
      for (let n = 0; n < 5; n++) await readTurn(client, n);
      client.close();
    }),
  );
  const cpuBefore = await Promise.all(nodes.map((node) => node.memory()));
  const latencies: number[] = [];
  let failures = 0;
  let lost = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONVERSATIONS }, async (_, index) => {
      const client = await BenchClient.open(nodes[index % nodes.length]!.wsUrl);
      for (let n = 0; n < TURNS; n++) {
        const result = await readTurn(client, n);
        if (result.ok) latencies.push(result.ms);
        else failures += 1;
      }
      lost += client.gaps;
      client.close();
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = await Promise.all(nodes.map((node) => node.memory()));
  const cpuPerTurn = cpuAfter.reduce((sum, after, index) => sum + after.cpuMs - cpuBefore[index]!.cpuMs, 0) / latencies.length;
  latencies.sort((a, b) => a - b);
  rows.push([
    label,
    latencies.length,
    (latencies.length / seconds).toFixed(0),
    percentile(latencies, 50).toFixed(1),
    percentile(latencies, 99).toFixed(1),
    latencies.at(-1)!.toFixed(0),
    cpuPerTurn.toFixed(2),
    failures,
    lost,
    load(),
  ]);
  console.log(`  ${label}: ${(latencies.length / seconds).toFixed(0)} turns/s`);
}

/** IDLE more connections (each says hello, so each has a conversation) on one node: RSS and heap per connection. */
async function idleMemory(node: ServeNode): Promise<void> {
  await sleep(500);
  const before = await node.memory();
  const clients: BenchClient[] = [];
  for (let opened = 0; opened < IDLE; opened += 200) {
    clients.push(...(await Promise.all(Array.from({ length: Math.min(200, IDLE - opened) }, () => BenchClient.open(node.wsUrl)))));
  }
  await sleep(1000);
  const after = await node.memory();
  idleRow = [
    `1 node, PostgreSQL`,
    clients.length,
    `${mib(before.rss)} → ${mib(after.rss)}`,
    ((after.rss - before.rss) / clients.length / 1024).toFixed(1),
    ((after.heapUsed - before.heapUsed) / clients.length / 1024).toFixed(1),
    (((after.rss - before.rss) * 10_000) / clients.length / 1048576).toFixed(0),
    load(),
  ];
  for (const client of clients) client.ws.terminate();
}

try {
  console.log(`bench/cluster/nodes: ${CONVERSATIONS} customers × ${TURNS} read turns per configuration, commit ${commit}`);
  {
    const nodes = await startNodes(1, { ...base, db: join(dir, "caplo.db") }, "bench-sqlite");
    try {
      await measure("1 node, SQLite (reference)", nodes);
    } finally {
      await Promise.all(nodes.map((node) => node.stop()));
    }
  }
  for (let count = 1; count <= MAX_NODES; count++) {
    const database = await createDatabase();
    try {
      const nodes = await startNodes(count, { ...base, db: database.url, redisUrl: REDIS_URL });
      try {
        await measure(`${count} node${count > 1 ? "s" : ""}, PostgreSQL + Redis`, nodes);
        if (count === 1 && IDLE > 0) await idleMemory(nodes[0]!);
        const problems = nodes.flatMap((node) => node.problems.map((line) => `${node.id}: ${line}`));
        if (problems.length > 0) console.log(`  node warnings/errors:\n    ${problems.slice(0, 10).join("\n    ")}`);
      } finally {
        await Promise.all(nodes.map((node) => node.stop()));
      }
    } finally {
      await database.drop();
    }
  }
  console.log(`\nRead turns (commit ${commit}; load average is the 1-minute figure when the row finished)\n`);
  console.log(table(["configuration", "turns", "turns/s", "p50 ms", "p99 ms", "max ms", "server CPU ms/turn", "failed", "lost events", "load avg"], rows));
  if (idleRow) {
    console.log(`\nMemory per idle connection (serve process after a full GC; the tool sandboxes are separate processes)\n`);
    console.log(table(["node", "idle connections", "RSS MiB", "KiB RSS each", "KiB heap each", "MiB per 10,000", "load avg"], [idleRow]));
  }
  console.log(
    `\nThis machine has 2 cores shared by the load generator, every node, their tool sandboxes, PostgreSQL and Redis:` +
      ` more nodes add processes competing for the same 2 cores, so turns/s cannot grow with the node count here;` +
      ` the figures show what each node costs, not how the cluster scales on separate machines.`,
  );
} finally {
  await backend.close();
  rmSync(dir, { recursive: true, force: true });
}
