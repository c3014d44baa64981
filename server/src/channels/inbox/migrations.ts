// The channels' inbox tables as numbered migrations, one list per dialect, applied by the store's migration
// runner (store/migrate.ts) and recorded in channel_migrations. The two dialects differ only where PostgreSQL
// keeps what several nodes need (who claimed an inbound event or an outbound part, and until when). A
// migration is never edited once released: add the next number instead.
//
// Databases from before: a SQLite file made before the inbox had numbered migrations (its tables created
// whenever they were missing, a column added on open) is adopted once — the columns it lacks are added, and
// migrations 1 and 2, which create only what is missing, are recorded — and a PostgreSQL schema whose
// channel_migrations table was kept by the cluster's migrator (applied_at a timestamp) gets the store's shape.
import type Database from "better-sqlite3";
import type pg from "pg";
import type { Migration, MigrationSet } from "../../store/migrate.ts";

export const CHANNEL_MIGRATIONS_TABLE = "channel_migrations";

type Dialect = {
  bigint: string;
  boolean: string;
  false: string;
  /** A surrogate key column (PostgreSQL's outbox and status rows are ordered by it; SQLite has its rowid). */
  serial: string;
  /** The inbox's claim columns and the outbox's lease columns (PostgreSQL only: several nodes share them). */
  inboxClaim: string;
  outboxClaim: string;
};

const SQLITE: Dialect = { bigint: "INTEGER", boolean: "INTEGER", false: "0", serial: "", inboxClaim: "", outboxClaim: "" };
const POSTGRES: Dialect = {
  bigint: "BIGINT",
  boolean: "BOOLEAN",
  false: "FALSE",
  serial: "\n  id BIGSERIAL,",
  inboxClaim: "\n  claimed_by TEXT,\n  claimed_at TIMESTAMPTZ,",
  outboxClaim: "\n  claimed_by TEXT,\n  lease_until TIMESTAMPTZ,",
};

/** The webhook inbox (one row per platform message id), customers' bindings, button references, proposal and question state (until 3), the outbox and Content SIDs. */
const channelState = (d: Dialect) => `
CREATE TABLE IF NOT EXISTS channel_inbox (
  platform TEXT NOT NULL,
  message_id TEXT NOT NULL,
  event TEXT NOT NULL,
  received_at ${d.bigint} NOT NULL,
  state TEXT NOT NULL DEFAULT 'received',
  error TEXT,
  handed TEXT,${d.inboxClaim}
  PRIMARY KEY (platform, message_id)
);
CREATE INDEX IF NOT EXISTS channel_inbox_state ON channel_inbox (state, received_at);
CREATE TABLE IF NOT EXISTS channel_binding (
  platform TEXT NOT NULL,
  account TEXT NOT NULL DEFAULT '',
  external_id TEXT NOT NULL,
  conversation_id TEXT NOT NULL UNIQUE,
  last_inbound_at ${d.bigint} NOT NULL,
  disclosed ${d.boolean} NOT NULL DEFAULT ${d.false},
  cursor ${d.bigint} NOT NULL DEFAULT 0,
  PRIMARY KEY (platform, account, external_id)
);
CREATE TABLE IF NOT EXISTS channel_ref (
  token TEXT PRIMARY KEY,
  platform TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  target_id TEXT NOT NULL,
  field TEXT,
  value TEXT
);
CREATE TABLE IF NOT EXISTS channel_proposal (
  conversation_id TEXT NOT NULL,
  proposal_id TEXT NOT NULL,
  state TEXT NOT NULL,
  PRIMARY KEY (conversation_id, proposal_id)
);
CREATE TABLE IF NOT EXISTS channel_question (
  conversation_id TEXT PRIMARY KEY,
  question TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS channel_outbox (${d.serial}
  platform TEXT NOT NULL,
  conversation_id TEXT NOT NULL,
  seq ${d.bigint} NOT NULL,
  part INTEGER NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  code TEXT,
  message TEXT,
  platform_id TEXT,
  at ${d.bigint} NOT NULL,${d.outboxClaim}
  PRIMARY KEY (platform, conversation_id, seq, part)
);
CREATE INDEX IF NOT EXISTS channel_outbox_platform_id ON channel_outbox (platform_id);
CREATE INDEX IF NOT EXISTS channel_outbox_state_at ON channel_outbox (state, at);
CREATE TABLE IF NOT EXISTS channel_content (
  hash TEXT PRIMARY KEY,
  content_sid TEXT NOT NULL
);
`;

