// The team inbox's cost per poll (every signed-in member's console asks every 2 s): the summaries as the store
// keeps them (one indexed query for the page: server/src/store/inboxSummary.ts) against what the inbox did
// before (the newest 200 conversations, each one's events, up to 1,000, and writes read and summarised on every
// poll), on the same database in one run, interleaved rounds after a warm-up; and a search's cost.
//   npx tsx bench/console/inbox.ts [--conversations 1000] [--events 30] [--polls 40] [--rounds 4] [--postgres]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import type { Outbound } from "@caplo/shared";
import { eventText, searchInbox, summaryOf } from "../../server/src/console/inbox.ts";
import { PostgresStore } from "../../server/src/store/postgresStore.ts";
import { SqliteStore } from "../../server/src/store/sqliteStore.ts";
import type { Store } from "../../server/src/store/store.ts";
import { testPg } from "../../tests/support/services.ts";

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(name);
  return index === -1 ? fallback : Number(process.argv[index + 1]);
};
const CONVERSATIONS = arg("--conversations", 1000);
const EVENTS = arg("--events", 30);
const POLLS = arg("--polls", 40);
const ROUNDS = arg("--rounds", 4);
const postgres = process.argv.includes("--postgres");
const capabilities = { editableFields: true, forms: true, questions: true, files: false, pages: false, richText: true };

const dir = mkdtempSync(join(tmpdir(), "caplo-inbox-bench-"));
const pgSettings = { ...testPg(), schema: `caplo_inbox_bench_${process.pid}` };
const store: Store = postgres ? new PostgresStore(pgSettings) : new SqliteStore(join(dir, "caplo.db"));
await store.migrate();

console.log(`filling ${CONVERSATIONS} conversations × ${EVENTS} events on ${store.kind}…`);
for (let c = 0; c < CONVERSATIONS; c++) {
  const id = `c_${String(c).padStart(6, "0")}`;
  await store.createConversation({ id, workspaceId: "default", agent: "shop", releaseId: "shop@sha256:" + "1".repeat(64), channel: "web", externalId: null, resumeHash: null, ownerId: "o", capabilities, createdAt: 1_000_000 + c });
  const events: Outbound[] = [];
  for (let e = 0; e < EVENTS; e++) {
    const mid = `m_${randomBytes(6).toString("hex")}`;
    if (e % 3 === 0) events.push({ type: "text", id: mid, from: "customer", text: `Where is my order SO-${1000 + c}? (message ${e})` });
    else if (e % 3 === 1) events.push({ type: "progress", id: mid, callId: "call_1", state: "start" });
    else events.push({ type: "text", id: mid, from: "agent", text: `Your order SO-${1000 + c} ships on Tuesday; tracking number ${randomBytes(8).toString("hex")}.` });
  }
  await store.append(id, { events }, 2_000_000 + c);
}

/** What the inbox route did per poll before the summaries: every listed conversation's events and writes. */
async function pollBefore(): Promise<number> {
  const conversations = await store.listConversations({ workspaceId: "default", limit: 200 });
  const rows = await Promise.all(
    conversations.map(async (conversation) => {
      const [events, writes] = await Promise.all([store.listEvents(conversation.id, 0, 1000), store.listWrites(conversation.id)]);
      const shown = events.filter((event) => event.message.type === "text" || event.message.type === "handoff" || event.message.type === "outcome");
      const lastCustomer = [...events].reverse().find((event) => event.message.type === "text" && event.message.from === "customer");
      const answered = lastCustomer && events.some((event) => event.seq > lastCustomer.seq && event.message.type !== "progress" && !(event.message.type === "text" && event.message.from === "customer"));
      return { id: conversation.id, last: shown.at(-1) ? eventText(shown.at(-1)!.message).slice(0, 200) : null, waiting: answered ? null : lastCustomer?.at, unknown: writes.filter((write) => write.state === "unknown").length };
    }),
  );
  return rows.length;
}

/** The inbox route's work per poll now. */
async function pollAfter(): Promise<number> {
  return (await store.listInbox({ workspaceId: "default", member: "ana", limit: 200 })).map(summaryOf).length;
}

async function timed(poll: () => Promise<number>, polls: number): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < polls; i++) if ((await poll()) !== Math.min(200, CONVERSATIONS)) throw new Error("a poll listed the wrong number of conversations");
  return Number(process.hrtime.bigint() - started) / 1e6 / polls;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
await timed(pollBefore, 10);
await timed(pollAfter, 100);
const before: number[] = [];
const after: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  before.push(await timed(pollBefore, Math.max(4, Math.round(POLLS / 10))));
  after.push(await timed(pollAfter, POLLS));
}
const search: number[] = [];
for (let i = 0; i < 10; i++) {
  const started = process.hrtime.bigint();
  await searchInbox(store, "default", `SO-${1000 + Math.floor(CONVERSATIONS / 2)}`);
  search.push(Number(process.hrtime.bigint() - started) / 1e6);
}
console.log(`team inbox, ${CONVERSATIONS} conversations × ${EVENTS} events, ${store.kind}, the newest 200 per poll (${ROUNDS} interleaved rounds)`);
console.log(`  before (events and writes of each listed conversation): ${median(before).toFixed(2)} ms per poll  [${before.map((v) => v.toFixed(1)).join(", ")}]`);
console.log(`  now (the store's summaries, one query):                  ${median(after).toFixed(2)} ms per poll  [${after.map((v) => v.toFixed(2)).join(", ")}]`);
console.log(`  ratio before / now: ${(median(before) / median(after)).toFixed(1)}x; a search for an order number: ${median(search).toFixed(1)} ms (asked every 10 s while shown)`);
if (postgres) await (store as PostgresStore).dropSchema();
await store.close();
if (process.argv.includes("--keep")) console.log(dir); else rmSync(dir, { recursive: true, force: true });
