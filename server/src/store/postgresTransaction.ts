// One PostgreSQL transaction on a connection of the pool: BEGIN, the work, COMMIT (ROLLBACK when it throws),
// the connection given back whatever happens.
import type pg from "pg";

export async function postgresTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A checked-out client whose connection is cut (PostgreSQL restarting) emits 'error' besides failing
  // its query; without a listener that event would end the process. The failed query rejects below.
  const onLost = () => undefined;
  client.on("error", onLost);
  try {
    await client.query("BEGIN");
    const value = await fn(client);
    await client.query("COMMIT");
    return value;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.off("error", onLost);
    client.release();
  }
}