/** What the platforms report about each part sent (Twilio status callbacks, Meta delivery and read receipts), once per status. */
const deliveryStatuses = (d: Dialect) => `
CREATE TABLE IF NOT EXISTS channel_status (${d.serial}
  platform TEXT NOT NULL,
  platform_id TEXT NOT NULL,
  status TEXT NOT NULL,
  at ${d.bigint} NOT NULL,
  error_code INTEGER,
  PRIMARY KEY (platform, platform_id, status)
);
`;

/**
 * The channels keep no second ledger: a proposal's state and the open question are the engine's, asked for
 * when a customer taps or types. What stays is the channel's own: the reply actions it sent as numbered text,
 * kept as their options only (the rows of other questions go; `optionsOf` reads the options from the JSON).
 */
const noSecondLedger = (optionsOf: string) => `
DROP TABLE IF EXISTS channel_proposal;
DELETE FROM channel_question WHERE question NOT LIKE '%"kind":"replies"%';
ALTER TABLE channel_question RENAME TO channel_numbered_replies;
ALTER TABLE channel_numbered_replies RENAME COLUMN question TO options;
UPDATE channel_numbered_replies SET options = ${optionsOf};
`;

const migrations = (d: Dialect, optionsOf: string): Migration[] => [
  { version: 1, name: "channel state shared by the nodes", sql: channelState(d) },
  { version: 2, name: "delivery statuses of sent parts", sql: deliveryStatuses(d) },
  { version: 3, name: "no proposal or question state: the engine's; numbered replies kept", sql: noSecondLedger(optionsOf) },
];

export const CHANNEL_SQLITE_MIGRATIONS: readonly Migration[] = migrations(SQLITE, "json_extract(options, '$.options')");
export const CHANNEL_POSTGRES_MIGRATIONS: readonly Migration[] = migrations(POSTGRES, "(options::jsonb -> 'options')::text");

function sqliteColumns(db: Database.Database, table: string): Set<string> {
  return new Set((db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((column) => column.name));
}

/**
 * A SQLite file from before numbered migrations: its inbox gains the hand-off column, and its bindings the
 * account in their key (SQLite cannot change a primary key in place: the table is made again, old bindings
 * get '' and are adopted by the account their customer next writes to, see findBinding).
 */
function adoptSqlite(db: Database.Database): void {
  if (sqliteColumns(db, CHANNEL_MIGRATIONS_TABLE).size > 0) return;
  const inbox = sqliteColumns(db, "channel_inbox");
  if (inbox.size > 0 && !inbox.has("handed")) db.exec(`ALTER TABLE channel_inbox ADD COLUMN handed TEXT`);
  const binding = sqliteColumns(db, "channel_binding");
  if (binding.size > 0 && !binding.has("account")) {
    db.exec(`ALTER TABLE channel_binding RENAME TO channel_binding_v0`);
    db.exec(channelState(SQLITE));
    db.exec(`INSERT INTO channel_binding (platform, account, external_id, conversation_id, last_inbound_at, disclosed, cursor)
      SELECT platform, '', external_id, conversation_id, last_inbound_at, disclosed, cursor FROM channel_binding_v0`);
    db.exec(`DROP TABLE channel_binding_v0`);
  }
}

/** A schema migrated by the cluster's migrator (cluster/migrationLock.ts) kept applied_at as a timestamp: now milliseconds, as the store keeps it. */
async function adoptPostgres(client: pg.PoolClient): Promise<void> {
  const column = await client.query(
    `SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name = 'applied_at'`,
    [CHANNEL_MIGRATIONS_TABLE],
  );
  if (column.rows[0]?.data_type !== "timestamp with time zone") return;
  await client.query(`ALTER TABLE ${CHANNEL_MIGRATIONS_TABLE} ALTER COLUMN applied_at DROP DEFAULT,
    ALTER COLUMN applied_at TYPE BIGINT USING (extract(epoch FROM applied_at) * 1000)::bigint`);
}

export const CHANNEL_SQLITE_SET: MigrationSet<Database.Database> = { table: CHANNEL_MIGRATIONS_TABLE, migrations: CHANNEL_SQLITE_MIGRATIONS, adopt: adoptSqlite };
export const CHANNEL_POSTGRES_SET: MigrationSet<pg.PoolClient> = { table: CHANNEL_MIGRATIONS_TABLE, migrations: CHANNEL_POSTGRES_MIGRATIONS, adopt: adoptPostgres };
