// bench/soak: steady traffic for a while against real `caplo serve` nodes on one PostgreSQL database (a
// private one, created and dropped) and Redis: read turns, confirmed writes, customers reconnecting to
// another node with their resume token, and a second tab per customer on another node. Samples every
// node's memory after a full GC over time; at the end counts the events each conversation stored
// against the events each connection received (gaps = lost), write outcomes and writes run twice.
//
//   npx tsx bench/soak/run.ts [--minutes 30] [--nodes 2] [--customers 20] [--rate 5] [--sample 30]
//
// --rate is actions per second over all customers (80 % reads, 20 % confirmed writes); every customer
// reconnects after ~10 actions, each time to the next node (its turns move round the nodes); its second
// tab reconnects every 25 actions, and whenever the main connection arrives on its node, to the node after
// the main connection's; --sample is seconds between memory samples.
import { execSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../server/src/store/index.ts";
import { BenchClient } from "../cluster/client.ts";
import { readTurn, type TurnResult, writeTurn } from "../cluster/drive.ts";
import { createDatabase, load, mib, option, publishAgent, REDIS_URL, ROOT, sleep, startBackend, startNodes, table, type Memory, type ServeNode } from "../cluster/harness.ts";
import { slope } from "./slope.ts";

const MINUTES = option("minutes", 30);
const NODES = option("nodes", 2);
const CUSTOMERS = option("customers", 20);
const RATE = option("rate", 5);
const SAMPLE_SECONDS = option("sample", 30);

const commit = execSync("git rev-parse --short HEAD", { cwd: ROOT }).toString().trim();
const dir = mkdtempSync(join(tmpdir(), "caplo-soak-"));
const { releasesDir, scriptFile } = await publishAgent(dir);
const backend = await startBackend();
const database = await createDatabase();

type Sample = { at: number; memory: Memory[]; load: string };
const samples: Sample[] = [];
const counts = { reads: 0, writes: 0, reconnects: 0, failures: 0 };
const outcomes = new Map<string, number>();
const failures = new Map<string, number>();
const latencies = { read: [] as number[], write: [] as number[] };

type Customer = {
  conversationId: string;
  token: string;
  main: BenchClient;
  tab: BenchClient;
  /** The nodes the main connection and the second tab are on (indexes, taken modulo the node count). */
  mainNode: number;
  tabNode: number;
  received: { main: number; tab: number };
  gaps: number;
  repeats: number;
};
const customers: Customer[] = [];

const fail = (why: string) => {
  counts.failures += 1;
  failures.set(why, (failures.get(why) ?? 0) + 1);
};

/** Connect (or resume) on node `index mod N`, adding what the previous connection counted. */
async function reopen(customer: Customer, which: "main" | "tab", nodes: ServeNode[], index: number): Promise<void> {
  const old = customer[which];
  customer.gaps += old.gaps;
  customer.repeats += old.repeats;
  old.close();
  const next = await BenchClient.open(nodes[index % nodes.length]!.wsUrl, { resume: { token: customer.token, after: old.lastSeq } });
  if (next.welcome.conversationId !== customer.conversationId) fail("resumed into another conversation");
  customer[which] = next;
}

async function customerLoop(customer: Customer, index: number, nodes: ServeNode[], until: number): Promise<void> {
  const interval = (CUSTOMERS / RATE) * 1000;
  let action = 0;
  // Spread the customers' starts over one interval.
  await sleep((index / CUSTOMERS) * interval);
  while (Date.now() < until) {
    const started = Date.now();
    action += 1;
    const isWrite = action % 5 === 0;
    let result: TurnResult & { state?: string };
    try {
      result = isWrite ? await writeTurn(customer.main, index * 100_000 + action) : await readTurn(customer.main, action);
    } catch (error) {
      result = { ok: false, ms: 0, why: `threw: ${(error as Error).message}` };
    }
    if (isWrite) {
      counts.writes += 1;
      const state = result.state ?? (result.ok ? "applied" : "no outcome");
      outcomes.set(state, (outcomes.get(state) ?? 0) + 1);
      if (result.ok) latencies.write.push(result.ms);
    } else {
      counts.reads += 1;
      if (result.ok) latencies.read.push(result.ms);
    }
    if (!result.ok) fail(result.why);
    // Every ~10 actions: reconnect to the next node with the resume token (no sticky sessions).
    if (action % 10 === index % 10 || customer.main.closed) {
      try {
        customer.mainNode += 1;
        await reopen(customer, "main", nodes, customer.mainNode);
        counts.reconnects += 1;
      } catch (error) {
        fail(`reconnect: ${(error as Error).message}`);
      }
    }
    const together = nodes.length > 1 && customer.tabNode % nodes.length === customer.mainNode % nodes.length;
    if (action % 25 === 0 || together || customer.tab.closed) {
      try {
        customer.tabNode = customer.mainNode + 1;
        await reopen(customer, "tab", nodes, customer.tabNode);
        counts.reconnects += 1;
      } catch (error) {
        fail(`tab reconnect: ${(error as Error).message}`);
      }
    }
    await sleep(Math.max(0, interval - (Date.now() - started)));
  }
}

let nodes: ServeNode[] = [];
try {
  console.log(`bench/soak: ${MINUTES} min, ${NODES} node(s) on PostgreSQL + Redis, ${CUSTOMERS} customers, ${RATE} actions/s, commit ${commit}`);
  nodes = await startNodes(NODES, { db: database.url, releasesDir, scriptFile, backendPort: backend.port, redisUrl: REDIS_URL }, "soak-node");
  for (let index = 0; index < CUSTOMERS; index++) {
    const main = await BenchClient.open(nodes[index % nodes.length]!.wsUrl);
    const token = main.welcome.resumeToken!;
    // The second tab: the same conversation on another node, so its events cross nodes over the bus.
    const tab = await BenchClient.open(nodes[(index + 1) % nodes.length]!.wsUrl, { resume: { token, after: 0 } });
    customers.push({ conversationId: main.welcome.conversationId!, token, main, tab, mainNode: index, tabNode: index + 1, received: { main: 0, tab: 0 }, gaps: 0, repeats: 0 });
  }
  const started = Date.now();
  const until = started + MINUTES * 60_000;
  const sampler = (async () => {
    for (;;) {
      samples.push({ at: (Date.now() - started) / 1000, memory: await Promise.all(nodes.map((node) => node.memory())), load: load() });
      const last = samples.at(-1)!;
      console.log(`  ${(last.at / 60).toFixed(1).padStart(5)} min: ${last.memory.map((memory, index) => `node ${index + 1} RSS ${mib(memory.rss)} heap ${mib(memory.heapUsed)} MiB`).join(", ")}; ${counts.reads} reads, ${counts.writes} writes, ${counts.failures} failed; load ${last.load}`);
      if (Date.now() >= until) return;
      await sleep(Math.min(SAMPLE_SECONDS * 1000, until - Date.now()));
    }
  })();
  await Promise.all(customers.map((customer, index) => customerLoop(customer, index, nodes, until)));
  await sampler;

  // Let the last events arrive (the bus, or the safety poll), then compare with the store.
  const store = await openStore(database.url);
  let stored = 0;
  let lostMain = 0;
  let lostTab = 0;
  const settleUntil = Date.now() + 10_000;
  for (;;) {
    stored = 0;
    lostMain = 0;
    lostTab = 0;
    for (const customer of customers) {
      const conversation = await store.getConversation(customer.conversationId);
      const lastSeq = conversation?.lastSeq ?? 0;
      stored += lastSeq;
      lostMain += lastSeq - customer.main.lastSeq;
      lostTab += lastSeq - customer.tab.lastSeq;
    }
    if ((lostMain === 0 && lostTab === 0) || Date.now() > settleUntil) break;
    await sleep(250);
  }
  await store.close();
  const gaps = customers.reduce((sum, customer) => sum + customer.gaps + customer.main.gaps + customer.tab.gaps, 0);
  const repeats = customers.reduce((sum, customer) => sum + customer.repeats + customer.main.repeats + customer.tab.repeats, 0);
  const twice = [...backend.runs.values()].filter((count) => count > 1).length;
  for (const customer of customers) {
    customer.main.close();
    customer.tab.close();
  }

  // Memory: least-squares slope after the first fifth of the run (start-up, caches, JIT settle).
  const settled = samples.filter((sample) => sample.at >= (MINUTES * 60) / 5);
  const memoryRows = nodes.map((node, index) => {
    const heap = slope(settled.map((sample) => [sample.at / 3600, sample.memory[index]!.heapUsed / 1048576]));
    const rss = slope(settled.map((sample) => [sample.at / 3600, sample.memory[index]!.rss / 1048576]));
    const first = settled[0]?.memory[index];
    const last = settled.at(-1)?.memory[index];
    const meanHeap = settled.reduce((sum, sample) => sum + sample.memory[index]!.heapUsed, 0) / Math.max(1, settled.length) / 1048576;
    // Flat: the heap's trend over the measured window adds less than 2 MiB or 5 % of its mean.
    const window = settled.length > 1 ? (settled.at(-1)!.at - settled[0]!.at) / 3600 : 0;
    const flat = Math.abs(heap * window) < Math.max(2, meanHeap * 0.05);
    return [node.id, first ? `${mib(first.heapUsed)} → ${mib(last!.heapUsed)}` : "-", heap.toFixed(2), first ? `${mib(first.rss)} → ${mib(last!.rss)}` : "-", rss.toFixed(2), flat ? "yes" : "NO"];
  });
  const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
  const p = (values: number[], q: number) => {
    const s = sorted(values);
    return s.length === 0 ? "-" : s[Math.min(s.length - 1, Math.ceil((q / 100) * s.length) - 1)]!.toFixed(0);
  };
  const problems = nodes.flatMap((node) => node.problems.map((line) => `${node.id}: ${line}`));

  console.log(`\nSoak result (commit ${commit}; ${MINUTES} min; ${NODES} node(s); load average at the end ${load()})\n`);
  console.log("Memory of each caplo serve process (after a full GC; slope after the first fifth of the run)\n");
  console.log(table(["node", "heap MiB", "heap MiB/hour", "RSS MiB", "RSS MiB/hour", "flat"], memoryRows));
  console.log("\nTraffic\n");
  console.log(
    table(
      ["reads", "read p50/p99 ms", "confirmed writes", "write p50/p99 ms", "reconnects", "failed actions", "node warnings/errors"],
      [[counts.reads, `${p(latencies.read, 50)} / ${p(latencies.read, 99)}`, counts.writes, `${p(latencies.write, 50)} / ${p(latencies.write, 99)}`, counts.reconnects, counts.failures, problems.length]],
    ),
  );
  console.log("\nEvents (stored = the sum of every conversation's last seq in PostgreSQL; each is delivered to two connections)\n");
  console.log(table(["stored", "lost on main connection", "lost on second tab", "gaps seen", "repeats seen"], [[stored, lostMain, lostTab, gaps, repeats]]));
  console.log("\nWrite outcomes\n");
  console.log(table(["outcome", "count"], [...[...outcomes].map(([state, count]) => [state, count]), ["idempotency keys run more than once", twice]]));
  if (failures.size > 0) console.log(`\nFailures:\n  ${[...failures].map(([why, count]) => `${count} × ${why}`).join("\n  ")}`);
  if (problems.length > 0) console.log(`\nNode warnings/errors (first 20):\n  ${problems.slice(0, 20).join("\n  ")}`);
  console.log("\nMemory samples (MiB, every node)\n");
  console.log(table(["minute", ...nodes.flatMap((node) => [`${node.id} RSS`, `${node.id} heap`]), "load avg"], samples.map((sample) => [(sample.at / 60).toFixed(1), ...sample.memory.flatMap((memory) => [mib(memory.rss), mib(memory.heapUsed)]), sample.load])));
  const lost = lostMain + lostTab + gaps;
  const verdict = lost === 0 && twice === 0 && counts.failures === 0 && memoryRows.every((row) => row[5] === "yes");
  console.log(`\n${verdict ? "PASS" : "FAIL"}: lost events ${lost}, writes run twice ${twice}, failed actions ${counts.failures}, memory flat ${memoryRows.every((row) => row[5] === "yes") ? "yes" : "no"}`);
  process.exitCode = verdict ? 0 : 1;
} finally {
  await Promise.all(nodes.map((node) => node.stop()));
  await backend.close();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
}
