// The channel glue's durable state (the InboxStore of ports.ts) in one place: a SQLite file for one node, the
// deployment's PostgreSQL shared by several, both made by the same numbered migrations (migrations.ts) and
// held to one contract (inboxStore.contract.test.ts).
export { SqliteInboxStore } from "./sqliteInboxStore.ts";
export { PostgresInboxStore, INBOUND_CLAIM_MS, OUTBOX_CLAIM_MS, type PostgresInboxStoreOptions } from "./postgresInboxStore.ts";
export { CHANNEL_MIGRATIONS_TABLE, CHANNEL_POSTGRES_MIGRATIONS, CHANNEL_SQLITE_MIGRATIONS } from "./migrations.ts";
