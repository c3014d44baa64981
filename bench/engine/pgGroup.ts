// PostgreSQL's group commit, on the real store: the CPU of a read turn's second append (4 events, 3 transcript
// entries, the turn finished) through PostgresStore.append, for appends made at once by many conversations
// (committed together: statements of 16, 8, 4, 2, 1) against the same appends made one after another (each
// a statement and a commit of its own, as every append was before session 15). Node's CPU is this process's;
// PostgreSQL's is every `postgres` process on the machine (shared: other work adds to it). Windows interleaved.
//
//   npx tsx bench/engine/pgGroup.ts [--conversations 40] [--rounds 6] [--windows 25]
import { commandCpuMs } from "../runner/stats.ts";
import { createDatabase, option, table } from "../cluster/harness.ts";
import { PostgresStore } from "../../server/src/store/postgresStore.ts";
import { newConversation } from "../../server/src/store/testing/storeHarness.ts";
import type { AppendBatch } from "../../server/src/store/store.ts";

const CONVERSATIONS = option("conversations", 40);
const ROUNDS = option("rounds", 6);
const WINDOWS = option("windows", 25);
const database = await createDatabase();
const store = new PostgresStore({ connectionString: database.url });
await store.migrate();
const ids: string[] = [];
for (let index = 0; index < CONVERSATIONS; index++) {
  ids.push((await newConversation(store)).id);
}
const text = (value: string) => ({ type: "text" as const, id: `m_${Math.random().toString(36).slice(2, 14)}`, from: "agent" as const, text: value });
const batch = (): AppendBatch => ({
  events: [{ type: "progress", id: `m_${Math.random().toString(36).slice(2, 14)}`, callId: "call_1", tool: "get_order", state: "start", label: "Looking up your order" } as never, text("Your order SO-1001 shipped on 2 December and should arrive by Friday."), { type: "progress", id: "m_p2", callId: "call_1", tool: "get_order", state: "end", label: "Looked up your order" } as never, text("Anything else?")],
  transcript: [
    { role: "assistant", content: "", toolCalls: [{ id: "call_1", name: "orders__get_order", arguments: '{"orderId":"SO-1001"}' }] },
    { role: "tool", toolCallId: "call_1", name: "orders__get_order", content: '{"id":"SO-1001","status":"shipped","carrier":"DPD"}' },
    { role: "assistant", content: "Your order SO-1001 shipped on 2 December and should arrive by Friday." },
  ],
});
const kinds = {
  "at once (group commit)": () => Promise.all(ids.map((id) => store.append(id, batch(), Date.now()))),
  "one after another (a statement each)": async () => {
    for (const id of ids) await store.append(id, batch(), Date.now());
  },
};
const figures = new Map<string, { node: number[]; postgres: number[] }>(Object.keys(kinds).map((name) => [name, { node: [], postgres: [] }]));
for (const run of Object.values(kinds)) for (let warm = 0; warm < 20; warm++) await run();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(kinds)) {
    const postgres = commandCpuMs("postgres");
    const node = process.cpuUsage();
    for (let window = 0; window < WINDOWS; window++) await run();
    const used = process.cpuUsage(node);
    const appends = WINDOWS * ids.length;
    figures.get(name)!.node.push(((used.user + used.system) / 1000 / appends) * 1000);
    figures.get(name)!.postgres.push(((commandCpuMs("postgres") - postgres) / appends) * 1000);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(`\nCPU per append, ${CONVERSATIONS} conversations, ${ROUNDS} interleaved rounds of ${WINDOWS} windows\n`);
console.log(table(["appends", "node µs/append (median)", "postgres µs/append (median)"], [...figures].map(([name, f]) => [name, median(f.node).toFixed(1), median(f.postgres).toFixed(1)])));
await store.close();
await database.drop();
