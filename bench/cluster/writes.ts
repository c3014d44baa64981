// bench/cluster/writes.ts: confirmed writes per second end to end, with the engine's write ledger (the
// store) on a SQLite file and on PostgreSQL (a private database, created and dropped), in one run, each
// through one real `caplo serve` process.
//
//   npx tsx bench/cluster/writes.ts [--customers 20] [--writes 10]
//
// One write: the customer asks → the agent proposes (review card) → the customer's confirm frame → the
// write runs in the sandboxed tool with its idempotency key → the tool POSTs to the benchmark's backend
// (which counts runs per key) → outcome `applied` event → the agent's sentence. Timed from the customer's
// message to the outcome. Afterwards every key must have run exactly once.
import { execSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BenchClient, percentile } from "./client.ts";
import { writeTurn } from "./drive.ts";
import { type Backend, createDatabase, load, option, publishAgent, REDIS_URL, ROOT, startBackend, startNode, table } from "./harness.ts";

const CUSTOMERS = option("customers", 20);
const WRITES = option("writes", 10);

const commit = execSync("git rev-parse --short HEAD", { cwd: ROOT }).toString().trim();
const dir = mkdtempSync(join(tmpdir(), "caplo-bench-writes-"));
const { releasesDir, scriptFile } = await publishAgent(dir);
const rows: (string | number)[][] = [];

async function measure(label: string, db: string, backend: Backend, redisUrl?: string): Promise<void> {
  const node = await startNode({ db, releasesDir, scriptFile, backendPort: backend.port, id: `bench-writes-${rows.length + 1}`, ...(redisUrl && { redisUrl }) });
  try {
    const warm = await BenchClient.open(node.wsUrl);
    for (let n = 0; n < 3; n++) await writeTurn(warm, n);
    warm.close();
    const keysBefore = backend.runs.size;
    const latencies: number[] = [];
    const states = new Map<string, number>();
    let lost = 0;
    const cpuBefore = await node.memory();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CUSTOMERS }, async (_, customer) => {
        const client = await BenchClient.open(node.wsUrl);
        for (let n = 0; n < WRITES; n++) {
          const result = await writeTurn(client, customer * 1000 + n);
          const state = result.state ?? (result.ok ? "applied" : result.why);
          states.set(state, (states.get(state) ?? 0) + 1);
          if (result.ok) latencies.push(result.ms);
        }
        lost += client.gaps;
        client.close();
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpuAfter = await node.memory();
    const runs = [...backend.runs.values()].slice(keysBefore);
    const twice = runs.filter((count) => count > 1).length;
    latencies.sort((a, b) => a - b);
    rows.push([
      label,
      latencies.length,
      (latencies.length / seconds).toFixed(1),
      percentile(latencies, 50).toFixed(0),
      percentile(latencies, 99).toFixed(0),
      ((cpuAfter.cpuMs - cpuBefore.cpuMs) / Math.max(1, latencies.length)).toFixed(1),
      `${runs.length} keys, ${twice} twice`,
      [...states].filter(([state]) => state !== "applied").map(([state, count]) => `${state}: ${count}`).join(", ") || "none",
      lost,
      load(),
    ]);
    console.log(`  ${label}: ${(latencies.length / seconds).toFixed(1)} confirmed writes/s`);
    if (node.problems.length > 0) console.log(`  node warnings/errors:\n    ${node.problems.slice(0, 10).join("\n    ")}`);
  } finally {
    await node.stop();
  }
}

const backend = await startBackend();
try {
  console.log(`bench/cluster/writes: ${CUSTOMERS} customers × ${WRITES} confirmed writes per ledger, commit ${commit}`);
  await measure("SQLite file", join(dir, "caplo.db"), backend);
  const database = await createDatabase();
  try {
    await measure("PostgreSQL + Redis", database.url, backend, REDIS_URL);
  } finally {
    await database.drop();
  }
  console.log(`\nConfirmed writes end to end, one caplo serve node (commit ${commit}; 1-minute load average when the row finished)\n`);
  console.log(table(["ledger", "applied", "writes/s", "p50 ms", "p99 ms", "server CPU ms/write", "backend: ran", "not applied", "lost events", "load avg"], rows));
  console.log(`\n"backend: ran" counts the idempotency keys the write tool sent; "twice" would be a write run more than once (must be 0).`);
} finally {
  await backend.close();
  rmSync(dir, { recursive: true, force: true });
}
