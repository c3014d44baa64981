// Each store a test runs on: SQLite in a real file and PostgreSQL in a schema of its own (dropped afterwards),
// opened (and migrated) as often as the test needs (two opens are two nodes on one database), with raw SQL for
// what a test checks or breaks underneath the store (rows as kept, a trigger refusing an insert).
import Database from "better-sqlite3";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testPg } from "../../../../tests/support/services.ts";
import { PostgresStore } from "../postgresStore.ts";
import { SqliteStore } from "../sqliteStore.ts";
import type { Store } from "../store.ts";

export type StoreHarness = {
  name: "sqlite" | "postgres";
  /** A new store on the harness's database, migrated. */
  open: () => Promise<Store>;
  /** Where a server finds this database: the SQLite file's path, or a postgres:// URL (schema by `schema`). */
  location: string;
  /** The PostgreSQL schema (undefined for SQLite). */
  schema?: string;
  /** Raw SQL on the database: a SELECT's rows, else the statements are run and [] returned. */
  sql: (text: string) => Promise<Array<Record<string, unknown>>>;
  cleanup: () => Promise<void>;
};

export function sqliteHarness(): StoreHarness {
  const dir = mkdtempSync(join(tmpdir(), "caplo-store-"));
  const path = join(dir, "caplo.db");
  return {
    name: "sqlite",
    location: path,
    open: async () => {
      const store = new SqliteStore(path);
      await store.migrate();
      return store;
    },
    sql: async (text) => {
      const db = new Database(path);
      try {
        if (/^\s*select\b/i.test(text)) return db.prepare(text).all() as Array<Record<string, unknown>>;
        db.exec(text);
        return [];
      } finally {
        db.close();
      }
    },
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

export function postgresHarness(prefix = "caplo_test"): StoreHarness {
  const schema = `${prefix}_${process.pid}_${randomBytes(4).toString("hex")}`;
  const settings = { ...testPg(), schema };
  const url = new URL(`postgres://${encodeURIComponent(settings.user)}${settings.password ? `:${encodeURIComponent(settings.password)}` : ""}@${settings.host}:${settings.port}/${encodeURIComponent(settings.database)}`);
  return {
    name: "postgres",
    location: url.toString(),
    schema,
    open: async () => {
      const store = new PostgresStore(settings);
      await store.migrate();
      return store;
    },
    sql: async (text) => {
      const { default: pg } = await import("pg");
      const client = new pg.Client({ ...testPg(), options: `-c search_path=${schema}` });
      await client.connect();
      try {
        const result = await client.query(text);
        return Array.isArray(result) ? [] : (result.rows as Array<Record<string, unknown>>);
      } finally {
        await client.end();
      }
    },
    cleanup: async () => {
      const store = new PostgresStore(settings);
      await store.dropSchema();
      await store.close();
    },
  };
}

/** Both stores, for `describe.each(eachStore())`. */
export function eachStore(prefix?: string): StoreHarness[] {
  return [sqliteHarness(), postgresHarness(prefix)];
}
