// The default Store: SQLite in one file (better-sqlite3, WAL). Every change is one immediate transaction,
// so a compare-and-set on the write ledger cannot interleave with another one, even across processes.
//
// Durability: every transaction is committed before its promise resolves, so before the engine acts on it.
// With synchronous=NORMAL (the default) a commit is in the WAL file (written, not fsynced): it survives the
// Caplo process being killed, but an OS crash or power loss may lose the last commits (never corrupt the
// file). synchronous=FULL (`synchronous: "full"` or CAPLO_SQLITE_SYNCHRONOUS=full) fsyncs every commit and
// survives those too; appends are group-committed (below), so FULL costs one fsync per group, not per event.
// Several nodes, or a database server's durability: use the PostgreSQL store.
import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { workspaceRef, type CallSubject, type ChannelCapabilities, type ChannelKind, type Outbound, type Rating } from "@caplo/shared";
import type { ModelMessage } from "../model/model.ts";
import { parseSetting } from "../config/index.ts";
import { migrateSqlite } from "./migrate.ts";
import { SQLITE_MIGRATIONS } from "./migrations.ts";
import { summaryChange, summaryColumns } from "./inboxSummary.ts";
import { WriteBlockedError } from "./store.ts";
import { storable, storableJson } from "./storableJson.ts";
import { containsPattern, inboxWriteCounts, toInboxEntry, SIGN_IN_COUNT_SQL, changeColumns, NEVER_SENT_MESSAGE, RECOVERED_REASON, toConversation, toEvent, toFile, toHandoffNotice, toOwedTurn, toTranscript, toTransition, toWrite, toConsoleSession, toTeamNote, type Row } from "./rows.ts";
import { endsSessions, memberChanges, toAuditEvent, toRecordedMember, toSecretMeta, toStoredSecret } from "./rows.ts";
import type {
  AuditEntry,
  RecordedMember,
  MemberAdded,
  MemberRemoved,
  MembersSynced,
  WriteAudit,
  AuditEvent,
  SealedValue,
  SecretMeta,
  StoredSecret,
  AppendBatch,
  AppendedBatch,
  CheckedAppendBatch,
  ChangedWrite,
  ConversationRecord,
  HandoffAttempt,
  ConsoleSession,
  HandoffNotice,
  TeamNote,
  HandoffState,
  OwedTurn,
  NewHandoffNotice,
  NewConversation,
  NewWrite,
  ProposedWrite,
  EventRating,
  RatingCounts,
  InboxEntry,
  InboxQuery,
  SearchHit,
  SignInCount,
  Store,
  StoredEvent,
  TranscriptEntry,
  WriteChange,
  WriteExpectation,
  StoredFile,
  WriteRecord,
  WriteTransition,
} from "./store.ts";

/** Every stored JSON value: NUL and lone surrogates kept as U+FFFD (storableJson.ts), as the other store keeps them. */
const encode = storableJson;

const GROUP_COMMIT_MAX = 256;

type QueuedAppend = { conversationId: string; batch: AppendBatch & { resumeHash?: string }; at: number; resolve: (stored: AppendedBatch | undefined) => void; reject: (error: unknown) => void };
const bool = (value: boolean) => (value ? 1 : 0);

export type SqliteStoreOptions = {
  /** `normal` (default): durable against a process crash; `full`: also against an OS crash or power loss (see above). */
  synchronous?: "normal" | "full";
};

/** CAPLO_SQLITE_SYNCHRONOUS of `env`, the durability setting of every SQLite file Caplo writes (this store, the channels' inbox). */
export function sqliteSynchronous(env: Record<string, string | undefined>): "normal" | "full" {
  const parsed = parseSetting("CAPLO_SQLITE_SYNCHRONOUS", env.CAPLO_SQLITE_SYNCHRONOUS);
  if (!parsed.ok) throw new Error(parsed.error.message);
  return parsed.value;
}

/**
 * An append's update of its conversation (appendNow): the log's seqs reserved, the inbox summary, the turn it
 * owes recorded or the turn it finishes cleared, and, for a widget customer's input, its resume hash checked.
 */
const APPEND_UPDATE_SQL = `UPDATE conversations SET ${summaryColumns("@lastIndex", "@mode", "@fromIndex")}, last_seq = last_seq + @events, last_transcript_seq = last_transcript_seq + @entries,
    turn_node = CASE WHEN @owed IS NOT NULL THEN @owed WHEN turn_node = @finishNode AND turn_seq = @finishSeq THEN NULL ELSE turn_node END,
    turn_seq = CASE WHEN @owed IS NOT NULL THEN last_transcript_seq + @entries WHEN turn_node = @finishNode AND turn_seq = @finishSeq THEN NULL ELSE turn_seq END
  WHERE id = @id AND (@resume IS NULL OR resume_hash = @resume) RETURNING *`;

export class SqliteStore implements Store {
  readonly kind = "sqlite" as const;
  readonly path: string;
  private readonly db: Database.Database;

  constructor(path: string, options: SqliteStoreOptions = {}) {
    this.path = path;
    const synchronous = options.synchronous ?? "normal";
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma(`synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`);
    // Up to 32 MiB of pages cached (default 2 MiB): the recent pages of busy conversations stay in memory.
    this.db.pragma("cache_size = -32768");
    this.db.pragma("foreign_keys = ON");
    this.db.pragma("busy_timeout = 5000");
  }

  /** The durability setting in effect, as SQLite reports it. */
  get synchronous(): "normal" | "full" | "other" {
    const level = Number(this.db.pragma("synchronous", { simple: true }));
    return level === 1 ? "normal" : level === 2 ? "full" : "other";
  }

  private readonly statements = new Map<string, Database.Statement>();

