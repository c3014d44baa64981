// What a gateway node on a shared PostgreSQL runs beside its engine: its liveness lease (renewed every
// third of the lease), and the takeover of nodes whose lease ran out, whose running writes it recovers
// (they become unknown, the customer is told, status checks start; the idempotency key is kept).
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { NodeLeases } from "./nodeLeases.ts";
import { startNodeLiveness, type NodeLiveness } from "./nodeLiveness.ts";
import { LEASE_MS_MIN } from "./workQueue.ts";

export const NODE_LEASE_MS_DEFAULT = 15_000;
export const NODE_LEASE_MS_MAX = 10 * 60_000;

/** A node id unique per process: two nodes on one host, or a restarted node, never share one. */
export function uniqueNodeId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

export type ClusterNodeOptions = {
  databaseUrl: string;
  /** The schema the store's tables live in (the lease table goes beside them). */
  schema: string;
  nodeId: string;
  leaseMs?: number;
  /** Recover a lost node's writes (idempotent): `engine.recover(lostNodeId)`. */
  recover: (lostNodeId: string) => Promise<unknown>;
  log: (level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>) => void;
};

export type ClusterNode = {
  readonly nodeId: string;
  readonly leaseMs: number;
  /** One heartbeat and takeover round now (also what the timer runs). */
  round(): Promise<void>;
  /** Stop; `leave` removes this node's lease (a clean shutdown after its own work has finished). */
  stop(options?: { leave?: boolean }): Promise<void>;
};

/** Migrate the lease table (once across nodes), register this node and start its liveness loop. */
export async function startClusterNode(options: ClusterNodeOptions): Promise<ClusterNode> {
  const leaseMs = Math.min(NODE_LEASE_MS_MAX, Math.max(LEASE_MS_MIN, Math.round(options.leaseMs ?? NODE_LEASE_MS_DEFAULT)));
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 2 });
  // An idle connection ended by a PostgreSQL restart is reported here; the next round reconnects.
  pool.on("error", (error) => options.log("warn", "cluster: a PostgreSQL connection was lost", { error: error.message }));
  const migrated = await NodeLeases.migrate(pool, options.schema).catch(async (error: unknown) => {
    await pool.end();
    throw error;
  });
  if (!migrated.ok) {
    await pool.end();
    throw Object.assign(new Error(migrated.error.message), { code: migrated.error.code, path: migrated.error.path });
  }
  const leases = new NodeLeases({ pool, schema: options.schema, nodeId: options.nodeId, leaseMs });
  // Register before serving, so a node that dies right after start is still found and taken over.
  await leases.heartbeat();
  let lastError = "";
  const liveness: NodeLiveness = startNodeLiveness({
    leases,
    recover: async (lostNodeId) => {
      const recovered = await options.recover(lostNodeId);
      options.log("warn", "cluster: took over a lost node", { lostNodeId, writes: Array.isArray(recovered) ? recovered.length : undefined });
    },
    onTakenOver: () =>
      options.log("error", "cluster: this node stalled past its lease and another node recovered its running writes; their late results are refused", { nodeId: options.nodeId }),
    onOk: () => {
      if (lastError) options.log("info", "cluster: liveness rounds succeed again", { nodeId: options.nodeId });
      lastError = "";
    },
    onError: (error) => {
      const message = error instanceof Error ? error.message : String(error);
      // Once per distinct failure, not every round while PostgreSQL is away.
      if (message !== lastError) options.log("warn", "cluster: liveness round failed; retrying", { error: message });
      lastError = message;
    },
  });
  return {
    nodeId: options.nodeId,
    leaseMs,
    round: () => liveness.round(),
    async stop(stopOptions = {}) {
      try {
        await liveness.stop(stopOptions);
      } finally {
        await pool.end();
      }
    },
  };
}
