// The channel glue's durable state in a SQLite file (better-sqlite3): the inbox with an atomic unique key on
// (platform, message id), bindings of customers to conversations, button references and the outbox. Its
// tables are the inbox's numbered migrations (migrations.ts), applied when the file is opened.
import Database from "better-sqlite3";
import { migrateSqlite } from "../../store/migrate.ts";
import { CHANNEL_SQLITE_SET } from "./migrations.ts";
import type {
  Binding,
  BindingKey,
  ButtonRef,
  InboxRow,
  InboxState,
  InboxStore,
  NumberedOption,
  DeliveryStatus,
  OutboxRecord,
  Platform,
} from "../ports.ts";

interface InboxDbRow {
  platform: Platform;
  message_id: string;
  event: string;
  received_at: number;
  state: InboxState;
  error: string | null;
  handed: string | null;
}
interface BindingDbRow {
  platform: Platform;
  account: string;
  external_id: string;
  conversation_id: string;
  last_inbound_at: number;
  disclosed: number;
  cursor: number;
}
interface OutboxDbRow {
  platform: Platform;
  conversation_id: string;
  seq: number;
  part: number;
  state: "sent" | "failed";
  attempts: number;
  code: string | null;
  message: string | null;
  platform_id: string | null;
  at: number;
}

function inboxRow(r: InboxDbRow): InboxRow {
  return { platform: r.platform, messageId: r.message_id, event: r.event, receivedAt: r.received_at, state: r.state, ...(r.error ? { error: r.error } : {}), ...(r.handed ? { handed: r.handed } : {}) };
}
function binding(r: BindingDbRow): Binding {
  return { platform: r.platform, account: r.account, externalId: r.external_id, conversationId: r.conversation_id, lastInboundAt: r.last_inbound_at, disclosed: r.disclosed === 1, cursor: r.cursor };
}
function outbox(r: OutboxDbRow): OutboxRecord {
  return {
    platform: r.platform,
    conversationId: r.conversation_id,
    seq: r.seq,
    part: r.part,
    state: r.state,
    attempts: r.attempts,
    ...(r.code ? { code: r.code } : {}),
    ...(r.message ? { message: r.message } : {}),
    ...(r.platform_id ? { platformId: r.platform_id } : {}),
    at: r.at,
  };
}

// The engine store's durability setting applies here too (CAPLO_SQLITE_SYNCHRONOUS, passed by the composition root): `normal`
// keeps a stored webhook event through a killed process; `full` fsyncs each insert before the webhook is
// answered 200, so it survives an OS crash or power loss as well (the platform will not deliver it again).
export class SqliteInboxStore implements InboxStore {
  readonly db: Database.Database;

  constructor(file: string, options: { synchronous?: "normal" | "full" } = {}) {
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("busy_timeout = 5000");
    this.db.pragma(`synchronous = ${(options.synchronous ?? "normal") === "full" ? "FULL" : "NORMAL"}`);
    migrateSqlite(this.db, CHANNEL_SQLITE_SET);
  }

  close(): void {
    this.db.close();
  }

  async insertInbound(row: Omit<InboxRow, "state">): Promise<boolean> {
    // One statement: the primary key decides, so two copies arriving together cannot both be stored.
    const result = this.db
      .prepare(
        `INSERT INTO channel_inbox (platform, message_id, event, received_at, state) VALUES (?, ?, ?, ?, 'received')
         ON CONFLICT (platform, message_id) DO NOTHING`,
      )
      .run(row.platform, row.messageId, row.event, row.receivedAt);
    return result.changes === 1;
  }

  async claimInbound(limit: number): Promise<InboxRow[]> {
    const rows = this.db
      .prepare(
        `UPDATE channel_inbox SET state = 'processing'
         WHERE rowid IN (SELECT rowid FROM channel_inbox WHERE state = 'received' ORDER BY received_at, rowid LIMIT ?)
         RETURNING *`,
      )
      .all(limit) as InboxDbRow[];
    return rows.map(inboxRow).sort((a, b) => a.receivedAt - b.receivedAt);
  }

  async finishInbound(platform: Platform, messageId: string, state: "done" | "failed", error?: string): Promise<void> {
    // done only ends processing; failed may follow a hand-off that the engine refused later.
    this.db
      .prepare(`UPDATE channel_inbox SET state = ?, error = ? WHERE platform = ? AND message_id = ? AND (state = 'processing' OR ? = 'failed')`)
      .run(state, error ?? null, platform, messageId, state);
  }

  async requeueProcessing(): Promise<number> {
    return this.db.prepare(`UPDATE channel_inbox SET state = 'received' WHERE state = 'processing'`).run().changes;
  }

