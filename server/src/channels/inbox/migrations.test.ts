// Old inbox databases upgrade in place under the numbered migrations: a SQLite file from before they were
// numbered (its tables made whenever missing, columns added on open), whatever its age, and a PostgreSQL
// schema migrated by the cluster's migrator keep every row they still need (numbered replies, not the
// proposal and question state that is now the engine's), and each migration is recorded once.
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { migrateOnce } from "../../cluster/migrationLock.ts";
import { TEST_DATABASE_URL, TestSchema } from "../../cluster/testSchema.ts";
import { CHANNEL_MIGRATIONS_TABLE, CHANNEL_POSTGRES_MIGRATIONS, CHANNEL_SQLITE_MIGRATIONS } from "./migrations.ts";
import type { InboxStore } from "../ports.ts";
import { PostgresInboxStore } from "./postgresInboxStore.ts";
import { SqliteInboxStore } from "./sqliteInboxStore.ts";

const versions = (migrations: readonly { version: number }[]) => migrations.map((migration) => migration.version);

/** Proposal and question state an inbox kept before migration 3: a proposal's state, a question, and numbered replies. */
const REPLIES = [{ value: "I pick Store 1", label: "Store 1" }, { value: "I pick Store 2", label: "Store 2" }];
const CHANNEL_STATE_BEFORE_3 = [
  `INSERT INTO channel_proposal (conversation_id, proposal_id, state) VALUES ('c-old', 'p_1', 'running')`,
  `INSERT INTO channel_question (conversation_id, question) VALUES ('c-question', '${JSON.stringify({ elicitationId: "q_1", field: "size", options: [{ value: "S", label: "S" }] })}')`,
  `INSERT INTO channel_question (conversation_id, question) VALUES ('c-replies', '${JSON.stringify({ kind: "replies", elicitationId: "", field: "", options: REPLIES })}')`,
];

/** After migration 3 the channel keeps only its numbered replies: a question and a proposal's state are the engine's. */
async function expectNoSecondLedger(store: InboxStore): Promise<void> {
  expect(await store.getNumberedReplies("c-replies")).toEqual(REPLIES);
  expect(await store.getNumberedReplies("c-question")).toBeUndefined();
}

describe("a SQLite inbox from before numbered migrations", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "caplo-inbox-migrate-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** The versions a file records, opening it (and closing it) first. */
  const recorded = (file: string): number[] => {
    new SqliteInboxStore(file).close();
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare(`SELECT version FROM ${CHANNEL_MIGRATIONS_TABLE} ORDER BY version`).all() as Array<{ version: number }>).map((row) => row.version);
    } finally {
      db.close();
    }
  };

  it("a file made before the hand-off column existed gets it on open, and keeps its rows", async () => {
    const file = join(dir, "old.db");
    const db = new Database(file);
    db.exec(`CREATE TABLE channel_inbox (platform TEXT NOT NULL, message_id TEXT NOT NULL, event TEXT NOT NULL, received_at INTEGER NOT NULL,
      state TEXT NOT NULL DEFAULT 'received', error TEXT, PRIMARY KEY (platform, message_id))`);
    db.prepare(`INSERT INTO channel_inbox (platform, message_id, event, received_at) VALUES ('whatsapp', 'SM1', '{}', 1)`).run();
    db.close();
    const store = new SqliteInboxStore(file);
    await store.markHanded("whatsapp", "SM1", '{"type":"message","text":"hi"}');
    expect(await store.listInbound()).toEqual([expect.objectContaining({ messageId: "SM1", state: "received", handed: '{"type":"message","text":"hi"}' })]);
    store.close();
    expect(recorded(file)).toEqual(versions(CHANNEL_SQLITE_MIGRATIONS));
  });

  it("a binding made before accounts were kept is rebuilt with its state and adopted by the account its customer writes to first", async () => {
    const file = join(dir, "bindings-v1.db");
    const db = new Database(file);
    db.exec(`CREATE TABLE channel_binding (platform TEXT NOT NULL, external_id TEXT NOT NULL, conversation_id TEXT NOT NULL UNIQUE,
      last_inbound_at INTEGER NOT NULL, disclosed INTEGER NOT NULL DEFAULT 0, cursor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (platform, external_id))`);
    db.prepare(`INSERT INTO channel_binding VALUES ('whatsapp', 'whatsapp:+38640111222', 'conv-old', 77, 1, 9)`).run();
    db.close();
    const store = new SqliteInboxStore(file);
    const customer = { platform: "whatsapp" as const, externalId: "whatsapp:+38640111222" };
    expect(await store.findBinding({ ...customer, account: "whatsapp:+14155238886" })).toMatchObject({ conversationId: "conv-old", account: "whatsapp:+14155238886", lastInboundAt: 77, disclosed: true, cursor: 9 });
    expect(await store.findBinding({ ...customer, account: "whatsapp:+14155230000" })).toBeUndefined();
    expect((await store.bind({ ...customer, account: "whatsapp:+14155230000" }, "conv-new", 80)).conversationId).toBe("conv-new");
    expect((await store.listBindings()).map((x) => [x.account, x.conversationId]).sort()).toEqual([
      ["whatsapp:+14155230000", "conv-new"],
      ["whatsapp:+14155238886", "conv-old"],
    ]);
    store.close();
    expect(recorded(file)).toEqual(versions(CHANNEL_SQLITE_MIGRATIONS));
  });

  it("a file with every table but no record of migrations is adopted as it is: rows kept, each migration recorded once, opening again changes nothing", async () => {
    const file = join(dir, "unnumbered.db");
    const db = new Database(file);
    // What the last release before numbered migrations made: these same tables, created whenever missing.
    for (const migration of CHANNEL_SQLITE_MIGRATIONS.filter((m) => m.version <= 2)) db.exec(migration.sql);
    db.prepare(`INSERT INTO channel_inbox (platform, message_id, event, received_at, state) VALUES ('messenger', 'm_1', '{}', 5, 'done')`).run();
    db.prepare(`INSERT INTO channel_outbox (platform, conversation_id, seq, part, state, attempts, platform_id, at) VALUES ('messenger', 'c1', 1, 0, 'sent', 1, 'mid.1', 6)`).run();
    db.prepare(`INSERT INTO channel_status (platform, platform_id, status, at) VALUES ('messenger', 'mid.1', 'read', 7)`).run();
    for (const sql of CHANNEL_STATE_BEFORE_3) db.exec(sql);
    db.close();
    expect(recorded(file)).toEqual(versions(CHANNEL_SQLITE_MIGRATIONS));
    expect(recorded(file)).toEqual(versions(CHANNEL_SQLITE_MIGRATIONS));
    const store = new SqliteInboxStore(file);
    expect(await store.listInbound("done")).toEqual([expect.objectContaining({ platform: "messenger", messageId: "m_1" })]);
    expect((await store.listOutbox("c1"))[0]).toMatchObject({ platformId: "mid.1", statuses: [{ status: "read", at: 7 }] });
    await expectNoSecondLedger(store);
    store.close();
    const db2 = new Database(file, { readonly: true });
    expect(db2.prepare(`SELECT name FROM sqlite_master WHERE name IN ('channel_proposal', 'channel_question')`).all()).toEqual([]);
    db2.close();
  });
});