  /** A prepared statement, prepared once per SQL text. */
  private sql(text: string): Database.Statement {
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.statements.set(text, statement);
    }
    return statement;
  }

  /** Run fn in an IMMEDIATE transaction (takes the write lock first, so read-then-write cannot race). */
  private tx<T>(fn: () => T): T {
    if (this.db.inTransaction) return fn();
    this.sql("BEGIN IMMEDIATE").run();
    try {
      const value = fn();
      this.sql("COMMIT").run();
      return value;
    } catch (error) {
      if (this.db.inTransaction) this.sql("ROLLBACK").run();
      throw error;
    }
  }

  async migrate(): Promise<void> {
    migrateSqlite(this.db, { table: "schema_migrations", migrations: SQLITE_MIGRATIONS });
  }


  async ping(): Promise<boolean> {
    return (this.sql("SELECT 1 AS ok").get() as Row).ok === 1;
  }

  async close(): Promise<void> {
    while (this.appendQueue.length > 0) this.commitAppends(); // appends already asked for are committed (and answered) first
    if (this.db.open) this.db.close();
  }

  async ensureWorkspace(id: string, at: number): Promise<void> {
    this.sql("INSERT INTO workspaces (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING").run(id, at);
  }

  async listWorkspaces(): Promise<string[]> {
    return (this.sql("SELECT id FROM workspaces ORDER BY id").all() as Row[]).map((row) => String(row.id));
  }

  async createConversation(c: NewConversation): Promise<ConversationRecord> {
    if (!this.sql("SELECT 1 FROM workspaces WHERE id = ?").get(c.workspaceId)) throw new Error(`createConversation: no workspace ${c.workspaceId}`);
    this.sql(
        `INSERT INTO conversations (id, workspace_id, agent, release_id, channel, external_id, resume_hash, owner_id, subject, capabilities, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(c.id, c.workspaceId, c.agent, c.releaseId, c.channel, c.externalId, c.resumeHash, c.ownerId, c.subject ? encode(c.subject) : null, encode(c.capabilities), c.createdAt);
    return (await this.getConversation(c.id))!;
  }

  async getConversation(id: string): Promise<ConversationRecord | undefined> {
    const row = this.sql("SELECT * FROM conversations WHERE id = ?").get(id) as Row | undefined;
    return row ? toConversation(row) : undefined;
  }

  async latestSeqs(ids: readonly string[]): Promise<Map<string, number>> {
    const rows = this.sql("SELECT id, last_seq FROM conversations WHERE id IN (SELECT value FROM json_each(?))").all(JSON.stringify(ids)) as Row[];
    return new Map(rows.map((row) => [String(row.id), Number(row.last_seq)]));
  }

  async findConversationByResume(resumeHash: string): Promise<ConversationRecord | undefined> {
    const row = this.sql("SELECT * FROM conversations WHERE resume_hash = ?").get(resumeHash) as Row | undefined;
    return row ? toConversation(row) : undefined;
  }

  async rotateResumeHash(id: string, from: string, to: string): Promise<boolean> {
    return this.sql("UPDATE conversations SET resume_hash = ? WHERE id = ? AND resume_hash = ?").run(to, id, from).changes === 1;
  }

  async findConversationByExternal(agent: string, channel: ChannelKind, externalId: string, workspaceId: string): Promise<ConversationRecord | undefined> {
    const row = this.sql("SELECT * FROM conversations WHERE workspace_id = ? AND agent = ? AND channel = ? AND external_id = ? ORDER BY created_at DESC LIMIT 1")
      .get(workspaceId, agent, channel, externalId) as Row | undefined;
    return row ? toConversation(row) : undefined;
  }

  async setSubject(id: string, subject: CallSubject | null): Promise<void> {
    this.sql("UPDATE conversations SET subject = ? WHERE id = ?").run(subject ? encode(subject) : null, id);
  }

  async setHandoff(id: string, handoff: HandoffState | null, holder?: string | null): Promise<boolean> {
    return (
      this.sql(
        "UPDATE conversations SET handoff = @handoff WHERE id = @id AND (NOT @held OR handoff IS NULL OR json_extract(handoff, '$.state') IS NOT 'taken' OR json_extract(handoff, '$.member') = @holder)",
      ).run({ handoff: handoff ? encode(handoff) : null, id, holder: holder ?? null, held: holder !== undefined ? 1 : 0 }).changes === 1
    );
  }

  async setCapabilities(id: string, capabilities: ChannelCapabilities): Promise<void> {
    this.sql("UPDATE conversations SET capabilities = ? WHERE id = ?").run(encode(capabilities), id);
  }

  async listConversations(filter: { workspaceId?: string; handoff?: boolean; limit?: number }): Promise<ConversationRecord[]> {
    const conditions = [filter.workspaceId !== undefined ? "workspace_id = ?" : "", filter.handoff === true ? "handoff IS NOT NULL" : filter.handoff === false ? "handoff IS NULL" : ""].filter(Boolean);
    const where = conditions.length ? `WHERE ${conditions.join(" AND ")}` : "";
    const params = [...(filter.workspaceId !== undefined ? [filter.workspaceId] : []), filter.limit ?? 100];
    const rows = this.sql(`SELECT * FROM conversations ${where} ORDER BY created_at DESC, id LIMIT ?`).all(...params) as Row[];
    return rows.map(toConversation);
  }

  async appendEvent(conversationId: string, message: Outbound, at: number): Promise<StoredEvent> {
    return this.tx(() => {
      const change = summaryChange([message]);
      const row = this.sql(`UPDATE conversations SET ${summaryColumns("@lastIndex", "@mode", "@fromIndex")}, last_seq = last_seq + 1 WHERE id = @id RETURNING last_seq`)
        .get({ lastIndex: change.lastMessage, mode: change.waiting, fromIndex: change.waitingFrom, id: conversationId }) as Row | undefined;
      if (!row) throw new Error(`appendEvent: no conversation ${conversationId}`);
      const seq = Number(row.last_seq);
      this.sql("INSERT INTO events (conversation_id, seq, at, message) VALUES (?, ?, ?, ?)").run(conversationId, seq, at, encode(message));
      return { conversationId, seq, at, message };
    });
  }

  async listEvents(conversationId: string, after: number, limit = 1000): Promise<StoredEvent[]> {
    const rows = this.sql("SELECT * FROM events WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?").all(conversationId, after, limit) as Row[];
    return rows.map(toEvent);
  }

  async rateEvent(conversationId: string, seq: number, rating: Rating | null, at: number): Promise<void> {
    if (rating === null) this.sql("DELETE FROM event_ratings WHERE conversation_id = ? AND seq = ?").run(conversationId, seq);
    else
      this.sql("INSERT INTO event_ratings (conversation_id, seq, rating, at) VALUES (?, ?, ?, ?) ON CONFLICT (conversation_id, seq) DO UPDATE SET rating = excluded.rating, at = excluded.at").run(
        conversationId,
        seq,
        rating,
        at,
      );
  }

  async listRatings(conversationId: string): Promise<EventRating[]> {
    const rows = this.sql("SELECT seq, rating, at FROM event_ratings WHERE conversation_id = ? ORDER BY seq").all(conversationId) as Row[];
    return rows.map((row) => ({ seq: Number(row.seq), rating: row.rating as Rating, at: Number(row.at) }));
  }

  async countRatings(conversationIds: readonly string[]): Promise<Map<string, RatingCounts>> {
    const counts = new Map<string, RatingCounts>();
    if (conversationIds.length === 0) return counts;
    const rows = this.sql(
      `SELECT conversation_id, rating, COUNT(*) AS n FROM event_ratings WHERE conversation_id IN (SELECT value FROM json_each(?)) GROUP BY conversation_id, rating`,
    ).all(JSON.stringify(conversationIds)) as Row[];
    for (const row of rows) {
      const entry = counts.get(String(row.conversation_id)) ?? { up: 0, down: 0 };
      entry[row.rating as Rating] = Number(row.n);
      counts.set(String(row.conversation_id), entry);
    }
    return counts;
  }

  async appendTranscript(conversationId: string, message: ModelMessage, at: number): Promise<TranscriptEntry> {
    return this.tx(() => {
      const row = this.sql("UPDATE conversations SET last_transcript_seq = last_transcript_seq + 1 WHERE id = ? RETURNING last_transcript_seq")
        .get(conversationId) as Row | undefined;
      if (!row) throw new Error(`appendTranscript: no conversation ${conversationId}`);
      const seq = Number(row.last_transcript_seq);
      this.sql("INSERT INTO transcript (conversation_id, seq, at, message) VALUES (?, ?, ?, ?)").run(conversationId, seq, at, encode(message));
      return { conversationId, seq, at, message };
    });
  }

  async listTranscript(conversationId: string, after = 0): Promise<TranscriptEntry[]> {
    return (this.sql("SELECT * FROM transcript WHERE conversation_id = ? AND seq > ? ORDER BY seq").all(conversationId, after) as Row[]).map(toTranscript);
  }

  /**
   * Group commit: the batches appended while the event loop is busy (many conversations at once) are
   * committed together, in one transaction, on the next turn of the loop; each caller's promise settles
   * only after that commit. A batch that fails rolls the group back, and then every batch of the group
   * runs again in a transaction of its own, so one bad batch never takes another one with it.
   */
  append(conversationId: string, batch: CheckedAppendBatch, at: number): Promise<AppendedBatch | undefined>;
  append(conversationId: string, batch: AppendBatch, at: number): Promise<AppendedBatch>;
  async append(conversationId: string, batch: AppendBatch & { resumeHash?: string }, at: number): Promise<AppendedBatch | undefined> {
    return new Promise<AppendedBatch | undefined>((resolve, reject) => {
      this.appendQueue.push({ conversationId, batch, at, resolve, reject });
      if (this.appendQueue.length === 1) setImmediate(() => this.commitAppends());
    });
  }

  private appendQueue: QueuedAppend[] = [];

  private commitAppends(): void {
    // At most GROUP_COMMIT_MAX batches per transaction, so a burst never holds the event loop for long.
    const queued = this.appendQueue.splice(0, GROUP_COMMIT_MAX);
    if (this.appendQueue.length > 0) setImmediate(() => this.commitAppends());
    if (queued.length === 0) return;
    if (!this.db.open) {
      for (const job of queued) job.reject(new Error("append: the store is closed"));
      return;
    }
    let results: (AppendedBatch | undefined)[] | undefined;
    if (queued.length > 1) {
      try {
        results = this.tx(() => queued.map((job) => this.appendNow(job.conversationId, job.batch, job.at)));
      } catch {
        results = undefined; // rolled back whole: each batch runs again on its own below
      }
    }
    if (results) {
      queued.forEach((job, index) => job.resolve(results[index]));
      return;
    }
    for (const job of queued) {
      try {
        job.resolve(this.tx(() => this.appendNow(job.conversationId, job.batch, job.at)));
      } catch (error) {
        job.reject(error);
      }
    }
  }

  /**
   * One batch, inside the caller's transaction: one update of the conversation, at most one insert of events
   * and one of transcript entries. Undefined (nothing stored) when the batch's resumeHash is no longer the conversation's.
   */
  private appendNow(conversationId: string, batch: CheckedAppendBatch, at: number): AppendedBatch | undefined;
  private appendNow(conversationId: string, batch: AppendBatch, at: number): AppendedBatch;
  private appendNow(conversationId: string, batch: AppendBatch & { resumeHash?: string }, at: number): AppendedBatch | undefined {
    const messages = batch.events ?? [];
    const entries = batch.transcript ?? [];
    const owed = batch.owedBy !== undefined && entries.length > 0 ? batch.owedBy : null;
    const finishNode = batch.finish?.nodeId ?? null;
    const finishSeq = batch.finish?.seq ?? null;
    // A batch that owes a turn records it; one that finishes the turn clears it if it is still that one.
    const change = summaryChange(messages);
    const row = this.sql(APPEND_UPDATE_SQL)
      .get({ events: messages.length, entries: entries.length, owed, finishNode, finishSeq, id: conversationId, resume: batch.resumeHash ?? null, lastIndex: change.lastMessage, mode: change.waiting, fromIndex: change.waitingFrom }) as Row | undefined;
    if (!row && batch.resumeHash !== undefined) return undefined;
    if (!row) throw new Error(`append: no conversation ${conversationId}`);
    const conversation = toConversation(row);
    const events = this.insertRows("events", conversationId, conversation.lastSeq - messages.length, at, messages) as StoredEvent[];
    const transcript = this.insertRows("transcript", conversationId, conversation.lastTranscriptSeq - entries.length, at, entries) as TranscriptEntry[];
    return { conversation, events, transcript };
  }

  /** Rows of events or transcript entries with the seqs after `before`, in one statement (prepared once per table and count). */
  private insertRows<M>(table: "events" | "transcript", conversationId: string, before: number, at: number, messages: readonly M[]): { conversationId: string; seq: number; at: number; message: M }[] {
    if (messages.length === 0) return [];
    const values: unknown[] = [];
    const stored = messages.map((message, index) => {
      // As stored (storableJson.ts): a NUL or lone surrogate comes back as the U+FFFD it is kept as.
      const kept = storable(message);
      values.push(conversationId, before + index + 1, at, kept.json);
      return { conversationId, seq: before + index + 1, at, message: kept.stored };
    });
    this.insertStatement(table, messages.length).run(...values);
    return stored;
  }

  /** The prepared insert of `count` rows into events or transcript (kept per table and count: no SQL text built per append). */
  private readonly inserts = { events: [] as Database.Statement[], transcript: [] as Database.Statement[] };
  private insertStatement(table: "events" | "transcript", count: number): Database.Statement {
    return (this.inserts[table][count] ??= this.sql(`INSERT INTO ${table} (conversation_id, seq, at, message) VALUES ${Array.from({ length: count }, () => "(?, ?, ?, ?)").join(", ")}`));
  }

  async finishTurn(conversationId: string, nodeId: string, seq: number): Promise<boolean> {
    return this.sql("UPDATE conversations SET turn_node = NULL, turn_seq = NULL WHERE id = ? AND turn_node = ? AND turn_seq = ?").run(conversationId, nodeId, seq).changes === 1;
  }

  async listOwedTurns(nodeId: string, limit: number): Promise<OwedTurn[]> {
    return (this.sql("SELECT id, turn_node, turn_seq FROM conversations WHERE turn_node = ? ORDER BY created_at, id LIMIT ?").all(nodeId, limit) as Row[]).map(toOwedTurn);
  }

  async claimOwedTurns(fromNodeId: string, toNodeId: string, limit: number): Promise<OwedTurn[]> {
    // One statement, one writer at a time (SQLite): a turn moves once.
    return (
      this.sql(
        `UPDATE conversations SET turn_node = ? WHERE id IN (SELECT id FROM conversations WHERE turn_node = ? ORDER BY created_at, id LIMIT ?) AND turn_node = ?
         RETURNING id, turn_node, turn_seq`,
      ).all(toNodeId, fromNodeId, limit, fromNodeId) as Row[]
    ).map(toOwedTurn);
  }

  async insertWrite(w: NewWrite): Promise<WriteRecord> {
    const proposed = await this.proposeWrite(w);
    if (!proposed.ok) throw new WriteBlockedError(w.conversationId);
    return proposed.write;
  }

  async proposeWrite(w: NewWrite, batch?: AppendBatch): Promise<ProposedWrite> {
    try {
      return this.tx(() => {
        const row = this.sql(
            `INSERT INTO writes (id, conversation_id, turn_id, call_id, tool_ref, model_name, package_version_id, tool, args, state, confirmation, owner_id, subject_id, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
          )
          .get(w.id, w.conversationId, w.turnId, w.callId, w.toolRef, w.modelName, w.packageVersionId, w.tool, encode(w.args), w.state, w.confirmation, w.ownerId, w.subjectId, w.createdAt, w.createdAt) as Row;
        this.sql("INSERT INTO write_transitions (write_id, at, from_state, to_state, note) VALUES (?, ?, ?, ?, ?)").run(w.id, w.createdAt, w.state, w.state, "created");
        return { ok: true as const, write: toWrite(row), appended: batch ? this.appendNow(w.conversationId, batch, w.createdAt) : undefined };
      });
    } catch (error) {
      // The unique index writes_one_unresolved: another write of the conversation is still unresolved.
      if ((error as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE" && String((error as Error).message).includes("writes.conversation_id")) {
        return { ok: false, code: "write_blocked", conversationId: w.conversationId };
      }
      throw error;
    }
  }

  async getWrite(id: string): Promise<WriteRecord | undefined> {
    const row = this.sql("SELECT * FROM writes WHERE id = ?").get(id) as Row | undefined;
    return row ? toWrite(row) : undefined;
  }

  async listWrites(conversationId: string): Promise<WriteRecord[]> {
    return (this.sql("SELECT * FROM writes WHERE conversation_id = ? ORDER BY created_at, id").all(conversationId) as Row[]).map(toWrite);
  }

  async transitionWrite(id: string, expect: WriteExpectation, change: WriteChange, at: number): Promise<WriteRecord | undefined> {
    return (await this.changeWrite(id, expect, change, at))?.write;
  }

  async changeWrite(id: string, expect: WriteExpectation, change: WriteChange, at: number, batch?: AppendBatch, audit?: WriteAudit): Promise<ChangedWrite | undefined> {
    return this.tx(() => {
      // The compare-and-set is the update's own condition: no read before it.
      const columns = changeColumns(change, encode, bool);
      columns.push(["updated_at", at]);
      const from = expect.states[0];
      const checked = expect.checkCount !== undefined;
      const row = this.sql(`UPDATE writes SET ${columns.map(([name]) => `${name} = ?`).join(", ")} WHERE id = ? AND state = ?${checked ? " AND check_count = ?" : ""} RETURNING *`)
        .get(...columns.map(([, value]) => value), id, from, ...(checked ? [expect.checkCount] : [])) as Row | undefined;
      if (!row) return undefined;
      this.sql("INSERT INTO write_transitions (write_id, at, from_state, to_state, note) VALUES (?, ?, ?, ?, ?)").run(id, at, from, change.state, change.note ?? null);
      const write = toWrite(row);
      if (audit) {
        this.sql("INSERT INTO audit_events (workspace_id, at, actor, action, target, detail) SELECT workspace_id, ?, ?, ?, ?, ? FROM conversations WHERE id = ?")
          .run(at, audit.actor, audit.action, id, audit.detail ? encode(audit.detail) : null, write.conversationId);
      }
      return { write, appended: batch ? this.appendNow(write.conversationId, batch, at) : undefined };
    });
  }

  async listTransitions(writeId: string): Promise<WriteTransition[]> {
    return (this.sql("SELECT * FROM write_transitions WHERE write_id = ? ORDER BY id").all(writeId) as Row[]).map(toTransition);
  }

  async claimDueChecks(now: number, leaseUntil: number, limit: number): Promise<WriteRecord[]> {
    return this.tx(() => {
      const rows = this.sql(
          `UPDATE writes SET check_lease_until = ?
           WHERE id IN (
             SELECT id FROM writes
             WHERE state IN ('pending', 'unknown') AND follow_up = 0 AND next_check_at IS NOT NULL AND next_check_at <= ?
               AND (check_lease_until IS NULL OR check_lease_until < ?)
             ORDER BY next_check_at LIMIT ?)
           RETURNING *`,
        )
        .all(leaseUntil, now, now, limit) as Row[];
      return rows.map(toWrite).sort((a, b) => (a.nextCheckAt ?? 0) - (b.nextCheckAt ?? 0));
    });
  }

  async nextCheckAt(): Promise<number | null> {
    const row = this.sql("SELECT MIN(MAX(next_check_at, COALESCE(check_lease_until, 0))) AS at FROM writes WHERE state IN ('pending', 'unknown') AND follow_up = 0 AND next_check_at IS NOT NULL")
      .get() as Row;
    return row.at === null ? null : Number(row.at);
  }

  async recoverRunning(nodeId: string, now: number, checkAt: number): Promise<WriteRecord[]> {
    return this.tx(() => {
      const recovered: WriteRecord[] = [];
      const running = this.sql("SELECT * FROM writes WHERE state = 'running' AND node_id = ?").all(nodeId) as Row[];
      for (const row of running) {
        const updated = this.sql(
            "UPDATE writes SET state = 'unknown', result = ?, check_count = 0, next_check_at = ?, check_lease_until = NULL, updated_at = ? WHERE id = ? RETURNING *",
          )
          .get(encode({ outcome: "unknown", reason: RECOVERED_REASON }), checkAt, now, row.id) as Row;
        this.sql("INSERT INTO write_transitions (write_id, at, from_state, to_state, note) VALUES (?, ?, 'running', 'unknown', 'recovered at startup')").run(row.id, now);
        recovered.push(toWrite(updated));
      }
      const confirmed = this.sql("SELECT * FROM writes WHERE state = 'confirmed' AND node_id = ?").all(nodeId) as Row[];
      for (const row of confirmed) {
        const updated = this.sql("UPDATE writes SET state = 'not_applied', result = ?, updated_at = ? WHERE id = ? RETURNING *")
          .get(encode({ outcome: "not_applied", message: NEVER_SENT_MESSAGE }), now, row.id) as Row;
        this.sql("INSERT INTO write_transitions (write_id, at, from_state, to_state, note) VALUES (?, ?, 'confirmed', 'not_applied', 'recovered at startup: never sent')").run(row.id, now);
        recovered.push(toWrite(updated));
      }
      // A status check interrupted by the stop is due again now.
      this.sql("UPDATE writes SET check_lease_until = NULL WHERE state IN ('pending', 'unknown') AND node_id = ? AND check_lease_until IS NOT NULL").run(nodeId);
      return recovered;
    });
  }

  async listFollowUps(workspaceId?: string): Promise<WriteRecord[]> {
    if (workspaceId === undefined) return (this.sql("SELECT * FROM writes WHERE follow_up = 1 ORDER BY updated_at, id").all() as Row[]).map(toWrite);
    const rows = this.sql("SELECT w.* FROM writes w JOIN conversations c ON c.id = w.conversation_id WHERE w.follow_up = 1 AND c.workspace_id = ? ORDER BY w.updated_at, w.id").all(workspaceId) as Row[];
    return rows.map(toWrite);
  }

  async claimInboundSource(sourceId: string, conversationId: string, at: number): Promise<boolean> {
    return this.sql("INSERT INTO inbound_sources (source_id, conversation_id, at) VALUES (?, ?, ?) ON CONFLICT (source_id) DO NOTHING").run(sourceId, conversationId, at).changes === 1;
  }

  async pruneInboundSources(before: number): Promise<number> {
    return this.sql("DELETE FROM inbound_sources WHERE at < ?").run(before).changes;
  }

  async putFile(file: StoredFile): Promise<void> {
    this.sql("INSERT INTO files (id, conversation_id, name, mime_type, size, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)").run(
      file.id,
      file.conversationId,
      file.name,
      file.mimeType,
      file.size,
      Buffer.from(file.bytes),
      file.createdAt,
    );
  }

  async getFile(id: string): Promise<StoredFile | undefined> {
    const row = this.sql("SELECT * FROM files WHERE id = ?").get(id) as Row | undefined;
    return row ? toFile(row) : undefined;
  }

  async listExpiredProposals(createdBefore: number, limit: number): Promise<WriteRecord[]> {
    return (this.sql("SELECT * FROM writes WHERE state = 'proposed' AND created_at <= ? ORDER BY created_at, id LIMIT ?").all(createdBefore, limit) as Row[]).map(toWrite);
  }

  async listExpiredStepUps(updatedBefore: number, limit: number): Promise<WriteRecord[]> {
    return (this.sql("SELECT * FROM writes WHERE state = 'step_up_required' AND updated_at <= ? ORDER BY updated_at, id LIMIT ?").all(updatedBefore, limit) as Row[]).map(toWrite);
  }

  async purgeFiles(createdBefore: number, now: number, limit: number): Promise<number> {
    return this.sql("UPDATE files SET bytes = X'', purged_at = ? WHERE id IN (SELECT id FROM files WHERE purged_at IS NULL AND created_at <= ? LIMIT ?)")
      .run(now, createdBefore, limit).changes;
  }

  async insertHandoffNotice(n: NewHandoffNotice): Promise<HandoffNotice> {
    const row = this.sql(
        `INSERT INTO handoff_notices (id, conversation_id, queue, body, state, attempts, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?) RETURNING *`,
      )
      .get(n.id, n.conversationId, n.queue, n.body, n.createdAt, n.createdAt, n.createdAt) as Row;
    return toHandoffNotice(row);
  }

  async claimDueHandoffNotices(now: number, leaseUntil: number, limit: number): Promise<HandoffNotice[]> {
    return this.tx(() =>
      (this.sql(
          `UPDATE handoff_notices SET lease_until = ?
           WHERE id IN (
             SELECT id FROM handoff_notices
             WHERE state = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)
             ORDER BY next_attempt_at LIMIT ?)
           RETURNING *`,
        )
        .all(leaseUntil, now, now, limit) as Row[]).map(toHandoffNotice),
    );
  }

  async recordHandoffAttempt(id: string, expectAttempts: number, a: HandoffAttempt, at: number): Promise<HandoffNotice | undefined> {
    const row = this.sql(
        `UPDATE handoff_notices SET state = ?, attempts = ?, next_attempt_at = ?, lease_until = NULL, last_status = ?, last_error = ?, updated_at = ?
         WHERE id = ? AND attempts = ? AND state = 'pending' RETURNING *`,
      )
      .get(a.state, a.attempts, a.nextAttemptAt, a.lastStatus, a.lastError, at, id, expectAttempts) as Row | undefined;
    return row ? toHandoffNotice(row) : undefined;
  }

  async listHandoffNotices(conversationId: string): Promise<HandoffNotice[]> {
    return (this.sql("SELECT * FROM handoff_notices WHERE conversation_id = ? ORDER BY created_at, id").all(conversationId) as Row[]).map(toHandoffNotice);
  }

  async createConsoleSession(session: ConsoleSession): Promise<void> {
    this.sql("INSERT INTO console_sessions (id_hash, member, csrf, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)").run(session.idHash, session.member, session.csrf, session.createdAt, session.lastSeenAt);
  }

  async getConsoleSession(idHash: string): Promise<ConsoleSession | undefined> {
    const row = this.sql("SELECT * FROM console_sessions WHERE id_hash = ?").get(idHash) as Row | undefined;
    return row ? toConsoleSession(row) : undefined;
  }

  async touchConsoleSession(idHash: string, at: number, idleSince: number): Promise<boolean> {
    return this.sql("UPDATE console_sessions SET last_seen_at = ? WHERE id_hash = ? AND last_seen_at > ?").run(at, idHash, idleSince).changes === 1;
  }

  async deleteConsoleSession(idHash: string): Promise<void> {
    this.sql("DELETE FROM console_sessions WHERE id_hash = ?").run(idHash);
  }

  async pruneConsoleSessions(before: number): Promise<number> {
    return this.sql("DELETE FROM console_sessions WHERE last_seen_at < ?").run(before).changes;
  }

  async countSignInAttempt(addressHash: string, at: number, windowMs: number): Promise<SignInCount> {
    const row = this.sql(SIGN_IN_COUNT_SQL.replaceAll(/\$\d/g, "?")).get(addressHash, at, at - windowMs, at - windowMs, at) as Row;
    return { count: Number(row.count), since: Number(row.since) };
  }

  async pruneSignInAttempts(before: number): Promise<number> {
    return this.sql("DELETE FROM sign_in_attempts WHERE since < ?").run(before).changes;
  }

  async listInbox(query: InboxQuery): Promise<InboxEntry[]> {
    // The page of conversations first, then the joins for those rows only (joining before the limit joins every row).
    const only = query.ids ? "AND c.id IN (SELECT value FROM json_each(@ids))" : "";
    const rows = this.sql(
      `SELECT c.*, lm.seq AS lm_seq, lm.at AS lm_at, lm.message AS lm_message, wt.at AS waiting_at, COALESCE(r.seq, 0) AS read_seq, ${inboxWriteCounts("1")}
       FROM (SELECT * FROM conversations c WHERE c.workspace_id = @workspaceId ${only} ORDER BY c.created_at DESC, c.id LIMIT @limit) c
       LEFT JOIN events lm ON lm.conversation_id = c.id AND lm.seq = c.last_message_seq
       LEFT JOIN events wt ON wt.conversation_id = c.id AND wt.seq = c.waiting_seq
       LEFT JOIN member_reads r ON r.conversation_id = c.id AND r.member = @member
       ORDER BY c.created_at DESC, c.id`,
    ).all({ workspaceId: query.workspaceId, member: query.member, limit: query.limit, ...(query.ids && { ids: JSON.stringify(query.ids) }) }) as Row[];
    return rows.map(toInboxEntry);
  }

  async searchConversations(workspaceId: string, text: string, limit: number): Promise<SearchHit[]> {
    const plain = containsPattern(text);
    // Events are matched on their JSON text, where quotes and backslashes are escaped.
    const inJson = containsPattern(JSON.stringify(text).slice(1, -1));
    const own = this.sql(
      `SELECT c.id FROM conversations c WHERE c.workspace_id = @workspaceId AND (c.id LIKE @plain ESCAPE '\\' OR c.external_id LIKE @plain ESCAPE '\\'
         OR json_extract(c.subject, '$.id') LIKE @plain ESCAPE '\\' OR json_extract(c.subject, '$.ref') LIKE @plain ESCAPE '\\'
         OR EXISTS (SELECT 1 FROM writes w WHERE w.conversation_id = c.id AND (w.args LIKE @inJson ESCAPE '\\' OR w.final_args LIKE @inJson ESCAPE '\\')))
       ORDER BY c.created_at DESC, c.id LIMIT @limit`,
    ).all({ workspaceId, plain, inJson, limit }) as Row[];
    const events = this.sql(
      `SELECT e.* FROM events e JOIN conversations c ON c.id = e.conversation_id
       WHERE c.workspace_id = @workspaceId AND e.message LIKE @inJson ESCAPE '\\' ORDER BY c.created_at DESC, c.id, e.seq DESC LIMIT @events`,
    ).all({ workspaceId, inJson, events: limit * 10 }) as Row[];
    return [...own.map((row) => ({ conversationId: String(row.id) })), ...events.map((row) => ({ conversationId: String(row.conversation_id), event: toEvent(row) }))];
  }

  async markRead(conversationId: string, member: string, seq: number, at: number): Promise<void> {
    this.sql(
      "INSERT INTO member_reads (conversation_id, member, seq, at) VALUES (?, ?, ?, ?) ON CONFLICT (conversation_id, member) DO UPDATE SET seq = excluded.seq, at = excluded.at WHERE excluded.seq > member_reads.seq",
    ).run(conversationId, member, seq, at);
  }

  async addTeamNote(note: TeamNote): Promise<void> {
    this.sql("INSERT INTO team_notes (id, conversation_id, member, text, at) VALUES (?, ?, ?, ?, ?)").run(note.id, note.conversationId, note.member, note.text, note.at);
  }

  async listTeamNotes(conversationId: string): Promise<TeamNote[]> {
    return (this.sql("SELECT * FROM team_notes WHERE conversation_id = ? ORDER BY at, id").all(conversationId) as Row[]).map(toTeamNote);
  }

  async setSecret(workspaceId: string, name: string, seal: (version: number) => SealedValue, actor: string, at: number): Promise<SecretMeta> {
    return this.tx(() => {
      const before = this.sql("SELECT version FROM workspace_secrets WHERE workspace_id = ? AND name = ?").get(workspaceId, name) as Row | undefined;
      const version = before ? Number(before.version) + 1 : 1;
      const sealed = seal(version);
      this.sql(
        `INSERT INTO workspace_secrets (workspace_id, name, version, key_id, nonce, ciphertext, updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (workspace_id, name) DO UPDATE SET version = excluded.version, key_id = excluded.key_id, nonce = excluded.nonce,
           ciphertext = excluded.ciphertext, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
      ).run(workspaceId, name, version, sealed.keyId, Buffer.from(sealed.nonce), Buffer.from(sealed.ciphertext), at, actor);
      this.insertAudit({ workspaceId, at, actor, action: "secret.set", target: name, detail: { version } });
      return { workspaceId, name, version, updatedAt: at, updatedBy: actor };
    });
  }

  async removeSecret(workspaceId: string, name: string, actor: string, at: number): Promise<boolean> {
    return this.tx(() => {
      const row = this.sql(
        `UPDATE workspace_secrets SET version = version + 1, key_id = NULL, nonce = NULL, ciphertext = NULL, updated_at = ?, updated_by = ?
         WHERE workspace_id = ? AND name = ? AND ciphertext IS NOT NULL RETURNING version`,
      ).get(at, actor, workspaceId, name) as Row | undefined;
      if (!row) return false;
      this.insertAudit({ workspaceId, at, actor, action: "secret.removed", target: name, detail: { version: Number(row.version) } });
      return true;
    });
  }

  async listSecrets(workspaceId: string): Promise<SecretMeta[]> {
    return (this.sql("SELECT * FROM workspace_secrets WHERE workspace_id = ? AND ciphertext IS NOT NULL ORDER BY name").all(workspaceId) as Row[]).map(toSecretMeta);
  }

  async readSecrets(workspaceId: string, names: readonly string[]): Promise<StoredSecret[]> {
    if (names.length === 0) return [];
    const rows = this.sql("SELECT * FROM workspace_secrets WHERE workspace_id = ? AND ciphertext IS NOT NULL AND name IN (SELECT value FROM json_each(?))").all(workspaceId, JSON.stringify(names)) as Row[];
    return rows.map(toStoredSecret);
  }

  async listAllSecrets(): Promise<StoredSecret[]> {
    return (this.sql("SELECT * FROM workspace_secrets WHERE ciphertext IS NOT NULL ORDER BY workspace_id, name").all() as Row[]).map(toStoredSecret);
  }

  async resealSecrets(reseal: (secret: StoredSecret) => SealedValue, actor: string, at: number): Promise<number> {
    return this.tx(() => {
      const secrets = (this.sql("SELECT * FROM workspace_secrets WHERE ciphertext IS NOT NULL ORDER BY workspace_id, name").all() as Row[]).map(toStoredSecret);
      const counts = new Map<string, number>();
      for (const secret of secrets) {
        const sealed = reseal(secret);
        this.sql("UPDATE workspace_secrets SET key_id = ?, nonce = ?, ciphertext = ? WHERE workspace_id = ? AND name = ?").run(sealed.keyId, Buffer.from(sealed.nonce), Buffer.from(sealed.ciphertext), secret.workspaceId, secret.name);
        counts.set(secret.workspaceId, (counts.get(secret.workspaceId) ?? 0) + 1);
      }
      for (const [workspaceId, count] of counts) this.insertAudit({ workspaceId, at, actor, action: "secrets.key_rotated", target: "*", detail: { secrets: count } });
      return secrets.length;
    });
  }

  async appendAudit(entry: AuditEntry): Promise<AuditEvent> {
    return this.insertAudit(entry);
  }

  private insertAudit(entry: AuditEntry): AuditEvent {
    const row = this.sql("INSERT INTO audit_events (workspace_id, at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?, ?) RETURNING id")
      .get(entry.workspaceId, entry.at, entry.actor, entry.action, entry.target, entry.detail ? encode(entry.detail) : null) as Row;
    return { id: Number(row.id), ...entry };
  }

  async lastAudit(workspaceId: string, action: string, target: string): Promise<AuditEvent | undefined> {
    const row = this.sql("SELECT * FROM audit_events WHERE workspace_id = ? AND action = ? AND target = ? ORDER BY id DESC LIMIT 1").get(workspaceId, action, target) as Row | undefined;
    return row ? toAuditEvent(row) : undefined;
  }

  async listAudit(workspaceId: string, options: { after?: number; limit?: number } = {}): Promise<AuditEvent[]> {
    const rows = this.sql("SELECT * FROM audit_events WHERE workspace_id = ? AND id > ? ORDER BY id LIMIT ?").all(workspaceId, options.after ?? 0, options.limit ?? 500) as Row[];
    return rows.map(toAuditEvent);
  }

  async syncTeamMembers(workspaceId: string, members: readonly { name: string; tokenSha256: string }[], actor: string, at: number): Promise<MembersSynced> {
    return this.tx(() => {
      const recorded = (this.sql("SELECT * FROM team_members WHERE workspace_id = ?").all(workspaceId) as Row[]).map(toRecordedMember);
      const conflicts = members.filter((member) => recorded.some((kept) => kept.source === "managed" && kept.name === member.name)).map((member) => member.name);
      if (conflicts.length > 0) return { ok: false as const, conflicts };
      const configured = recorded.filter((kept) => kept.source === "config");
      const changes = memberChanges(workspaceId, configured, members, actor, at);
      this.sql("DELETE FROM team_members WHERE workspace_id = ? AND source = 'config'").run(workspaceId);
      for (const member of members) {
        const kept = configured.find((candidate) => candidate.name === member.name && candidate.tokenSha256 === member.tokenSha256);
        this.sql("INSERT INTO team_members (workspace_id, name, token_sha256, added_at) VALUES (?, ?, ?, ?)").run(workspaceId, member.name, member.tokenSha256, kept?.addedAt ?? at);
      }
      for (const change of changes.filter(endsSessions)) this.sql("DELETE FROM console_sessions WHERE member = ?").run(workspaceRef(workspaceId, change.target));
      return { ok: true as const, events: changes.map((entry) => this.insertAudit(entry)) };
    });
  }

  async addTeamMember(member: { workspaceId: string; name: string; tokenSha256: string }, actor: string, at: number): Promise<MemberAdded> {
    return this.tx(() => {
      if (this.sql("SELECT 1 FROM team_members WHERE workspace_id = ? AND name = ?").get(member.workspaceId, member.name)) return { ok: false as const, code: "member_exists" as const };
      this.sql("INSERT INTO team_members (workspace_id, name, token_sha256, added_at, source, added_by) VALUES (?, ?, ?, ?, 'managed', ?)").run(member.workspaceId, member.name, member.tokenSha256, at, actor);
      return { ok: true as const, event: this.insertAudit({ workspaceId: member.workspaceId, at, actor, action: "member.added", target: member.name, detail: { source: "managed" } }) };
    });
  }

  async removeTeamMember(workspaceId: string, name: string, actor: string, at: number): Promise<MemberRemoved> {
    return this.tx(() => {
      const row = this.sql("SELECT * FROM team_members WHERE workspace_id = ? AND name = ?").get(workspaceId, name) as Row | undefined;
      if (!row) return { ok: false as const, code: "member_not_found" as const };
      if (toRecordedMember(row).source !== "managed") return { ok: false as const, code: "member_configured" as const };
      this.sql("DELETE FROM team_members WHERE workspace_id = ? AND name = ?").run(workspaceId, name);
      const sessionsEnded = this.sql("DELETE FROM console_sessions WHERE member = ?").run(workspaceRef(workspaceId, name)).changes;
      return { ok: true as const, sessionsEnded, event: this.insertAudit({ workspaceId, at, actor, action: "member.removed", target: name, detail: { source: "managed", sessionsEnded } }) };
    });
  }

  async listTeamMembers(workspaceId: string): Promise<RecordedMember[]> {
    return (this.sql("SELECT * FROM team_members WHERE workspace_id = ? ORDER BY name").all(workspaceId) as Row[]).map(toRecordedMember);
  }

  async findTeamMemberByToken(tokenSha256: string): Promise<RecordedMember | undefined> {
    const row = this.sql("SELECT * FROM team_members WHERE token_sha256 = ? AND source = 'managed' LIMIT 1").get(tokenSha256) as Row | undefined;
    return row ? toRecordedMember(row) : undefined;
  }

  async getTeamMember(workspaceId: string, name: string): Promise<RecordedMember | undefined> {
    const row = this.sql("SELECT * FROM team_members WHERE workspace_id = ? AND name = ? AND source = 'managed'").get(workspaceId, name) as Row | undefined;
    return row ? toRecordedMember(row) : undefined;
  }

  async hasManagedMembers(): Promise<boolean> {
    return this.sql("SELECT 1 FROM team_members WHERE source = 'managed' LIMIT 1").get() !== undefined;
  }
}
