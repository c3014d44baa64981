// The messaging channels' state on the deployment's PostgreSQL, shared by every node: the webhook inbox,
// customers' bindings to conversations, button references and the outbox (its tables: the inbox's numbered
// migrations, migrations.ts). Each received webhook event is claimed by exactly one node (`FOR UPDATE SKIP
// LOCKED`), and each part of each outbound message is claimed by exactly one node before it is sent, so
// several nodes subscribed to one conversation send it once.
//
// An inbound claim lasts as long as its node's liveness lease (`cluster_nodes`, see nodeLeases.ts): once the
// node that claimed an event is lost (its lease ran out, or a survivor took it over and removed it), the next
// node that drains the inbox claims the event again. INBOUND_CLAIM_MS bounds a claim even of a live node.
import pg from "pg";
import { SCHEMA_NAME_PATTERN } from "../../cluster/migrationLock.ts";
import { NodeLeases } from "../../cluster/nodeLeases.ts";
import { migratePostgres } from "../../store/migrate.ts";
import type { Binding, BindingKey, ButtonRef, DeliveryStatus, InboxRow, InboxState, InboxStore, NumberedOption, OutboxRecord, Platform } from "../ports.ts";
import { CHANNEL_POSTGRES_SET } from "./migrations.ts";

/** An inbound event claimed this long ago is claimed again even if its node's lease is alive (a stuck node). */
export const INBOUND_CLAIM_MS = 120_000;
/** A node sending one outbound part has this long before another node may send it instead. */
export const OUTBOX_CLAIM_MS = 60_000;

type Row = Record<string, unknown>;

/**
 * SQL condition on a `channel_inbox` row in state processing: its claim is no longer held, because the node
 * that claimed it has no live lease (lost, taken over, or gone) or because it was claimed longer ago than
 * `claimMs` (a bind parameter, in milliseconds).
 */
const claimLapsed = (claimMs: string) => `(claimed_at < now() - ${claimMs} * interval '1 millisecond'
  OR NOT EXISTS (SELECT 1 FROM cluster_nodes live WHERE live.node_id = channel_inbox.claimed_by AND live.lease_until >= now()))`;

const inboxRow = (r: Row): InboxRow => ({
  platform: r.platform as Platform,
  messageId: String(r.message_id),
  event: String(r.event),
  receivedAt: Number(r.received_at),
  state: r.state as InboxState,
  ...(r.error ? { error: String(r.error) } : {}),
  ...(r.handed ? { handed: String(r.handed) } : {}),
});
const binding = (r: Row): Binding => ({
  platform: r.platform as Platform,
  account: String(r.account),
  externalId: String(r.external_id),
  conversationId: String(r.conversation_id),
  lastInboundAt: Number(r.last_inbound_at),
  disclosed: r.disclosed === true,
  cursor: Number(r.cursor),
});
const outbox = (r: Row): OutboxRecord => ({
  platform: r.platform as Platform,
  conversationId: String(r.conversation_id),
  seq: Number(r.seq),
  part: Number(r.part),
  // A part another node is sending right now counts as sent here: this node must not send it too.
  state: r.state === "failed" ? "failed" : "sent",
  attempts: Number(r.attempts),
  ...(r.code ? { code: String(r.code) } : {}),
  ...(r.message ? { message: String(r.message) } : {}),
  ...(r.platform_id ? { platformId: String(r.platform_id) } : {}),
  at: Number(r.at),
});

export type PostgresInboxStoreOptions = {
  connectionString: string;
  schema?: string;
  /**
   * Where the nodes' liveness leases (cluster_nodes) are, when not in `schema`: a workspace's channel state has
   * a schema of its own, and its claims are held by the same live nodes as the server's (default `schema`).
   */
  leasesSchema?: string;
  nodeId: string;
  max?: number;
  /** Default INBOUND_CLAIM_MS and OUTBOX_CLAIM_MS (tests shorten them). */
  inboundClaimMs?: number;
  outboxClaimMs?: number;
};

export class PostgresInboxStore implements InboxStore {
  readonly nodeId: string;
  readonly schema: string;
  readonly leasesSchema: string;
  #pool: pg.Pool;
  #inboundClaimMs: number;
  #outboxClaimMs: number;

