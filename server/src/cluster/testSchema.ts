// A PostgreSQL schema of a test run's own on the machine's server, and pools ("nodes") onto it;
// `drop` removes the schema and closes every pool, so a run leaves nothing behind.
import { randomUUID } from "node:crypto";
import pg from "pg";

// The database comes from tests/support/services.ts (the machine's PostgreSQL, or one the test setup started).
import { TEST_DATABASE_URL } from "../../../tests/support/services.ts";

export { TEST_DATABASE_URL };

export class TestSchema {
  readonly name = `caplo_cluster_test_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  #pools: pg.Pool[] = [];

  /** A connection pool standing for one node. */
  pool(max = 4): pg.Pool {
    const pool = new pg.Pool({ connectionString: TEST_DATABASE_URL, max });
    pool.on("error", () => undefined); // an idle connection ended by a test's own fault injection
    this.#pools.push(pool);
    return pool;
  }

  async drop(): Promise<void> {
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    try {
      await admin.query(`DROP SCHEMA IF EXISTS "${this.name}" CASCADE`);
    } finally {
      await admin.end();
    }
    await Promise.allSettled(this.#pools.map((pool) => pool.end()));
  }
}
