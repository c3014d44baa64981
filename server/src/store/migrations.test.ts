// An existing single-workspace database (the schema before workspaces, migrations 1 to 6) upgrades in
// place: its conversations, events, transcript and writes are kept, in the workspace `default`, and the
// inbox's summaries (migration 11) are filled from the events already stored.
import Database from "better-sqlite3";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { testPg } from "../../../tests/support/services.ts";
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from "./migrations.ts";
import { PostgresStore, SqliteStore, type Store } from "./index.ts";

const BEFORE_WORKSPACES = 6;
const capabilities = JSON.stringify({ editableFields: true, forms: true, questions: true, files: false, pages: false, richText: true });
const event = JSON.stringify({ type: "text", id: "m_1", from: "customer", text: "Where is my order?" });

/** The rows an old server wrote: one conversation with an event, a transcript entry and a write on follow-up. */
const OLD_ROWS = [
  `INSERT INTO conversations (id, agent, release_id, channel, external_id, resume_hash, owner_id, capabilities, created_at, last_seq, last_transcript_seq)
   VALUES ('c_old', 'shop', 'shop@sha256:${"1".repeat(64)}', 'whatsapp', 'whatsapp:+38640111222', NULL, 'owner-a', '${capabilities}', 1000, 1, 1)`,
  `INSERT INTO events (conversation_id, seq, at, message) VALUES ('c_old', 1, 1001, '${event}')`,
  `INSERT INTO transcript (conversation_id, seq, at, message) VALUES ('c_old', 1, 1001, '{"role":"user","content":"Where is my order?"}')`,
  `INSERT INTO writes (id, conversation_id, turn_id, call_id, tool_ref, model_name, package_version_id, tool, args, state, confirmation, owner_id, follow_up, created_at, updated_at)
   VALUES ('w_old', 'c_old', 't1', 'call_1', 'orders/cancel_order', 'orders__cancel_order', 'orders@sha256:${"0".repeat(64)}', 'cancel_order', '{"orderId":"SO-1"}', 'unknown', 'required', 'owner-a', TRUE, 1002, 1003)`,
  // Asked, answered, asked twice more (a progress line between is no answer): waiting since seq 3, last message seq 5.
  `INSERT INTO conversations (id, agent, release_id, channel, external_id, resume_hash, owner_id, capabilities, created_at, last_seq, last_transcript_seq)
   VALUES ('c_wait', 'shop', 'shop@sha256:${"1".repeat(64)}', 'web', NULL, NULL, 'owner-b', '${capabilities}', 900, 5, 0)`,
  ...[
    { type: "text", id: "w1", from: "customer", text: "Hello?" },
    { type: "text", id: "w2", from: "agent", text: "Hi!" },
    { type: "text", id: "w3", from: "customer", text: "Refund please" },
    { type: "progress", id: "w4", callId: "call_1", state: "start" },
    { type: "text", id: "w5", from: "customer", text: "Still there?" },
  ].map((message, index) => `INSERT INTO events (conversation_id, seq, at, message) VALUES ('c_wait', ${index + 1}, ${901 + index}, '${JSON.stringify(message)}')`),
];

async function expectUpgraded(store: Store): Promise<void> {
  await store.migrate();
  const conversation = await store.getConversation("c_old");
  expect(conversation).toMatchObject({ id: "c_old", workspaceId: "default", agent: "shop", channel: "whatsapp", lastSeq: 1, lastTranscriptSeq: 1 });
  expect((await store.listEvents("c_old", 0)).map((stored) => stored.message)).toEqual([JSON.parse(event)]);
  expect((await store.listTranscript("c_old")).map((entry) => entry.message)).toEqual([{ role: "user", content: "Where is my order?" }]);
  expect((await store.listFollowUps("default")).map((write) => write.id)).toEqual(["w_old"]);
  expect((await store.findConversationByExternal("shop", "whatsapp", "whatsapp:+38640111222", "default"))?.id).toBe("c_old");
  expect(await store.listWorkspaces()).toEqual(["default"]);
  const inbox = async () => new Map((await store.listInbox({ workspaceId: "default", member: "ana", limit: 10 })).map((entry) => [entry.conversation.id, entry]));
  const before = await inbox();
  expect(before.get("c_old")).toMatchObject({ lastMessage: { seq: 1, at: 1001 }, waitingSince: 1001, unresolvedWrites: 1, followUps: 1, readSeq: 0 });
  expect(before.get("c_wait")).toMatchObject({ lastMessage: { seq: 5, message: { text: "Still there?" } }, waitingSince: 903, unresolvedWrites: 0 });
  // The upgraded store takes new conversations and appends to the old one.
  const appended = await store.append("c_old", { events: [{ type: "text", id: "m_2", from: "agent", text: "It ships today." }] }, 2000);
  expect(appended.events[0]?.seq).toBe(2);
  expect((await inbox()).get("c_old")).toMatchObject({ lastMessage: { seq: 2, message: { text: "It ships today." } }, waitingSince: null });
  await store.migrate(); // again: nothing left to apply
  expect((await store.listEvents("c_old", 0)).length).toBe(2);
}

describe("migrating a database from before workspaces", () => {
  const dir = mkdtempSync(join(tmpdir(), "caplo-migrate-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("sqlite: the old file upgrades in place, its data in the default workspace", async () => {
    const path = join(dir, "old.db");
    const old = new Database(path);
    old.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
    for (const migration of SQLITE_MIGRATIONS.filter((m) => m.version <= BEFORE_WORKSPACES)) {
      old.exec(migration.sql);
      old.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(migration.version, migration.name, 1);
    }
    for (const sql of OLD_ROWS) old.exec(sql.replace("TRUE", "1"));
    old.close();
    const store = new SqliteStore(path);
    try {
      await expectUpgraded(store);
    } finally {
      await store.close();
    }
  });

  it("postgres: the old schema upgrades in place, its data in the default workspace", async () => {
    const schema = `caplo_migrate_${process.pid}_${randomBytes(4).toString("hex")}`;
    const client = new pg.Client({ ...testPg() });
    await client.connect();
    const store = new PostgresStore({ ...testPg(), schema });
    try {
      await client.query(`CREATE SCHEMA ${schema}`);
      await client.query(`SET search_path = ${schema}`);
      await client.query("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)");
      for (const migration of POSTGRES_MIGRATIONS.filter((m) => m.version <= BEFORE_WORKSPACES)) {
        await client.query(migration.sql);
        await client.query("INSERT INTO schema_migrations VALUES ($1, $2, $3)", [migration.version, migration.name, 1]);
      }
      for (const sql of OLD_ROWS) await client.query(sql);
      await expectUpgraded(store);
    } finally {
      await store.dropSchema().catch(() => undefined);
      await store.close();
      await client.end();
    }
  });
});
