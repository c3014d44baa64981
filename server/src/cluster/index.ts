// What other folders may use for running several nodes on one PostgreSQL: claimed work with leases,
// node liveness leases with takeover of lost nodes, and migrations that run once under an advisory lock.
export { migrateOnce, withAdvisoryLock, lockKey, SCHEMA_NAME_PATTERN, type Migration, type MigrateOptions, type LockError } from "./migrationLock.ts";
export {
  WorkQueue,
  WORK_QUEUE_MIGRATIONS,
  CLUSTER_MIGRATIONS_TABLE,
  WORK_KIND_PATTERN,
  WORK_KEY_MAX,
  WORK_PAYLOAD_MAX_BYTES,
  CLAIM_LIMIT_MAX,
  LEASE_MS_MIN,
  LEASE_MS_DEFAULT,
  type WorkClaim,
  type WorkError,
  type WorkQueueOptions,
} from "./workQueue.ts";
export { NodeLeases, NODE_LEASE_MIGRATIONS, NODE_MIGRATIONS_TABLE, type NodeLeasesOptions } from "./nodeLeases.ts";
export { startNodeLiveness, type NodeLiveness, type NodeLivenessOptions } from "./nodeLiveness.ts";
