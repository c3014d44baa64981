// Benchmark for several nodes: notice latency between two EventBus instances (in-process, Redis pub/sub,
// PostgreSQL LISTEN/NOTIFY) and work claims per second with 1, 2 and 3 concurrent claimers.
// Run: npx tsx bench/cluster/busAndClaims.ts [--notices 1000] [--items 1000]
// Uses the machine's Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432, database postgres) with a
// channel, prefix and schema of its own, removed at the end.
import { randomUUID } from "node:crypto";
import { cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { MemoryBus, MemoryHub, type EventBus, type LatestSeqs } from "../../server/src/bus/index.ts";
import { PostgresBus } from "../../server/src/bus/postgresBus.ts";
import { RedisBus } from "../../server/src/bus/redisBus.ts";
import { TestSchema } from "../../server/src/cluster/testSchema.ts";
import { WorkQueue } from "../../server/src/cluster/workQueue.ts";

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const at = args.indexOf(`--${name}`);
  const value = at >= 0 ? Number(args[at + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
};
const NOTICES = option("notices", 1_000);
const ITEMS = option("items", 1_000);
const WARMUP = 50;
const RUN = randomUUID().slice(0, 8);
const noStore: LatestSeqs = async () => new Map();

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

async function healthy(buses: EventBus[]): Promise<void> {
  const start = Date.now();
  while (!buses.every((bus) => bus.health().state === "healthy")) {
    if (Date.now() - start > 10_000) throw new Error(`bus not healthy: ${JSON.stringify(buses.map((bus) => bus.health()))}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Publish on `a`, time until `b`'s listener runs; one notice in flight at a time. */
async function latency(name: string, a: EventBus, b: EventBus): Promise<string> {
  await healthy([a, b]);
  const conversation = `bench-${randomUUID()}`;
  let arrived: ((at: number) => void) | undefined;
  const off = b.subscribe(conversation, () => arrived?.(performance.now()));
  await off.ready;
  const samples: number[] = [];
  for (let seq = 1; seq <= NOTICES + WARMUP; seq += 1) {
    const got = new Promise<number>((resolve) => (arrived = resolve));
    const sent = performance.now();
    const result = await a.publish(conversation, { seq });
    if (!result.ok) throw new Error(`${name}: ${result.error.message}`);
    const at = await got;
    if (seq > WARMUP) samples.push(at - sent);
  }
  off();
  await Promise.all([a.close(), b.close()]);
  samples.sort((x, y) => x - y);
  const ms = (value: number) => `${value.toFixed(3)} ms`;
  return `${name.padEnd(22)} p50 ${ms(percentile(samples, 50)).padStart(10)}   p99 ${ms(percentile(samples, 99)).padStart(10)}   max ${ms(samples.at(-1) ?? NaN).padStart(10)}`;
}

async function claimThroughput(schema: TestSchema, claimers: number, batch: number): Promise<string> {
  const kind = `bench.${claimers}.${batch}`;
  const seedPool = schema.pool(1);
  await seedPool.query(
    `INSERT INTO "${schema.name}".work_items (kind, key, payload, due_at) SELECT $1, 'item-' || n, '{}'::jsonb, now() FROM generate_series(1, $2) AS n`,
    [kind, ITEMS],
  );
  const queues = Array.from({ length: claimers }, (_, i) => new WorkQueue({ pool: schema.pool(1), schema: schema.name, nodeId: `bench-node-${i}` }));
  const perNode = new Array<number>(claimers).fill(0);
  const start = performance.now();
  await Promise.all(
    queues.map(async (queue, i) => {
      for (;;) {
        const claims = await queue.claimDue(kind, batch);
        if (claims.length === 0) return;
        for (const claim of claims) {
          if (!(await queue.complete(claim))) throw new Error(`claim ${claim.id} lost its lease during the benchmark`);
          perNode[i]! += 1;
        }
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const total = perNode.reduce((sum, n) => sum + n, 0);
  if (total !== ITEMS) throw new Error(`claimed ${total} of ${ITEMS}`);
  return `${String(claimers).padStart(2)} claimer(s), batch ${String(batch).padStart(2)}: ${(total / seconds).toFixed(0).padStart(6)} claims/s (claim + complete; ${total} items in ${seconds.toFixed(2)} s; per node ${perNode.join("/")})`;
}

async function main(): Promise<void> {
  console.log(`# Caplo cluster benchmark (${new Date().toISOString()}, node ${process.version})`);
  // Figures from a shared machine mean little without its load: print it with them.
  console.log(`${cpus().length} cores, load average ${loadavg().map((n) => n.toFixed(2)).join(" ")}`);
  console.log(`\n## Notice latency, publish on node A -> listener on node B (${NOTICES} notices, one in flight, after ${WARMUP} warm-up)`);
  const hub = new MemoryHub();
  console.log(await latency("in-process (baseline)", new MemoryBus({ hub }), new MemoryBus({ hub })));
  const redis = () => new RedisBus({ url: "redis://127.0.0.1:6379", prefix: `caplo-bench-${RUN}`, latestSeqs: noStore });
  console.log(await latency("Redis pub/sub", redis(), redis()));
  const postgres = () => new PostgresBus({ connectionString: "postgres://postgres@127.0.0.1:5432/postgres", channel: `caplo_bench_${RUN}`, latestSeqs: noStore });
  console.log(await latency("PostgreSQL NOTIFY", postgres(), postgres()));

  console.log(`\n## Work claims (FOR UPDATE SKIP LOCKED + lease), ${ITEMS} due items per run, one connection per claimer`);
  const schema = new TestSchema();
  try {
    const migrated = await WorkQueue.migrate(schema.pool(1), schema.name);
    if (!migrated.ok) throw new Error(migrated.error.message);
    for (const batch of [1, 10]) {
      for (const claimers of [1, 2, 3]) console.log(await claimThroughput(schema, claimers, batch));
    }
  } finally {
    await schema.drop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
