// Which nodes are alive: each node renews a lease row of its own; a node whose lease ran out (kill -9,
// lost machine) is taken over by exactly one surviving node, which runs the recovery for it (its
// `running` writes become `unknown` and get status checks) and then removes it.
//
// A node that was only stalled past its lease finds out on its next heartbeat (`wasTakenOver`): its
// in-flight work has been recovered by another node, and it must not record results over that.
import type pg from "pg";
import { migrateOnce, SCHEMA_NAME_PATTERN, type LockError, type Migration } from "./migrationLock.ts";
import { LEASE_MS_MIN } from "./workQueue.ts";

export const NODE_LEASE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "cluster_nodes: node liveness leases",
    sql: `
CREATE TABLE cluster_nodes (
  node_id TEXT PRIMARY KEY,
  started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  lease_until TIMESTAMPTZ NOT NULL
);
CREATE INDEX cluster_nodes_lease ON cluster_nodes (lease_until);
`,
  },
];
export const NODE_MIGRATIONS_TABLE = "cluster_node_migrations";

export type NodeLeasesOptions = { pool: pg.Pool; schema: string; nodeId: string; leaseMs?: number };

export class NodeLeases {
  readonly nodeId: string;
  readonly leaseMs: number;
  #pool: pg.Pool;
  #table: string;
  #registered = false;

  constructor(options: NodeLeasesOptions) {
    if (!SCHEMA_NAME_PATTERN.test(options.schema)) throw new Error(`schema '${options.schema}' must match ${SCHEMA_NAME_PATTERN}`);
    if (options.nodeId.length === 0 || options.nodeId.length > 200) throw new Error("nodeId must be 1 to 200 characters");
    this.#pool = options.pool;
    this.#table = `"${options.schema}".cluster_nodes`;
    this.nodeId = options.nodeId;
    this.leaseMs = Math.max(LEASE_MS_MIN, Math.round(options.leaseMs ?? 15_000));
  }

  static migrate(pool: pg.Pool, schema: string): Promise<{ ok: true; applied: number[] } | { ok: false; error: LockError }> {
    return migrateOnce(pool, { schema, table: NODE_MIGRATIONS_TABLE, migrations: NODE_LEASE_MIGRATIONS });
  }

  /**
   * Renew this node's lease (call every leaseMs / 3 or so). `wasTakenOver` is true when the node had
   * registered before and its row is gone: another node declared it lost and recovered its work.
   */
  async heartbeat(): Promise<{ wasTakenOver: boolean }> {
    const renewed = await this.#pool.query(`UPDATE ${this.#table} SET lease_until = now() + $2 * interval '1 millisecond' WHERE node_id = $1`, [this.nodeId, this.leaseMs]);
    if (renewed.rowCount === 1) {
      this.#registered = true;
      return { wasTakenOver: false };
    }
    await this.#pool.query(
      `INSERT INTO ${this.#table} (node_id, lease_until) VALUES ($1, now() + $2 * interval '1 millisecond')
       ON CONFLICT (node_id) DO UPDATE SET lease_until = EXCLUDED.lease_until`,
      [this.nodeId, this.leaseMs],
    );
    const wasTakenOver = this.#registered;
    this.#registered = true;
    return { wasTakenOver };
  }

  /** Leave cleanly (graceful shutdown, after this node's own work is finished or recovered). */
  async leave(): Promise<void> {
    await this.#pool.query(`DELETE FROM ${this.#table} WHERE node_id = $1`, [this.nodeId]);
    this.#registered = false;
  }

  /**
   * Take over every node whose lease ran out, one at a time: the row stays locked (so no other node
   * takes the same one) while `recover(nodeId)` runs, and is removed only if it succeeds. `recover`
   * must be idempotent: if this node dies half-way, another one runs it again.
   */
  async takeOverLost(recover: (lostNodeId: string) => Promise<void>, limit = 10): Promise<string[]> {
    const taken: string[] = [];
    for (let i = 0; i < limit; i += 1) {
      const client = await this.#pool.connect();
      const onError = () => undefined;
      client.on("error", onError);
      let lost: string | undefined;
      try {
        await client.query("BEGIN");
        const rows = await client.query<{ node_id: string }>(
          `SELECT node_id FROM ${this.#table} WHERE lease_until < now() AND node_id <> $1 ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED`,
          [this.nodeId],
        );
        lost = rows.rows[0]?.node_id;
        if (lost !== undefined) {
          await recover(lost);
          await client.query(`DELETE FROM ${this.#table} WHERE node_id = $1`, [lost]);
        }
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      } finally {
        client.off("error", onError);
        client.release();
      }
      if (lost === undefined) break;
      taken.push(lost);
    }
    return taken;
  }
}
