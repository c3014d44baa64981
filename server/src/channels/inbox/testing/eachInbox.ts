// The two-store setup of the inbox's contract suite: `describeEachInbox` runs a suite on a SQLite file and on
// a PostgreSQL schema of its own (both new for each test, since an inbox is claimed whole), with two nodes on
// one database, each PostgreSQL node holding a live liveness lease as a cluster node does, and `restart()`: the
// first node is lost and a new one starts on the same database (SQLite: the one process again).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe } from "vitest";
import { NodeLeases } from "../../../cluster/nodeLeases.ts";
import { TEST_DATABASE_URL, TestSchema } from "../../../cluster/testSchema.ts";
import { forwarding } from "../../../store/testing/storeHarness.ts";
import type { InboxStore } from "../../ports.ts";
import { PostgresInboxStore } from "../postgresInboxStore.ts";
import { SqliteInboxStore } from "../sqliteInboxStore.ts";

export type EachInbox = {
  readonly kind: "sqlite" | "postgres";
  /** The first node's store: stands for the one open now (a new node after `restart`). */
  readonly store: InboxStore;
  /** A second node on the same database. */
  readonly second: InboxStore;
  /** The first node is lost (killed: its claims are held no more) and a new node starts on the same database. */
  restart: () => Promise<void>;
};

type Database = { open: (nodeId: string) => Promise<InboxStore>; lose: (nodeId: string, store: InboxStore) => Promise<void>; close: () => Promise<void> };

function sqliteInbox(): Database {
  const dir = mkdtempSync(join(tmpdir(), "caplo-inbox-"));
  const opened: SqliteInboxStore[] = [];
  return {
    open: async () => {
      const store = new SqliteInboxStore(join(dir, "channels.db"));
      opened.push(store);
      return store;
    },
    lose: async (_nodeId, store) => (store as SqliteInboxStore).close(),
    close: async () => {
      for (const store of opened) if (store.db.open) store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresInbox(): Database {
  const schema = new TestSchema();
  const opened: PostgresInboxStore[] = [];
  const leases = new Map<string, NodeLeases>();
  return {
    open: async (nodeId) => {
      const store = await PostgresInboxStore.open({ connectionString: TEST_DATABASE_URL, schema: schema.name, nodeId, max: 2 });
      opened.push(store);
      const lease = new NodeLeases({ pool: schema.pool(1), schema: schema.name, nodeId, leaseMs: 60_000 });
      await lease.heartbeat();
      leases.set(nodeId, lease);
      return store;
    },
    lose: async (nodeId, store) => {
      await leases.get(nodeId)!.leave();
      (store as PostgresInboxStore).close();
    },
    close: async () => {
      for (const store of opened) store.close();
      await schema.drop();
    },
  };
}

/** Runs `suite` on SQLite and on PostgreSQL, titled `title (sqlite)` and `title (postgres)`; each test gets a new database. */
export function describeEachInbox(title: string, suite: (each: EachInbox) => void): void {
  describe.each([
    { name: "sqlite" as const, database: sqliteInbox },
    { name: "postgres" as const, database: postgresInbox },
  ])(`${title} ($name)`, ({ name, database }) => {
    let db: Database | undefined;
    let first: { nodeId: string; store: InboxStore } | undefined;
    let second: InboxStore | undefined;
    let nodes = 0;
    beforeEach(async () => {
      db = database();
      nodes = 0;
      first = { nodeId: `node-${++nodes}`, store: await db.open(`node-${nodes}`) };
      second = await db.open(`node-${++nodes}`);
    });
    afterEach(async () => {
      await db?.close();
      db = first = second = undefined;
    });
    suite({
      kind: name,
      store: forwarding(() => first?.store),
      second: forwarding(() => second),
      restart: async () => {
        if (!db || !first) throw new Error("restart: no store is open");
        await db.lose(first.nodeId, first.store);
        const nodeId = `node-${++nodes}`;
        first = { nodeId, store: await db.open(nodeId) };
      },
    });
  });
}