describe("a PostgreSQL inbox migrated by the cluster's migrator", () => {
  let schema: TestSchema;
  beforeEach(() => {
    schema = new TestSchema();
  });
  afterEach(() => schema.drop());

  it("upgrades in place: rows kept, its record of migrations takes the store's shape, nothing applied twice", async () => {
    const pool = schema.pool(1);
    // What the release before made: migrations 1 and 2 under cluster/migrationLock.ts (applied_at a timestamp).
    const before = await migrateOnce(pool, { schema: schema.name, table: CHANNEL_MIGRATIONS_TABLE, migrations: CHANNEL_POSTGRES_MIGRATIONS.filter((m) => m.version <= 2) });
    expect(before).toEqual({ ok: true, applied: [1, 2] });
    await pool.query(`INSERT INTO "${schema.name}".channel_inbox (platform, message_id, event, received_at, state) VALUES ('whatsapp', 'SM9', '{}', 9, 'received')`);
    await pool.query(`INSERT INTO "${schema.name}".channel_binding (platform, account, external_id, conversation_id, last_inbound_at, cursor) VALUES ('whatsapp', 'whatsapp:+1', 'whatsapp:+2', 'conv-pg', 3, 4)`);
    for (const sql of CHANNEL_STATE_BEFORE_3) await pool.query(sql.replaceAll("INTO channel_", `INTO "${schema.name}".channel_`));
    const stores = await Promise.all(["node-a", "node-b"].map((nodeId) => PostgresInboxStore.open({ connectionString: TEST_DATABASE_URL, schema: schema.name, nodeId, max: 1 })));
    try {
      const recorded = await pool.query(`SELECT version, applied_at FROM "${schema.name}".${CHANNEL_MIGRATIONS_TABLE} ORDER BY version`);
      expect(recorded.rows.map((row) => Number(row.version))).toEqual(versions(CHANNEL_POSTGRES_MIGRATIONS));
      // Milliseconds, as the store records them (the timestamps it had are kept, converted).
      expect(recorded.rows.every((row) => Number(row.applied_at) > Date.parse("2020-01-01"))).toBe(true);
      expect(await stores[0]!.listInbound("received")).toEqual([expect.objectContaining({ messageId: "SM9", receivedAt: 9 })]);
      expect(await stores[1]!.findBinding({ platform: "whatsapp", account: "whatsapp:+1", externalId: "whatsapp:+2" })).toMatchObject({ conversationId: "conv-pg", cursor: 4 });
      await expectNoSecondLedger(stores[0]!);
      expect((await pool.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('channel_proposal', 'channel_question')`, [schema.name])).rows).toEqual([]);
    } finally {
      for (const store of stores) store.close();
    }
    // Opening again applies nothing.
    const again = await PostgresInboxStore.open({ connectionString: TEST_DATABASE_URL, schema: schema.name, nodeId: "node-c", max: 1 });
    again.close();
    expect((await pool.query(`SELECT count(*)::int AS n FROM "${schema.name}".${CHANNEL_MIGRATIONS_TABLE}`)).rows[0].n).toBe(CHANNEL_POSTGRES_MIGRATIONS.length);
  });
});