  private constructor(options: PostgresInboxStoreOptions) {
    this.schema = options.schema ?? "public";
    this.leasesSchema = options.leasesSchema ?? this.schema;
    for (const schema of [this.schema, this.leasesSchema]) if (!SCHEMA_NAME_PATTERN.test(schema)) throw new Error(`schema '${schema}' must match ${SCHEMA_NAME_PATTERN}`);
    this.nodeId = options.nodeId;
    this.#inboundClaimMs = options.inboundClaimMs ?? INBOUND_CLAIM_MS;
    this.#outboxClaimMs = options.outboxClaimMs ?? OUTBOX_CLAIM_MS;
    this.#pool = new pg.Pool({ connectionString: options.connectionString, max: options.max ?? 4, options: `-c search_path=${this.schema === this.leasesSchema ? this.schema : `${this.schema},${this.leasesSchema}`}` });
    this.#pool.on("error", () => undefined); // an idle connection cut by a restart; the next query reconnects
  }

  /**
   * Migrate (the inbox's numbered migrations, one node at a time) and open. The node liveness table is
   * migrated too: inbound claims are held by live nodes (`nodeId` must renew its lease, as a cluster node does).
   */
  static async open(options: PostgresInboxStoreOptions): Promise<PostgresInboxStore> {
    const store = new PostgresInboxStore(options);
    try {
      const leases = await NodeLeases.migrate(store.#pool, store.leasesSchema);
      if (!leases.ok) throw Object.assign(new Error(leases.error.message), { code: leases.error.code });
      await migratePostgres(store.#pool, store.schema, CHANNEL_POSTGRES_SET);
    } catch (error) {
      await store.#pool.end();
      throw error;
    }
    return store;
  }

  close(): void {
    void this.#pool.end().catch(() => undefined);
  }

  async #q(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await this.#pool.query(sql, params)).rows as Row[];
  }

  async insertInbound(row: Omit<InboxRow, "state">): Promise<boolean> {
    const result = await this.#pool.query(
      `INSERT INTO channel_inbox (platform, message_id, event, received_at, state) VALUES ($1, $2, $3, $4, 'received')
       ON CONFLICT (platform, message_id) DO NOTHING`,
      [row.platform, row.messageId, row.event, row.receivedAt],
    );
    return result.rowCount === 1;
  }

