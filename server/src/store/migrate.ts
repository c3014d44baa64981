// How every Caplo database of the store's kind is migrated (the store's tables, and the channels' inbox on
// SQLite or PostgreSQL): numbered migrations, one list per dialect, each applied once in version order and
// recorded with its name and time in its set's table (`schema_migrations`, `channel_migrations`), all that
// are missing in one transaction. On PostgreSQL one node at a time migrates a schema (a transaction advisory
// lock on the schema's name, taken before the schema is created, so nodes starting together do not race).
// A migration is never edited once released: add the next number instead.
import type Database from "better-sqlite3";
import type pg from "pg";
import { postgresTransaction } from "./postgresTransaction.ts";

export type Migration = { version: number; name: string; sql: string };

/** Which set of migrations, recorded where, and what to do first with a database from before they were numbered. */
export type MigrationSet<Db> = {
  /** The table that records the set's applied versions (a plain identifier). */
  table: string;
  migrations: readonly Migration[];
  /**
   * Run first, in the same transaction (on PostgreSQL under the lock): brings a database made before the set
   * had numbered migrations, or before its record took this shape, to where the numbered ones begin.
   */
  adopt?: (db: Db) => void | Promise<void>;
};

const TABLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function ordered(set: Pick<MigrationSet<never>, "table" | "migrations">): Migration[] {
  if (!TABLE_NAME.test(set.table)) throw new Error(`migrations table '${set.table}' is not a plain identifier`);
  const versions = set.migrations.map((migration) => migration.version);
  if (new Set(versions).size !== versions.length) throw new Error(`the migrations recorded in ${set.table} repeat a version`);
  return [...set.migrations].sort((a, b) => a.version - b.version);
}

/** Applies what is missing of `set` to a SQLite database, in one IMMEDIATE transaction; returns the versions applied. */
export function migrateSqlite(db: Database.Database, set: MigrationSet<Database.Database>): number[] {
  const migrations = ordered(set);
  const run = (): number[] => {
    set.adopt?.(db);
    db.exec(`CREATE TABLE IF NOT EXISTS ${set.table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const done = new Set((db.prepare(`SELECT version FROM ${set.table}`).all() as Array<{ version: number }>).map((row) => Number(row.version)));
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare(`INSERT INTO ${set.table} (version, name, applied_at) VALUES (?, ?, ?)`).run(migration.version, migration.name, Date.now());
      applied.push(migration.version);
    }
    return applied;
  };
  if (db.inTransaction) return run();
  db.exec("BEGIN IMMEDIATE");
  try {
    const applied = run();
    db.exec("COMMIT");
    return applied;
  } catch (error) {
    if (db.inTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

/** Applies what is missing of `set` to the PostgreSQL schema `schema` (created if missing); returns the versions applied. */
export async function migratePostgres(pool: pg.Pool, schema: string, set: MigrationSet<pg.PoolClient>): Promise<number[]> {
  if (!TABLE_NAME.test(schema)) throw new Error(`schema '${schema}' is not a plain identifier`);
  const migrations = ordered(set);
  return postgresTransaction(pool, async (client) => {
    // One migrator at a time across nodes; the schema is created under the lock too, since two nodes
    // starting together would otherwise race on CREATE SCHEMA IF NOT EXISTS (a unique-key error).
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`caplo-migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(`SET LOCAL search_path TO ${schema}`);
    await set.adopt?.(client);
    await client.query(`CREATE TABLE IF NOT EXISTS ${set.table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`);
    const done = new Set((await client.query(`SELECT version FROM ${set.table}`)).rows.map((row: { version: unknown }) => Number(row.version)));
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query(`INSERT INTO ${set.table} (version, name, applied_at) VALUES ($1, $2, $3)`, [migration.version, migration.name, Date.now()]);
      applied.push(migration.version);
    }
    return applied;
  });
}
