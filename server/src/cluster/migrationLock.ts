// Run schema migrations once when several nodes start together: a PostgreSQL session advisory lock
// (`pg_advisory_lock`) serialises them, and a table of applied migrations makes every later node skip.
//
// The lock is held by one connection; if its node dies, PostgreSQL drops the connection and the lock
// with it, and the next node in line carries on. Each migration runs in a transaction of its own, so a
// failed one leaves nothing half-applied and is retried by the next start.
import { createHash } from "node:crypto";
import type pg from "pg";

export const SCHEMA_NAME_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;
/** The first half of every advisory lock key Caplo takes ("capl"), so keys of other software differ. */
const LOCK_CLASS = 0x6361706c;
const LOCK_NOT_AVAILABLE = "55P03";

export type Migration = { version: number; name: string; sql: string };

export type LockError = { code: "migration_lock_timeout"; path: string; message: string };

/** The second half of the lock key: a 32-bit hash of the lock's name. */
export function lockKey(name: string): number {
  return createHash("sha256").update(name).digest().readInt32BE(0);
}

/**
 * Run `fn` while holding the advisory lock `name` (waiting at most `timeoutMs` for it) on one
 * connection from `pool`, released afterwards whatever happens.
 */
export async function withAdvisoryLock<T>(
  pool: pg.Pool,
  name: string,
  fn: (client: pg.PoolClient) => Promise<T>,
  options: { timeoutMs?: number } = {},
): Promise<{ ok: true; value: T } | { ok: false; error: LockError }> {
  const timeoutMs = Math.max(1, Math.round(options.timeoutMs ?? 60_000));
  const client = await pool.connect();
  // A connection lost between two queries is reported by the next query; without a listener here the
  // same loss would also surface as an unhandled 'error' event and end the process.
  const onError = () => undefined;
  client.on("error", onError);
  let locked = false;
  try {
    await client.query(`SET lock_timeout = ${timeoutMs}`);
    try {
      await client.query("SELECT pg_advisory_lock($1, $2)", [LOCK_CLASS, lockKey(name)]);
    } catch (error) {
      if ((error as { code?: unknown }).code === LOCK_NOT_AVAILABLE) {
        return { ok: false, error: { code: "migration_lock_timeout", path: name, message: `another node held the lock '${name}' for more than ${timeoutMs} ms` } };
      }
      throw error;
    }
    locked = true;
    await client.query("SET lock_timeout = 0");
    return { ok: true, value: await fn(client) };
  } finally {
    let reusable = true;
    try {
      if (locked) await client.query("SELECT pg_advisory_unlock($1, $2)", [LOCK_CLASS, lockKey(name)]);
      await client.query("RESET lock_timeout");
    } catch {
      reusable = false;
    }
    // A connection whose unlock failed may still hold the lock: destroy it rather than pool it.
    client.off("error", onError);
    client.release(reusable ? undefined : true);
  }
}

export type MigrateOptions = {
  /** The schema the migrations apply to (created if missing, under the lock). */
  schema: string;
  /** Where applied versions are recorded, inside `schema`; one table per set of migrations. */
  table: string;
  migrations: readonly Migration[];
  timeoutMs?: number;
};

/**
 * Apply the migrations not applied yet, in version order, each in its own transaction, under the
 * advisory lock `caplo-migrate:<schema>.<table>`. Returns the versions this call applied.
 */
export async function migrateOnce(pool: pg.Pool, options: MigrateOptions): Promise<{ ok: true; applied: number[] } | { ok: false; error: LockError }> {
  const { schema, table } = options;
  if (!SCHEMA_NAME_PATTERN.test(schema)) throw new Error(`schema '${schema}' must match ${SCHEMA_NAME_PATTERN}`);
  if (!SCHEMA_NAME_PATTERN.test(table)) throw new Error(`table '${table}' must match ${SCHEMA_NAME_PATTERN}`);
  const versions = options.migrations.map((migration) => migration.version);
  if (new Set(versions).size !== versions.length) throw new Error(`migrations for ${schema}.${table} repeat a version`);
  const ordered = [...options.migrations].sort((a, b) => a.version - b.version);

  const result = await withAdvisoryLock(
    pool,
    `caplo-migrate:${schema}.${table}`,
    async (client) => {
      // Inside the lock: two nodes racing on CREATE SCHEMA IF NOT EXISTS can otherwise fail with a
      // unique violation on pg_namespace.
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(`CREATE TABLE IF NOT EXISTS "${schema}"."${table}" (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
      const rows = await client.query<{ version: number }>(`SELECT version FROM "${schema}"."${table}"`);
      const done = new Set(rows.rows.map((row) => Number(row.version)));
      const applied: number[] = [];
      for (const migration of ordered) {
        if (done.has(migration.version)) continue;
        await client.query("BEGIN");
        try {
          await client.query(`SET LOCAL search_path TO "${schema}"`);
          await client.query(migration.sql);
          await client.query(`INSERT INTO "${schema}"."${table}" (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
          await client.query("COMMIT");
        } catch (error) {
          await client.query("ROLLBACK").catch(() => undefined);
          throw error;
        }
        applied.push(migration.version);
      }
      return applied;
    },
    options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {},
  );
  return result.ok ? { ok: true, applied: result.value } : result;
}
