// Work that exactly one node must do (a status check, a received webhook), claimed from PostgreSQL with
// `FOR UPDATE SKIP LOCKED` under a lease: the claiming node has until `leaseUntil` to finish, renew or
// retry it; if the node is lost, the lease runs out and another node's `claimDue` takes the work over.
//
// Every claim carries a fencing token (how many times the item was claimed). `complete`, `retry` and
// `renew` succeed only for the current holder with the current token, so a node that stalled past its
// lease cannot record a result over the node that took over. Times come from the database's clock
// (`now()`), never a node's, so nodes with skewed clocks agree on when a lease ran out.
import type pg from "pg";
import { migrateOnce, SCHEMA_NAME_PATTERN, type LockError, type Migration } from "./migrationLock.ts";

export const WORK_KIND_PATTERN = /^[a-z][a-z0-9_.-]{0,63}$/;
export const WORK_KEY_MAX = 200;
export const WORK_PAYLOAD_MAX_BYTES = 64 * 1024;
export const CLAIM_LIMIT_MAX = 1_000;
export const LEASE_MS_MIN = 1_000;
export const LEASE_MS_DEFAULT = 30_000;
/** Where this module records its migrations (beside the store's own, in the same schema). */
export const CLUSTER_MIGRATIONS_TABLE = "cluster_migrations";

export const WORK_QUEUE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "work_items: claimable work with leases",
    sql: `
CREATE TABLE work_items (
  id BIGSERIAL PRIMARY KEY,
  kind TEXT NOT NULL,
  key TEXT NOT NULL,
  payload JSONB NOT NULL,
  due_at TIMESTAMPTZ NOT NULL,
  claimed_by TEXT,
  lease_until TIMESTAMPTZ,
  claims INTEGER NOT NULL DEFAULT 0,
  done_at TIMESTAMPTZ,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  UNIQUE (kind, key)
);
CREATE INDEX work_items_due ON work_items (kind, due_at, id) WHERE done_at IS NULL;
`,
  },
];

export type WorkClaim = {
  id: string;
  kind: string;
  key: string;
  payload: unknown;
  dueAt: Date;
  claimedBy: string;
  leaseUntil: Date;
  /** Fencing token: the number of times this item has been claimed, this claim included. */
  token: number;
};

export type WorkErrorCode = "work_kind_invalid" | "work_key_invalid" | "work_payload_invalid" | "work_delay_invalid";
export type WorkError = { code: WorkErrorCode; path: string; message: string };

export type WorkQueueOptions = {
  pool: pg.Pool;
  /** The schema holding `work_items` (the store's schema). */
  schema: string;
  /** This node's id, recorded as `claimed_by`. */
  nodeId: string;
  /** How long a claim lasts unless renewed. */
  leaseMs?: number;
};

type Row = { id: string; kind: string; key: string; payload: unknown; due_at: Date; claimed_by: string; lease_until: Date; claims: number };

export class WorkQueue {
  readonly nodeId: string;
  readonly leaseMs: number;
  #pool: pg.Pool;
  #table: string;

  constructor(options: WorkQueueOptions) {
    if (!SCHEMA_NAME_PATTERN.test(options.schema)) throw new Error(`schema '${options.schema}' must match ${SCHEMA_NAME_PATTERN}`);
    if (options.nodeId.length === 0 || options.nodeId.length > 200) throw new Error("nodeId must be 1 to 200 characters");
    this.#pool = options.pool;
    this.#table = `"${options.schema}".work_items`;
    this.nodeId = options.nodeId;
    this.leaseMs = Math.max(LEASE_MS_MIN, Math.round(options.leaseMs ?? LEASE_MS_DEFAULT));
  }

  /** Create `work_items` in `schema` once, however many nodes call this together. */
  static migrate(pool: pg.Pool, schema: string, options: { timeoutMs?: number } = {}): Promise<{ ok: true; applied: number[] } | { ok: false; error: LockError }> {
    return migrateOnce(pool, { schema, table: CLUSTER_MIGRATIONS_TABLE, migrations: WORK_QUEUE_MIGRATIONS, ...options });
  }