  async listInbound(state?: InboxState): Promise<InboxRow[]> {
    const rows = (state
      ? this.db.prepare(`SELECT * FROM channel_inbox WHERE state = ? ORDER BY received_at, rowid`).all(state)
      : this.db.prepare(`SELECT * FROM channel_inbox ORDER BY received_at, rowid`).all()) as InboxDbRow[];
    return rows.map(inboxRow);
  }

  async markHanded(platform: Platform, messageId: string, inbound: string): Promise<void> {
    this.db.prepare(`UPDATE channel_inbox SET handed = ? WHERE platform = ? AND message_id = ?`).run(inbound, platform, messageId);
  }

  async prune(before: number): Promise<{ inbox: number; outbox: number }> {
    return this.db.transaction(() => {
      const pruned = {
        inbox: this.db.prepare(`DELETE FROM channel_inbox WHERE state IN ('done', 'failed') AND received_at < ?`).run(before).changes,
        outbox: this.db.prepare(`DELETE FROM channel_outbox WHERE state = 'sent' AND at < ?`).run(before).changes,
      };
      // Statuses go with their part; one about no part of ours (another sender on the number) ages out alone.
      this.db.prepare(`DELETE FROM channel_status WHERE at < ? AND NOT EXISTS (SELECT 1 FROM channel_outbox o WHERE o.platform = channel_status.platform AND o.platform_id = channel_status.platform_id)`).run(before);
      return pruned;
    })();
  }

  async findBinding(key: BindingKey): Promise<Binding | undefined> {
    const find = () =>
      this.db.prepare(`SELECT * FROM channel_binding WHERE platform = ? AND account = ? AND external_id = ?`).get(key.platform, key.account, key.externalId) as
        | BindingDbRow
        | undefined;
    let row = find();
    if (!row && key.account !== "") {
      // A binding made before accounts were kept belongs to the account its customer writes to first.
      this.db
        .prepare(
          `UPDATE channel_binding SET account = ? WHERE platform = ? AND account = '' AND external_id = ?
           AND NOT EXISTS (SELECT 1 FROM channel_binding WHERE platform = ? AND account = ? AND external_id = ?)`,
        )
        .run(key.account, key.platform, key.externalId, key.platform, key.account, key.externalId);
      row = find();
    }
    return row ? binding(row) : undefined;
  }

  async findBindingByConversation(conversationId: string): Promise<Binding | undefined> {
    const row = this.db.prepare(`SELECT * FROM channel_binding WHERE conversation_id = ?`).get(conversationId) as BindingDbRow | undefined;
    return row ? binding(row) : undefined;
  }

  async listBindings(): Promise<Binding[]> {
    return (this.db.prepare(`SELECT * FROM channel_binding`).all() as BindingDbRow[]).map(binding);
  }

  async bind(key: BindingKey, conversationId: string, at: number): Promise<Binding> {
    this.db
      .prepare(
        `INSERT INTO channel_binding (platform, account, external_id, conversation_id, last_inbound_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (platform, account, external_id) DO NOTHING`,
      )
      .run(key.platform, key.account, key.externalId, conversationId, at);
    return (await this.findBinding(key))!;
  }

  async touchInbound(key: BindingKey, at: number): Promise<void> {
    this.db
      .prepare(`UPDATE channel_binding SET last_inbound_at = MAX(last_inbound_at, ?) WHERE platform = ? AND account = ? AND external_id = ?`)
      .run(at, key.platform, key.account, key.externalId);
  }

  async setDisclosed(key: BindingKey): Promise<void> {
    this.db.prepare(`UPDATE channel_binding SET disclosed = 1 WHERE platform = ? AND account = ? AND external_id = ?`).run(key.platform, key.account, key.externalId);
  }

  async setCursor(key: BindingKey, seq: number): Promise<void> {
    this.db
      .prepare(`UPDATE channel_binding SET cursor = MAX(cursor, ?) WHERE platform = ? AND account = ? AND external_id = ?`)
      .run(seq, key.platform, key.account, key.externalId);
  }

