// Migrations under the advisory lock, on the machine's PostgreSQL, in a schema of this run's own.
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { migrateOnce, withAdvisoryLock, type Migration } from "./migrationLock.ts";
import { TEST_DATABASE_URL, TestSchema } from "./testSchema.ts";

const schema = new TestSchema();
afterAll(() => schema.drop());

/** v1 fails if it ever runs twice (CREATE TABLE without IF NOT EXISTS); both leave a row per run. */
const MIGRATIONS: Migration[] = [
  { version: 1, name: "log", sql: "CREATE TABLE migration_log (version INTEGER NOT NULL); INSERT INTO migration_log VALUES (1);" },
  { version: 2, name: "second", sql: "CREATE TABLE second (id INTEGER); INSERT INTO migration_log VALUES (2);" },
];

describe("migrateOnce", () => {
  it("applies each migration exactly once when five nodes start together on a schema that does not exist yet", async () => {
    const nodes = Array.from({ length: 5 }, () => schema.pool(1));
    const results = await Promise.all(nodes.map((pool) => migrateOnce(pool, { schema: schema.name, table: "test_migrations", migrations: MIGRATIONS })));
    const applied = results.map((result) => (result.ok ? result.applied : result.error.code));
    expect(applied.filter((versions) => Array.isArray(versions) && versions.length > 0)).toEqual([[1, 2]]);
    expect(applied.filter((versions) => Array.isArray(versions) && versions.length === 0)).toHaveLength(4);
    const log = await nodes[0]!.query(`SELECT version FROM "${schema.name}".migration_log ORDER BY version`);
    expect(log.rows).toEqual([{ version: 1 }, { version: 2 }]);
  });

  it("leaves nothing of a failed migration behind and applies it on the next start", async () => {
    const pool = schema.pool(1);
    const broken: Migration = { version: 3, name: "broken", sql: "CREATE TABLE third (id INTEGER); SELECT no_such_function();" };
    await expect(migrateOnce(pool, { schema: schema.name, table: "test_migrations", migrations: [...MIGRATIONS, broken] })).rejects.toThrow(/no_such_function/);
    const third = await pool.query("SELECT to_regclass($1) AS t", [`"${schema.name}".third`]);
    expect(third.rows[0].t).toBeNull();
    const fixed: Migration = { version: 3, name: "fixed", sql: "CREATE TABLE third (id INTEGER);" };
    expect(await migrateOnce(pool, { schema: schema.name, table: "test_migrations", migrations: [...MIGRATIONS, fixed] })).toEqual({ ok: true, applied: [3] });
  });

  it("gives up with migration_lock_timeout when another node holds the lock longer than the timeout", async () => {
    const holder = schema.pool(1);
    const waiter = schema.pool(1);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const holding = withAdvisoryLock(holder, `caplo-migrate:${schema.name}.test_migrations`, async () => {
      entered();
      await held;
    });
    await inside;
    const result = await migrateOnce(waiter, { schema: schema.name, table: "test_migrations", migrations: MIGRATIONS, timeoutMs: 100 });
    expect(result).toEqual({
      ok: false,
      error: { code: "migration_lock_timeout", path: `caplo-migrate:${schema.name}.test_migrations`, message: `another node held the lock 'caplo-migrate:${schema.name}.test_migrations' for more than 100 ms` },
    });
    release();
    expect(await holding).toEqual({ ok: true, value: undefined });
    // The waiter's pooled connection is usable again, without the lock timeout it had set.
    const setting = await waiter.query("SHOW lock_timeout");
    expect(setting.rows[0].lock_timeout).toBe("0");
  });

  it("lets the next node in when the node holding the lock dies", async () => {
    const name = `caplo-migrate:${schema.name}.dying`;
    const dying = schema.pool(1);
    let entered!: (pid: number) => void;
    const inside = new Promise<number>((resolve) => (entered = resolve));
    const holding = withAdvisoryLock(dying, name, async (client) => {
      const pid = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      entered(pid.rows[0]!.pid);
      await client.query("SELECT pg_sleep(30)"); // killed long before
    });
    const ended = holding.then(() => "finished", (error: unknown) => error);
    const pid = await inside;
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
    await admin.end();
    expect(await ended).toMatchObject({ code: "57P01" }); // terminating connection due to administrator command
    const next = await withAdvisoryLock(schema.pool(1), name, async () => "got it", { timeoutMs: 5_000 });
    expect(next).toEqual({ ok: true, value: "got it" });
  });
});