  /** Received events, and events claimed by a node that is lost (or stuck), each to exactly one claiming node. */
  async claimInbound(limit: number): Promise<InboxRow[]> {
    const rows = await this.#q(
      `UPDATE channel_inbox SET state = 'processing', claimed_by = $2, claimed_at = now()
       WHERE (platform, message_id) IN (
         SELECT platform, message_id FROM channel_inbox
         WHERE state = 'received' OR (state = 'processing' AND ${claimLapsed("$3")})
         ORDER BY received_at LIMIT $1
         FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [limit, this.nodeId, this.#inboundClaimMs],
    );
    return rows.map(inboxRow).sort((a, b) => a.receivedAt - b.receivedAt);
  }

  async finishInbound(platform: Platform, messageId: string, state: "done" | "failed", error?: string): Promise<void> {
    await this.#pool.query(
      `UPDATE channel_inbox SET state = $1, error = $2 WHERE platform = $3 AND message_id = $4 AND (state = 'processing' OR $1 = 'failed')`,
      [state, error ?? null, platform, messageId],
    );
  }

  /** At a node's start: events claimed by lost nodes (or long ago) go back; live nodes' claims stay. */
  async requeueProcessing(): Promise<number> {
    const result = await this.#pool.query(
      `UPDATE channel_inbox SET state = 'received', claimed_by = NULL WHERE state = 'processing' AND ${claimLapsed("$1")}`,
      [this.#inboundClaimMs],
    );
    return result.rowCount ?? 0;
  }

  async listInbound(state?: InboxState): Promise<InboxRow[]> {
    const rows = state
      ? await this.#q(`SELECT * FROM channel_inbox WHERE state = $1 ORDER BY received_at, message_id`, [state])
      : await this.#q(`SELECT * FROM channel_inbox ORDER BY received_at, message_id`);
    return rows.map(inboxRow);
  }

  async markHanded(platform: Platform, messageId: string, inbound: string): Promise<void> {
    await this.#pool.query(`UPDATE channel_inbox SET handed = $1 WHERE platform = $2 AND message_id = $3`, [inbound, platform, messageId]);
  }

  async prune(before: number): Promise<{ inbox: number; outbox: number }> {
    const inbox = await this.#pool.query(`DELETE FROM channel_inbox WHERE state IN ('done', 'failed') AND received_at < $1`, [before]);
    const sent = await this.#pool.query(`DELETE FROM channel_outbox WHERE state IN ('sent', 'sending') AND at < $1`, [before]);
    await this.#pool.query(
      `DELETE FROM channel_status WHERE at < $1 AND NOT EXISTS (SELECT 1 FROM channel_outbox o WHERE o.platform = channel_status.platform AND o.platform_id = channel_status.platform_id)`,
      [before],
    );
    return { inbox: inbox.rowCount ?? 0, outbox: sent.rowCount ?? 0 };
  }

  async findBinding(key: BindingKey): Promise<Binding | undefined> {
    const find = () => this.#q(`SELECT * FROM channel_binding WHERE platform = $1 AND account = $2 AND external_id = $3`, [key.platform, key.account, key.externalId]);
    let rows = await find();
    if (!rows[0] && key.account !== "") {
      await this.#pool.query(
        `UPDATE channel_binding SET account = $1 WHERE platform = $2 AND account = '' AND external_id = $3
         AND NOT EXISTS (SELECT 1 FROM channel_binding WHERE platform = $2 AND account = $1 AND external_id = $3)`,
        [key.account, key.platform, key.externalId],
      );
      rows = await find();
    }
    return rows[0] ? binding(rows[0]) : undefined;
  }

  async findBindingByConversation(conversationId: string): Promise<Binding | undefined> {
    const rows = await this.#q(`SELECT * FROM channel_binding WHERE conversation_id = $1`, [conversationId]);
    return rows[0] ? binding(rows[0]) : undefined;
  }

  async listBindings(): Promise<Binding[]> {
    return (await this.#q(`SELECT * FROM channel_binding`)).map(binding);
  }

  async bind(key: BindingKey, conversationId: string, at: number): Promise<Binding> {
    await this.#pool.query(
      `INSERT INTO channel_binding (platform, account, external_id, conversation_id, last_inbound_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (platform, account, external_id) DO NOTHING`,
      [key.platform, key.account, key.externalId, conversationId, at],
    );
    return (await this.findBinding(key))!;
  }

  async touchInbound(key: BindingKey, at: number): Promise<void> {
    await this.#updateBinding(key, "last_inbound_at = GREATEST(last_inbound_at, $4)", [at]);
  }

  async setDisclosed(key: BindingKey): Promise<void> {
    await this.#updateBinding(key, "disclosed = TRUE");
  }

  async setCursor(key: BindingKey, seq: number): Promise<void> {
    await this.#updateBinding(key, "cursor = GREATEST(cursor, $4)", [seq]);
  }

  /** One binding's row updated by `set` (its values from $4 on). */
  async #updateBinding(key: BindingKey, set: string, values: unknown[] = []): Promise<void> {
    await this.#pool.query(`UPDATE channel_binding SET ${set} WHERE platform = $1 AND account = $2 AND external_id = $3`, [key.platform, key.account, key.externalId, ...values]);
  }

  async putRefs(refs: ButtonRef[]): Promise<void> {
    for (const r of refs) {
      await this.#pool.query(`INSERT INTO channel_ref (token, platform, conversation_id, kind, target_id, field, value) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
        r.token,
        r.platform,
        r.conversationId,
        r.kind,
        r.targetId,
        r.field ?? null,
        r.value ?? null,
      ]);
    }
  }

  async getRef(token: string): Promise<ButtonRef | undefined> {
    const r = (await this.#q(`SELECT * FROM channel_ref WHERE token = $1`, [token]))[0];
    if (!r) return undefined;
    return {
      token: String(r.token),
      platform: r.platform as Platform,
      conversationId: String(r.conversation_id),
      kind: r.kind as ButtonRef["kind"],
      targetId: String(r.target_id),
      ...(r.field !== null ? { field: String(r.field) } : {}),
      ...(r.value !== null ? { value: String(r.value) } : {}),
    };
  }

  async setNumberedReplies(conversationId: string, options: NumberedOption[] | null): Promise<void> {
    if (options === null) {
      await this.#pool.query(`DELETE FROM channel_numbered_replies WHERE conversation_id = $1`, [conversationId]);
      return;
    }
    await this.#pool.query(
      `INSERT INTO channel_numbered_replies (conversation_id, options) VALUES ($1, $2) ON CONFLICT (conversation_id) DO UPDATE SET options = EXCLUDED.options`,
      [conversationId, JSON.stringify(options)],
    );
  }

  async getNumberedReplies(conversationId: string): Promise<NumberedOption[] | undefined> {
    const r = (await this.#q(`SELECT options FROM channel_numbered_replies WHERE conversation_id = $1`, [conversationId]))[0];
    return r ? (JSON.parse(String(r.options)) as NumberedOption[]) : undefined;
  }

  /**
   * Before a part is sent: claims it for this node and answers undefined ("not handled: send it"), or
   * answers the record that makes this node skip or retry it: sent, being sent by another node (shown as
   * sent), or failed. A claim whose node went silent past OUTBOX_CLAIM_MS is taken over.
   */
  async getOutbox(platform: Platform, conversationId: string, seq: number, part: number): Promise<OutboxRecord | undefined> {
    const claimed = await this.#pool.query(
      `INSERT INTO channel_outbox (platform, conversation_id, seq, part, state, attempts, at, claimed_by, lease_until)
       VALUES ($1, $2, $3, $4, 'sending', 0, $5, $6, now() + $7 * interval '1 millisecond')
       ON CONFLICT (platform, conversation_id, seq, part) DO UPDATE SET claimed_by = EXCLUDED.claimed_by, lease_until = EXCLUDED.lease_until
       WHERE channel_outbox.state = 'sending' AND (channel_outbox.lease_until < now() OR channel_outbox.claimed_by = EXCLUDED.claimed_by)
       RETURNING id`,
      [platform, conversationId, seq, part, Date.now(), this.nodeId, this.#outboxClaimMs],
    );
    if (claimed.rowCount === 1) return undefined;
    const rows = await this.#q(`SELECT * FROM channel_outbox WHERE platform = $1 AND conversation_id = $2 AND seq = $3 AND part = $4`, [platform, conversationId, seq, part]);
    return rows[0] ? outbox(rows[0]) : undefined;
  }

  async recordOutbox(record: OutboxRecord): Promise<void> {
    await this.#pool.query(
      `INSERT INTO channel_outbox (platform, conversation_id, seq, part, state, attempts, code, message, platform_id, at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (platform, conversation_id, seq, part) DO UPDATE SET state = EXCLUDED.state, attempts = EXCLUDED.attempts,
         code = EXCLUDED.code, message = EXCLUDED.message, platform_id = EXCLUDED.platform_id, at = EXCLUDED.at, lease_until = NULL`,
      [record.platform, record.conversationId, record.seq, record.part, record.state, record.attempts, record.code ?? null, record.message ?? null, record.platformId ?? null, record.at],
    );
  }

  async recordStatus(platform: Platform, platformId: string, status: DeliveryStatus): Promise<boolean> {
    const result = await this.#pool.query(
      `INSERT INTO channel_status (platform, platform_id, status, at, error_code) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (platform, platform_id, status) DO NOTHING`,
      [platform, platformId, status.status, status.at, status.errorCode ?? null],
    );
    return result.rowCount === 1;
  }

  async listOutbox(conversationId: string): Promise<OutboxRecord[]> {
    const rows = await this.#q(`SELECT * FROM channel_outbox WHERE conversation_id = $1 ORDER BY seq, part`, [conversationId]);
    const statuses = await this.#q(
      `SELECT s.platform, s.platform_id, s.status, s.at, s.error_code FROM channel_status s
       JOIN channel_outbox o ON o.platform = s.platform AND o.platform_id = s.platform_id
       WHERE o.conversation_id = $1 ORDER BY s.at, s.id`,
      [conversationId],
    );
    return rows.map((r) => ({
      ...outbox(r),
      statuses: statuses
        .filter((x) => x.platform === r.platform && r.platform_id !== null && x.platform_id === r.platform_id)
        .map((x) => ({ status: String(x.status), at: Number(x.at), ...(x.error_code !== null ? { errorCode: Number(x.error_code) } : {}) })),
    }));
  }

  async listFailures(): Promise<OutboxRecord[]> {
    return (await this.#q(`SELECT * FROM channel_outbox WHERE state = 'failed' ORDER BY at DESC, id DESC`)).map(outbox);
  }

  async markFailedByPlatformId(platformId: string, code: string, message: string): Promise<OutboxRecord | undefined> {
    const rows = await this.#q(`UPDATE channel_outbox SET state = 'failed', code = $1, message = $2 WHERE platform_id = $3 RETURNING *`, [code, message, platformId]);
    return rows[0] ? outbox(rows[0]) : undefined;
  }

  async getContentSid(hash: string): Promise<string | undefined> {
    const r = (await this.#q(`SELECT content_sid FROM channel_content WHERE hash = $1`, [hash]))[0];
    return r ? String(r.content_sid) : undefined;
  }

  async putContentSid(hash: string, sid: string): Promise<void> {
    await this.#pool.query(`INSERT INTO channel_content (hash, content_sid) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, [hash, sid]);
  }
}