  async putRefs(refs: ButtonRef[]): Promise<void> {
    const insert = this.db.prepare(
      `INSERT INTO channel_ref (token, platform, conversation_id, kind, target_id, field, value) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    this.db.transaction(() => {
      for (const r of refs) insert.run(r.token, r.platform, r.conversationId, r.kind, r.targetId, r.field ?? null, r.value ?? null);
    })();
  }

  async getRef(token: string): Promise<ButtonRef | undefined> {
    const r = this.db.prepare(`SELECT * FROM channel_ref WHERE token = ?`).get(token) as
      | { token: string; platform: Platform; conversation_id: string; kind: ButtonRef["kind"]; target_id: string; field: string | null; value: string | null }
      | undefined;
    if (!r) return undefined;
    return {
      token: r.token,
      platform: r.platform,
      conversationId: r.conversation_id,
      kind: r.kind,
      targetId: r.target_id,
      ...(r.field !== null ? { field: r.field } : {}),
      ...(r.value !== null ? { value: r.value } : {}),
    };
  }

  async setNumberedReplies(conversationId: string, options: NumberedOption[] | null): Promise<void> {
    if (options === null) {
      this.db.prepare(`DELETE FROM channel_numbered_replies WHERE conversation_id = ?`).run(conversationId);
      return;
    }
    this.db
      .prepare(`INSERT INTO channel_numbered_replies (conversation_id, options) VALUES (?, ?) ON CONFLICT (conversation_id) DO UPDATE SET options = excluded.options`)
      .run(conversationId, JSON.stringify(options));
  }

  async getNumberedReplies(conversationId: string): Promise<NumberedOption[] | undefined> {
    const r = this.db.prepare(`SELECT options FROM channel_numbered_replies WHERE conversation_id = ?`).get(conversationId) as { options: string } | undefined;
    return r ? (JSON.parse(r.options) as NumberedOption[]) : undefined;
  }

  async getOutbox(platform: Platform, conversationId: string, seq: number, part: number): Promise<OutboxRecord | undefined> {
    const r = this.db
      .prepare(`SELECT * FROM channel_outbox WHERE platform = ? AND conversation_id = ? AND seq = ? AND part = ?`)
      .get(platform, conversationId, seq, part) as OutboxDbRow | undefined;
    return r ? outbox(r) : undefined;
  }

  async recordOutbox(record: OutboxRecord): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO channel_outbox (platform, conversation_id, seq, part, state, attempts, code, message, platform_id, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (platform, conversation_id, seq, part) DO UPDATE SET state = excluded.state, attempts = excluded.attempts,
           code = excluded.code, message = excluded.message, platform_id = excluded.platform_id, at = excluded.at`,
      )
      .run(record.platform, record.conversationId, record.seq, record.part, record.state, record.attempts, record.code ?? null, record.message ?? null, record.platformId ?? null, record.at);
  }

  async recordStatus(platform: Platform, platformId: string, status: DeliveryStatus): Promise<boolean> {
    const result = this.db
      .prepare(`INSERT OR IGNORE INTO channel_status (platform, platform_id, status, at, error_code) VALUES (?, ?, ?, ?, ?)`)
      .run(platform, platformId, status.status, status.at, status.errorCode ?? null);
    return result.changes === 1;
  }

  async listOutbox(conversationId: string): Promise<OutboxRecord[]> {
    const rows = this.db.prepare(`SELECT * FROM channel_outbox WHERE conversation_id = ? ORDER BY seq, part`).all(conversationId) as OutboxDbRow[];
    const statuses = this.db.prepare(`SELECT status, at, error_code FROM channel_status WHERE platform = ? AND platform_id = ? ORDER BY at, rowid`);
    return rows.map((r) => {
      const found = r.platform_id ? (statuses.all(r.platform, r.platform_id) as Array<{ status: string; at: number; error_code: number | null }>) : [];
      return { ...outbox(r), statuses: found.map((x) => ({ status: x.status, at: x.at, ...(x.error_code !== null ? { errorCode: x.error_code } : {}) })) };
    });
  }

  async listFailures(): Promise<OutboxRecord[]> {
    return (this.db.prepare(`SELECT * FROM channel_outbox WHERE state = 'failed' ORDER BY at DESC, rowid DESC`).all() as OutboxDbRow[]).map(outbox);
  }

  async markFailedByPlatformId(platformId: string, code: string, message: string): Promise<OutboxRecord | undefined> {
    const r = this.db
      .prepare(`UPDATE channel_outbox SET state = 'failed', code = ?, message = ? WHERE platform_id = ? RETURNING *`)
      .get(code, message, platformId) as OutboxDbRow | undefined;
    return r ? outbox(r) : undefined;
  }

  async getContentSid(hash: string): Promise<string | undefined> {
    const r = this.db.prepare(`SELECT content_sid FROM channel_content WHERE hash = ?`).get(hash) as { content_sid: string } | undefined;
    return r?.content_sid;
  }

  async putContentSid(hash: string, sid: string): Promise<void> {
    this.db.prepare(`INSERT INTO channel_content (hash, content_sid) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING`).run(hash, sid);
  }
}
