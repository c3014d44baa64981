// A PostgreSQL database of a test's own on the test server (CREATE DATABASE), for what reaches the database
// by URL alone (a `caplo serve` process, `caplo secret --db URL`), which uses its public schema. Dropped at the end.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { TEST_DATABASE_URL, testDatabaseUrl } from "./services.ts";

export type TestDatabase = { url: string; name: string; drop: () => Promise<void> };

export async function createTestDatabase(prefix = "caplo_test", adminUrl = TEST_DATABASE_URL): Promise<TestDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: adminUrl === TEST_DATABASE_URL ? testDatabaseUrl(name) : url.toString(),
    name,
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await client.end();
    },
  };
}
