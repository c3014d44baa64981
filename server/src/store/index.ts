// The store's public surface: the Store interface, its two implementations and a factory from config.
export * from "./store.ts";
export { SqliteStore, type SqliteStoreOptions } from "./sqliteStore.ts";
export { PostgresStore, type PostgresStoreOptions } from "./postgresStore.ts";
import { PostgresStore } from "./postgresStore.ts";
import { SqliteStore } from "./sqliteStore.ts";
import type { Store } from "./store.ts";

/** Open (and migrate) the store a URL names: `postgres://...` for PostgreSQL, anything else is a SQLite file path. */
export async function openStore(location: string, options: { schema?: string; synchronous?: "normal" | "full" } = {}): Promise<Store> {
  const store: Store = /^postgres(ql)?:\/\//.test(location)
    ? new PostgresStore({ connectionString: location, schema: options.schema })
    : new SqliteStore(location.replace(/^sqlite:/, ""), { ...(options.synchronous && { synchronous: options.synchronous }) });
  await store.migrate();
  return store;
}