  /**
   * Add work due after `delayMs` (default now). The same (kind, key) is added once: a webhook delivered
   * twice, or two nodes scheduling the same check, leave one item (`created: false` for the second).
   */
  async schedule(kind: string, key: string, options: { delayMs?: number; payload?: unknown } = {}): Promise<{ ok: true; created: boolean } | { ok: false; error: WorkError }> {
    if (!WORK_KIND_PATTERN.test(kind)) return { ok: false, error: { code: "work_kind_invalid", path: "kind", message: `kind must match ${WORK_KIND_PATTERN}` } };
    if (key.length === 0 || key.length > WORK_KEY_MAX) {
      return { ok: false, error: { code: "work_key_invalid", path: "key", message: `key must be 1 to ${WORK_KEY_MAX} characters` } };
    }
    const delayMs = options.delayMs ?? 0;
    if (!Number.isFinite(delayMs) || delayMs < 0) return { ok: false, error: { code: "work_delay_invalid", path: "delayMs", message: "delayMs must be a number of milliseconds, 0 or more" } };
    let payload: string | undefined;
    try {
      payload = JSON.stringify(options.payload ?? {});
    } catch {
      payload = undefined;
    }
    if (payload === undefined || Buffer.byteLength(payload) > WORK_PAYLOAD_MAX_BYTES) {
      return { ok: false, error: { code: "work_payload_invalid", path: "payload", message: `payload must be JSON of at most ${WORK_PAYLOAD_MAX_BYTES} bytes` } };
    }
    const result = await this.#pool.query(
      `INSERT INTO ${this.#table} (kind, key, payload, due_at) VALUES ($1, $2, $3::jsonb, now() + $4 * interval '1 millisecond')
       ON CONFLICT (kind, key) DO NOTHING`,
      [kind, key, payload, delayMs],
    );
    return { ok: true, created: result.rowCount === 1 };
  }

  /**
   * Claim up to `limit` items of `kind` that are due and not held by a live lease, oldest due first.
   * Rows another node is claiming at this instant are skipped, not waited for; an item whose lease ran
   * out (its node was lost or stalled) is claimed again with a new token.
   */
  async claimDue(kind: string, limit: number): Promise<WorkClaim[]> {
    if (!WORK_KIND_PATTERN.test(kind)) throw new Error(`kind must match ${WORK_KIND_PATTERN}`);
    if (!Number.isInteger(limit) || limit < 1 || limit > CLAIM_LIMIT_MAX) throw new Error(`limit must be an integer from 1 to ${CLAIM_LIMIT_MAX}`);
    const result = await this.#pool.query<Row>(
      `WITH due AS (
         SELECT id FROM ${this.#table}
         WHERE kind = $1 AND done_at IS NULL AND due_at <= now() AND (lease_until IS NULL OR lease_until <= now())
         ORDER BY due_at, id
         LIMIT $2
         FOR UPDATE SKIP LOCKED
       )
       UPDATE ${this.#table} AS w
       SET claimed_by = $3, lease_until = now() + $4 * interval '1 millisecond', claims = w.claims + 1
       FROM due WHERE w.id = due.id
       RETURNING w.id, w.kind, w.key, w.payload, w.due_at, w.claimed_by, w.lease_until, w.claims`,
      [kind, limit, this.nodeId, this.leaseMs],
    );
    return result.rows.map(toClaim).sort((a, b) => a.dueAt.getTime() - b.dueAt.getTime() || Number(a.id) - Number(b.id));
  }

  /** Extend a claim still held; undefined if the lease was lost (stop the work: another node has it). */
  async renew(claim: WorkClaim): Promise<WorkClaim | undefined> {
    const result = await this.#pool.query<Row>(
      `UPDATE ${this.#table} SET lease_until = now() + $4 * interval '1 millisecond'
       WHERE id = $1 AND claimed_by = $2 AND claims = $3 AND done_at IS NULL AND lease_until > now()
       RETURNING id, kind, key, payload, due_at, claimed_by, lease_until, claims`,
      [claim.id, this.nodeId, claim.token, this.leaseMs],
    );
    const row = result.rows[0];
    return row ? toClaim(row) : undefined;
  }

  /** Mark the work done. False if this claim no longer holds it (a newer claim decides). */
  async complete(claim: WorkClaim): Promise<boolean> {
    const result = await this.#pool.query(
      `UPDATE ${this.#table} SET done_at = now(), lease_until = NULL
       WHERE id = $1 AND claimed_by = $2 AND claims = $3 AND done_at IS NULL`,
      [claim.id, this.nodeId, claim.token],
    );
    return result.rowCount === 1;
  }

  /** Give the work back, due again after `delayMs` (a growing gap is the caller's choice). */
  async retry(claim: WorkClaim, delayMs: number): Promise<boolean> {
    if (!Number.isFinite(delayMs) || delayMs < 0) throw new Error("delayMs must be 0 or more");
    const result = await this.#pool.query(
      `UPDATE ${this.#table} SET due_at = now() + $4 * interval '1 millisecond', lease_until = NULL, claimed_by = NULL
       WHERE id = $1 AND claimed_by = $2 AND claims = $3 AND done_at IS NULL`,
      [claim.id, this.nodeId, claim.token, delayMs],
    );
    return result.rowCount === 1;
  }

  /** Items of `kind` not done yet (for readiness pages and tests). */
  async countOpen(kind: string): Promise<number> {
    const result = await this.#pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.#table} WHERE kind = $1 AND done_at IS NULL`, [kind]);
    return Number(result.rows[0]?.n ?? 0);
  }
}

function toClaim(row: Row): WorkClaim {
  return {
    id: String(row.id),
    kind: row.kind,
    key: row.key,
    payload: row.payload,
    dueAt: row.due_at,
    claimedBy: row.claimed_by,
    leaseUntil: row.lease_until,
    token: Number(row.claims),
  };
}
