// The Store on PostgreSQL (pg), for running several gateway nodes: the same interface and contract as
// SQLite; ledger compare-and-set under a row lock, status checks claimed with FOR UPDATE SKIP LOCKED.
import pg from "pg";
import { workspaceRef, type CallSubject, type ChannelCapabilities, type ChannelKind, type Outbound, type Rating } from "@caplo/shared";
import type { ModelMessage } from "../model/model.ts";
import { migratePostgres } from "./migrate.ts";
import { postgresTransaction } from "./postgresTransaction.ts";
import { POSTGRES_MIGRATIONS } from "./migrations.ts";
import { summaryChange, summaryColumns } from "./inboxSummary.ts";
import { WriteBlockedError } from "./store.ts";
import { storable, storableId, storableJson } from "./storableJson.ts";
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
/**
 * A conversation's columns as the engine reads them; capabilities as text, so the row mapping validates each
 * distinct text once (rows.ts) instead of parsing JSONB into an object to validate every time.
 */
/** A conversation's columns, of the table or of the row alias `of`. */
const conversationColumns = (of?: string) =>
  ["id", "workspace_id", "agent", "release_id", "channel", "external_id", "resume_hash", "owner_id", "subject", "handoff", "capabilities::text AS capabilities", "created_at", "last_seq", "last_transcript_seq", "turn_node", "turn_seq"]
    .map((column) => (of ? `${of}.${column}` : column))
    .join(", ");
const CONVERSATION_COLUMNS = conversationColumns();

/**
 * The common table expressions of an append to one conversation (`c`: its row after the update, `e` and `t`:
 * the inserts, which take the seqs the update reserved), with their parameters pushed on `params`; `where`
 * picks the conversation. The update's row lock orders concurrent appends to the conversation.
 */
function appendCtes(batch: AppendBatch, at: number, params: unknown[], where: string, suffix = ""): { sql: string; stored: AppendBatch } {
  const [c, e, t] = [`c${suffix}`, `e${suffix}`, `t${suffix}`];
  const p = (value: unknown) => `$${params.push(value)}`;
  const events = batch.events ?? [];
  const entries = batch.transcript ?? [];
  const ne = p(events.length);
  const nt = p(entries.length);
  const owed = p(batch.owedBy !== undefined && entries.length > 0 ? batch.owedBy : null);
  const finishNode = p(batch.finish?.nodeId ?? null);
  const finishSeq = p(batch.finish?.seq ?? null);
  const atParam = p(at);
  // Each list as one JSON array (one text parameter, one jsonb parse): a text[] of JSON texts made pg escape
  // every quote of every message into an array literal, and PostgreSQL parse that literal, then each element.
  // As stored (storableJson.ts): the batch appended() returns is the one kept, a NUL or lone surrogate as U+FFFD.
  const storedEvents = storable(events);
  const storedEntries = storable(entries);
  const eventTexts = p(storedEvents.json);
  const entryTexts = p(storedEntries.json);
  const stored = storedEvents.stored === events && storedEntries.stored === entries ? batch : { ...batch, events: storedEvents.stored, transcript: storedEntries.stored };
  const finishes = `turn_node = ${finishNode}::text AND turn_seq = ${finishSeq}::bigint`;
  const change = summaryChange(events);
  const summary = summaryColumns(`${p(change.lastMessage)}::int`, `${p(change.waiting)}::text`, `${p(change.waitingFrom)}::int`);
  const sql = `${c} AS (
      UPDATE conversations SET ${summary}, last_seq = last_seq + ${ne}::int, last_transcript_seq = last_transcript_seq + ${nt}::int,
        turn_node = CASE WHEN ${owed}::text IS NOT NULL THEN ${owed}::text WHEN ${finishes} THEN NULL ELSE turn_node END,
        turn_seq = CASE WHEN ${owed}::text IS NOT NULL THEN last_transcript_seq + ${nt}::int WHEN ${finishes} THEN NULL ELSE turn_seq END
      WHERE ${where} RETURNING ${CONVERSATION_COLUMNS}
    ), ${e} AS (
      INSERT INTO events (conversation_id, seq, at, message)
      SELECT ${c}.id, ${c}.last_seq - ${ne}::int + x.ord, ${atParam}, x.message FROM ${c}, jsonb_array_elements(${eventTexts}::jsonb) WITH ORDINALITY AS x(message, ord)
    ), ${t} AS (
      INSERT INTO transcript (conversation_id, seq, at, message)
      SELECT ${c}.id, ${c}.last_transcript_seq - ${nt}::int + x.ord, ${atParam}, x.message FROM ${c}, jsonb_array_elements(${entryTexts}::jsonb) WITH ORDINALITY AS x(message, ord)
    )`;
  return { sql, stored };
}

/** What an append stored, from the conversation's row as the append's update returned it. */
function appended(conversationId: string, batch: AppendBatch, at: number, row: Row): AppendedBatch {
  const messages = batch.events ?? [];
  const entries = batch.transcript ?? [];
  const conversation = toConversation(row);
  const firstEvent = conversation.lastSeq - messages.length + 1;
  const firstEntry = conversation.lastTranscriptSeq - entries.length + 1;
  return {
    conversation,
    events: messages.map((message, index) => ({ conversationId, seq: firstEvent + index, at, message })),
    transcript: entries.map((message, index) => ({ conversationId, seq: firstEntry + index, at, message })),
  };
}
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** At most this many batches taken from the queue on one turn of the loop. */
const GROUP_COMMIT_MAX = 64;
/**
 * The sizes of a group commit's statements: a group is sent as statements of these sizes, largest first
 * (a group of 7 is 4 + 2 + 1). Each statement text is prepared once per connection, and PostgreSQL keeps a
 * prepared plan of a 64-batch statement in about 5 MiB: one text per size, not per count, keeps it to
 * about 2.5 MiB a connection.
 */
const GROUP_STATEMENT_SIZES = [16, 8, 4, 2, 1];
type QueuedAppend = { conversationId: string; batch: AppendBatch & { resumeHash?: string }; at: number; resolve: (stored: AppendedBatch | undefined) => void; reject: (error: unknown) => void };

/**
 * A group's batches as one statement: each one's CTEs renamed apart (c_0, e_0, t_0, c_1, ...), each
 * conversation's row after its update selected as r0, r1, ... (null: no such conversation, or its resume hash
 * is not the batch's). The text depends only on the group's size. A batch that cannot be encoded is named in
 * `unencodable`, and then the statement is not to be run.
 */
function groupStatement(group: QueuedAppend[]): { sql: string; params: unknown[]; stored: AppendBatch[]; unencodable: Map<QueuedAppend, Error> } {
  const params: unknown[] = [];
  const ctes: string[] = [];
  const stored: AppendBatch[] = [];
  const unencodable = new Map<QueuedAppend, Error>();
  group.forEach((job, index) => {
    try {
      const id = `$${params.push(job.conversationId)}`;
      const resume = `$${params.push(job.batch.resumeHash ?? null)}::text`;
      const part = appendCtes(job.batch, job.at, params, `id = ${id} AND (${resume} IS NULL OR resume_hash = ${resume})`, `_${index}`);
      ctes.push(part.sql);
      stored.push(part.stored);
    } catch (error) {
      unencodable.set(job, error instanceof Error ? error : new Error(String(error)));
    }
  });
  const sql = `WITH ${ctes.join(", ")} SELECT ${group.map((_, index) => `(SELECT row_to_json(c_${index}) FROM c_${index}) AS r${index}`).join(", ")}`;
  return { sql, params, stored, unencodable };
}

/** An error PostgreSQL itself reported for a statement (a SQLSTATE, with its severity): the statement stored nothing. */
function reportedByPostgres(error: unknown): boolean {
  return error instanceof Error && typeof (error as { severity?: unknown }).severity === "string" && /^[0-9A-Z]{5}$/.test(String((error as { code?: unknown }).code));
}

export type PostgresStoreOptions = {
  /** A connection string, or pg's individual settings. */
  connectionString?: string;
  host?: string;
  port?: number;
  user?: string;
  password?: string;
  database?: string;
  /** The schema the tables live in (created if missing). Default public. */
  schema?: string;
  max?: number;
};

export class PostgresStore implements Store {
  readonly kind = "postgres" as const;
  readonly schema: string;
  private readonly pool: pg.Pool;

  constructor(options: PostgresStoreOptions) {
    this.schema = options.schema ?? "public";
    if (!SCHEMA_PATTERN.test(this.schema)) throw new Error(`PostgresStore: schema name '${this.schema}' is not a plain identifier`);
    this.pool = new pg.Pool({
      connectionString: options.connectionString,
      host: options.host,
      port: options.port,
      user: options.user,
      password: options.password,
      database: options.database,
      max: options.max ?? 10,
      options: `-c search_path=${this.schema}`,
    });
    // An idle connection ended by a PostgreSQL restart is reported here, not thrown: unhandled, pg's
    // 'error' event would end the process. The pool opens a new connection for the next query.
    this.pool.on("error", () => undefined);
  }

  /** Statement names by SQL text: each text is prepared once per connection, then only bound and run. */
  private readonly names = new Map<string, string>();

  private async q(sql: string, params: unknown[] = [], client?: pg.PoolClient): Promise<Row[]> {
    let name = this.names.get(sql);
    if (!name) {
      name = `caplo_${this.names.size + 1}`;
      this.names.set(sql, name);
    }
    const result = await (client ?? this.pool).query({ name, text: sql, values: params });
    return result.rows as Row[];
  }

  private tx<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return postgresTransaction(this.pool, fn);
  }

  async migrate(): Promise<void> {
    await migratePostgres(this.pool, this.schema, { table: "schema_migrations", migrations: POSTGRES_MIGRATIONS });
  }

  async ping(): Promise<boolean> {
    try {
      const rows = await this.q("SELECT 1 AS ok");
      return rows[0]?.ok === 1;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** Drop this store's schema and everything in it (tests use a schema of their own per run). */
  async dropSchema(): Promise<void> {
    if (this.schema === "public") throw new Error("PostgresStore: refusing to drop the public schema");
    await this.q(`DROP SCHEMA IF EXISTS ${this.schema} CASCADE`);
  }

  async ensureWorkspace(id: string, at: number): Promise<void> {
    await this.q("INSERT INTO workspaces (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", [id, at]);
  }

  async listWorkspaces(): Promise<string[]> {
    return (await this.q("SELECT id FROM workspaces ORDER BY id")).map((row) => String(row.id));
  }

  async createConversation(c: NewConversation): Promise<ConversationRecord> {
    const rows = await this.q(
      `INSERT INTO conversations (id, workspace_id, agent, release_id, channel, external_id, resume_hash, owner_id, subject, capabilities, created_at)
       VALUES ($1, $11, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10) RETURNING ${CONVERSATION_COLUMNS}`,
      [c.id, c.agent, c.releaseId, c.channel, c.externalId, c.resumeHash, c.ownerId, c.subject ? encode(c.subject) : null, encode(c.capabilities), c.createdAt, c.workspaceId],
    );
    return toConversation(rows[0]!);
  }

  async getConversation(id: string): Promise<ConversationRecord | undefined> {
    // An id PostgreSQL cannot even be asked for (a NUL) is one no conversation has, as on SQLite.
    if (!storableId(id)) return undefined;
    const rows = await this.q(`SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE id = $1`, [id]);
    return rows[0] ? toConversation(rows[0]) : undefined;
  }

  async latestSeqs(ids: readonly string[]): Promise<Map<string, number>> {
    const rows = await this.q("SELECT id, last_seq FROM conversations WHERE id = ANY($1::text[])", [ids]);
    return new Map(rows.map((row) => [String(row.id), Number(row.last_seq)]));
  }

  async findConversationByResume(resumeHash: string): Promise<ConversationRecord | undefined> {
    const rows = await this.q(`SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE resume_hash = $1`, [resumeHash]);
    return rows[0] ? toConversation(rows[0]) : undefined;
  }

  async rotateResumeHash(id: string, from: string, to: string): Promise<boolean> {
    const rows = await this.q("UPDATE conversations SET resume_hash = $1 WHERE id = $2 AND resume_hash = $3 RETURNING id", [to, id, from]);
    return rows.length === 1;
  }

  async findConversationByExternal(agent: string, channel: ChannelKind, externalId: string, workspaceId: string): Promise<ConversationRecord | undefined> {
    const rows = await this.q(
      `SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE workspace_id = $4 AND agent = $1 AND channel = $2 AND external_id = $3 ORDER BY created_at DESC LIMIT 1`,
      [agent, channel, externalId, workspaceId],
    );
    return rows[0] ? toConversation(rows[0]) : undefined;
  }

  async setSubject(id: string, subject: CallSubject | null): Promise<void> {
    await this.q("UPDATE conversations SET subject = $1::jsonb WHERE id = $2", [subject ? encode(subject) : null, id]);
  }

  async setHandoff(id: string, handoff: HandoffState | null, holder?: string | null): Promise<boolean> {
    const rows = await this.q(
      "UPDATE conversations SET handoff = $1::jsonb WHERE id = $2 AND (NOT $4::boolean OR handoff IS NULL OR handoff->>'state' IS DISTINCT FROM 'taken' OR handoff->>'member' = $3) RETURNING id",
      [handoff ? encode(handoff) : null, id, holder ?? null, holder !== undefined],
    );
    return rows.length === 1;
  }

  async setCapabilities(id: string, capabilities: ChannelCapabilities): Promise<void> {
    await this.q("UPDATE conversations SET capabilities = $1::jsonb WHERE id = $2", [encode(capabilities), id]);
  }

  async listConversations(filter: { workspaceId?: string; handoff?: boolean; limit?: number }): Promise<ConversationRecord[]> {
    const conditions = [filter.workspaceId !== undefined ? "workspace_id = $2" : "", filter.handoff === true ? "handoff IS NOT NULL" : filter.handoff === false ? "handoff IS NULL" : ""].filter(Boolean);
    const where = conditions.length ? `WHERE ${conditions.join(" AND ")}` : "";
    const rows = await this.q(`SELECT ${CONVERSATION_COLUMNS} FROM conversations ${where} ORDER BY created_at DESC, id LIMIT $1`, [filter.limit ?? 100, ...(filter.workspaceId !== undefined ? [filter.workspaceId] : [])]);
    return rows.map(toConversation);
  }

  async appendEvent(conversationId: string, message: Outbound, at: number): Promise<StoredEvent> {
    return this.tx(async (client) => {
      const change = summaryChange([message]);
      const rows = await this.q(
        `UPDATE conversations SET ${summaryColumns("$2::int", "$3::text", "$4::int")}, last_seq = last_seq + 1 WHERE id = $1 RETURNING last_seq`,
        [conversationId, change.lastMessage, change.waiting, change.waitingFrom],
        client,
      );
      if (!rows[0]) throw new Error(`appendEvent: no conversation ${conversationId}`);
      const seq = Number(rows[0].last_seq);
      await client.query("INSERT INTO events (conversation_id, seq, at, message) VALUES ($1, $2, $3, $4::jsonb)", [conversationId, seq, at, encode(message)]);
      return { conversationId, seq, at, message };
    });
  }

  async listEvents(conversationId: string, after: number, limit = 1000): Promise<StoredEvent[]> {
    const rows = await this.q("SELECT * FROM events WHERE conversation_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", [conversationId, after, limit]);
    return rows.map(toEvent);
  }

  async rateEvent(conversationId: string, seq: number, rating: Rating | null, at: number): Promise<void> {
    if (rating === null) await this.q("DELETE FROM event_ratings WHERE conversation_id = $1 AND seq = $2", [conversationId, seq]);
    else
      await this.q(
        "INSERT INTO event_ratings (conversation_id, seq, rating, at) VALUES ($1, $2, $3, $4) ON CONFLICT (conversation_id, seq) DO UPDATE SET rating = excluded.rating, at = excluded.at",
        [conversationId, seq, rating, at],
      );
  }

  async listRatings(conversationId: string): Promise<EventRating[]> {
    const rows = await this.q("SELECT seq, rating, at FROM event_ratings WHERE conversation_id = $1 ORDER BY seq", [conversationId]);
    return rows.map((row) => ({ seq: Number(row.seq), rating: row.rating as Rating, at: Number(row.at) }));
  }

  async countRatings(conversationIds: readonly string[]): Promise<Map<string, RatingCounts>> {
    const counts = new Map<string, RatingCounts>();
    if (conversationIds.length === 0) return counts;
    const rows = await this.q("SELECT conversation_id, rating, COUNT(*) AS n FROM event_ratings WHERE conversation_id = ANY($1) GROUP BY conversation_id, rating", [[...conversationIds]]);
    for (const row of rows) {
      const entry = counts.get(String(row.conversation_id)) ?? { up: 0, down: 0 };
      entry[row.rating as Rating] = Number(row.n);
      counts.set(String(row.conversation_id), entry);
    }
    return counts;
  }

  async appendTranscript(conversationId: string, message: ModelMessage, at: number): Promise<TranscriptEntry> {
    return this.tx(async (client) => {
      const rows = await this.q(
        "UPDATE conversations SET last_transcript_seq = last_transcript_seq + 1 WHERE id = $1 RETURNING last_transcript_seq",
        [conversationId],
        client,
      );
      if (!rows[0]) throw new Error(`appendTranscript: no conversation ${conversationId}`);
      const seq = Number(rows[0].last_transcript_seq);
      await client.query("INSERT INTO transcript (conversation_id, seq, at, message) VALUES ($1, $2, $3, $4::jsonb)", [conversationId, seq, at, encode(message)]);
      return { conversationId, seq, at, message };
    });
  }

  async listTranscript(conversationId: string, after = 0): Promise<TranscriptEntry[]> {
    return (await this.q("SELECT * FROM transcript WHERE conversation_id = $1 AND seq > $2 ORDER BY seq", [conversationId, after])).map(toTranscript);
  }

  /**
   * Group commit, as the SQLite store's: the batches appended while the event loop is busy (many
   * conversations at once) go to PostgreSQL together, on the next turn of the loop, in a few statements
   * (GROUP_STATEMENT_SIZES; each one round trip and one commit, whose WAL flush its appends wait for
   * together: bench/engine/pgGroup.ts, bench/engine/run.ts throughput). Each caller's
   * promise settles once that statement has. A conversation is in a group once, and its next batch waits
   * until the group holding the earlier one has settled (one statement cannot update a row twice, and a
   * conversation's appends are stored in the order they were made). A group PostgreSQL refused (an error it
   * reported: nothing of it was stored) runs again as one statement per batch, so one bad batch never takes
   * another with it; a group whose connection failed fails each of its appends, as a statement of their own would.
   */
  append(conversationId: string, batch: CheckedAppendBatch, at: number): Promise<AppendedBatch | undefined>;
  append(conversationId: string, batch: AppendBatch, at: number): Promise<AppendedBatch>;
  append(conversationId: string, batch: AppendBatch & { resumeHash?: string }, at: number): Promise<AppendedBatch | undefined> {
    return new Promise<AppendedBatch | undefined>((resolve, reject) => {
      this.appendQueue.push({ conversationId, batch, at, resolve, reject });
      this.scheduleAppends();
    });
  }

  private appendQueue: QueuedAppend[] = [];
  /** Conversations with an append in a statement not yet settled (their next batches wait). */
  private readonly appending = new Set<string>();
  private appendsScheduled = false;

  private scheduleAppends(): void {
    if (this.appendsScheduled || this.appendQueue.length === 0) return;
    this.appendsScheduled = true;
    setImmediate(() => {
      this.appendsScheduled = false;
      this.commitAppends();
    });
  }

  private commitAppends(): void {
    const group: QueuedAppend[] = [];
    const waiting: QueuedAppend[] = [];
    const held = new Set<string>();
    for (const job of this.appendQueue) {
      const id = job.conversationId;
      if (group.length < GROUP_COMMIT_MAX && !held.has(id) && !this.appending.has(id)) {
        group.push(job);
        this.appending.add(id);
      } else {
        // This conversation's earlier batch is in this group or one in flight: this one keeps its place after it.
        waiting.push(job);
        held.add(id);
      }
    }
    this.appendQueue = waiting;
    for (let start = 0; start < group.length; ) {
      const size = GROUP_STATEMENT_SIZES.find((candidate) => candidate <= group.length - start)!;
      // By conversation id: two nodes' groups that share conversations lock their rows in the same order, so
      // they wait for each other rather than deadlock (a deadlock would only cost PostgreSQL's deadlock_timeout
      // and a run one statement per append).
      const part = group.slice(start, (start += size)).sort((a, b) => (a.conversationId < b.conversationId ? -1 : a.conversationId > b.conversationId ? 1 : 0));
      void this.commitGroup(part)
        .catch((error: unknown) => {
          for (const job of part) job.reject(error); // a job already settled keeps its result
        })
        .finally(() => {
          for (const job of part) this.appending.delete(job.conversationId);
          this.scheduleAppends();
        });
    }
    if (group.length === GROUP_COMMIT_MAX) this.scheduleAppends();
  }

  /**
   * A group's appends in one statement (a group of one too: one statement shape for every append). A batch
   * that cannot be encoded (a value JSON cannot hold) fails on its own before anything is sent; a group
   * PostgreSQL refused runs again one append per statement; one whose connection failed fails each append.
   */
  private async commitGroup(group: QueuedAppend[]): Promise<void> {
    const alone = (jobs: QueuedAppend[]) => Promise.all(jobs.map((job) => this.commitGroup([job]))).then(() => undefined);
    const statement = groupStatement(group);
    if (statement.unencodable.size > 0) {
      for (const [job, error] of statement.unencodable) job.reject(error);
      // The others each alone: no statement text of another size is prepared for this rare case.
      return alone(group.filter((job) => !statement.unencodable.has(job)));
    }
    let rows: Row[];
    try {
      rows = await this.q(statement.sql, statement.params);
    } catch (error) {
      if (group.length === 1 || !reportedByPostgres(error)) {
        for (const job of group) job.reject(error);
        return;
      }
      return alone(group);
    }
    group.forEach((job, index) => {
      const row = rows[0]?.[`r${index}`] as Row | null | undefined;
      if (row) job.resolve(appended(job.conversationId, statement.stored[index]!, job.at, row));
      else if (job.batch.resumeHash !== undefined) job.resolve(undefined);
      else job.reject(new Error(`append: no conversation ${job.conversationId}`));
    });
  }

  async finishTurn(conversationId: string, nodeId: string, seq: number): Promise<boolean> {
    const rows = await this.q("UPDATE conversations SET turn_node = NULL, turn_seq = NULL WHERE id = $1 AND turn_node = $2 AND turn_seq = $3 RETURNING id", [conversationId, nodeId, seq]);
    return rows.length === 1;
  }

  async listOwedTurns(nodeId: string, limit: number): Promise<OwedTurn[]> {
    return (await this.q("SELECT id, turn_node, turn_seq FROM conversations WHERE turn_node = $1 ORDER BY created_at, id LIMIT $2", [nodeId, limit])).map(toOwedTurn);
  }

  async claimOwedTurns(fromNodeId: string, toNodeId: string, limit: number): Promise<OwedTurn[]> {
    // Rows another node is claiming are skipped, and the condition is checked again on the locked row:
    // of two nodes taking over one lost node, each turn moves to exactly one.
    const rows = await this.q(
      `UPDATE conversations SET turn_node = $2
       WHERE id IN (SELECT id FROM conversations WHERE turn_node = $1 ORDER BY created_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) AND turn_node = $1
       RETURNING id, turn_node, turn_seq`,
      [fromNodeId, toNodeId, limit],
    );
    return rows.map(toOwedTurn);
  }

  async insertWrite(w: NewWrite): Promise<WriteRecord> {
    const proposed = await this.proposeWrite(w);
    if (!proposed.ok) throw new WriteBlockedError(w.conversationId);
    return proposed.write;
  }

  async proposeWrite(w: NewWrite, batch?: AppendBatch): Promise<ProposedWrite> {
    // One statement: the write, its first transition and the batch (the review card, the model's step).
    const params: unknown[] = [w.id, w.conversationId, w.turnId, w.callId, w.toolRef, w.modelName, w.packageVersionId, w.tool, encode(w.args), w.state, w.confirmation, w.ownerId, w.subjectId, w.createdAt];
    const appending = batch && appendCtes(batch, w.createdAt, params, "id = (SELECT conversation_id FROM w)");
    const ctes = [
      `w AS (INSERT INTO writes (id, conversation_id, turn_id, call_id, tool_ref, model_name, package_version_id, tool, args, state, confirmation, owner_id, subject_id, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $13, $14, $14) RETURNING *)`,
      `h AS (INSERT INTO write_transitions (write_id, at, from_state, to_state, note) SELECT id, $14, state, state, 'created' FROM w)`,
      ...(appending ? [appending.sql] : []),
    ];
    try {
      const rows = await this.q(`WITH ${ctes.join(", ")} SELECT (SELECT row_to_json(w) FROM w) AS w${batch ? ", (SELECT row_to_json(c) FROM c) AS c" : ""}`, params);
      const row = rows[0]!;
      return { ok: true, write: toWrite(row.w as Row), appended: appending && row.c ? appended(w.conversationId, appending.stored, w.createdAt, row.c as Row) : undefined };
    } catch (error) {
      // The unique index writes_one_unresolved: another write of the conversation is still unresolved.
      if ((error as { code?: string; constraint?: string }).code === "23505" && (error as { constraint?: string }).constraint === "writes_one_unresolved") {
        return { ok: false, code: "write_blocked", conversationId: w.conversationId };
      }
      throw error;
    }
  }

  async getWrite(id: string): Promise<WriteRecord | undefined> {
    if (!storableId(id)) return undefined;
    const rows = await this.q("SELECT * FROM writes WHERE id = $1", [id]);
    return rows[0] ? toWrite(rows[0]) : undefined;
  }

  async listWrites(conversationId: string): Promise<WriteRecord[]> {
    return (await this.q("SELECT * FROM writes WHERE conversation_id = $1 ORDER BY created_at, id", [conversationId])).map(toWrite);
  }

  async transitionWrite(id: string, expect: WriteExpectation, change: WriteChange, at: number): Promise<WriteRecord | undefined> {
    return (await this.changeWrite(id, expect, change, at))?.write;
  }

  async changeWrite(id: string, expect: WriteExpectation, change: WriteChange, at: number, batch?: AppendBatch, audit?: WriteAudit): Promise<ChangedWrite | undefined> {
    // One statement: the compare-and-set is the update's own condition (re-checked on the row it locks), and the
    // transition and the batch are inserted only from the row it returns, so all land or none.
    const columns = changeColumns(change, encode, (value) => value);
    columns.push(["updated_at", at]);
    const jsonColumns = new Set(["final_args", "result", "step_up"]);
    const params: unknown[] = columns.map(([, value]) => value);
    const p = (value: unknown) => `$${params.push(value)}`;
    const set = columns.map(([name], index) => `${name} = $${index + 1}${jsonColumns.has(name) ? "::jsonb" : ""}`).join(", ");
    const from = expect.states[0];
    const where = `id = ${p(id)} AND state = ${p(from)}${expect.checkCount !== undefined ? ` AND check_count = ${p(expect.checkCount)}` : ""}`;
    let appending: ReturnType<typeof appendCtes> | undefined;
    const ctes = [
      `w AS (UPDATE writes SET ${set} WHERE ${where} RETURNING *)`,
      `h AS (INSERT INTO write_transitions (write_id, at, from_state, to_state, note) SELECT id, ${p(at)}, ${p(from)}, ${p(change.state)}, ${p(change.note ?? null)} FROM w)`,
      ...(batch ? [(appending = appendCtes(batch, at, params, "id = (SELECT conversation_id FROM w)")).sql] : []),
      // The change's audit entry, in its conversation's workspace, only from the row the update returned.
      ...(audit
        ? [`au AS (INSERT INTO audit_events (workspace_id, at, actor, action, target, detail) SELECT workspace_id, ${p(at)}, ${p(audit.actor)}, ${p(audit.action)}, ${p(id)}, ${p(audit.detail ? encode(audit.detail) : null)}::jsonb FROM conversations WHERE id = (SELECT conversation_id FROM w))`]
        : []),
    ];
    const rows = await this.q(`WITH ${ctes.join(", ")} SELECT (SELECT row_to_json(w) FROM w) AS w${batch ? ", (SELECT row_to_json(c) FROM c) AS c" : ""}`, params);
    const row = rows[0];
    if (!row?.w) return undefined;
    const write = toWrite(row.w as Row);
    return { write, appended: appending && row.c ? appended(write.conversationId, appending.stored, at, row.c as Row) : undefined };
  }

  async listTransitions(writeId: string): Promise<WriteTransition[]> {
    return (await this.q("SELECT * FROM write_transitions WHERE write_id = $1 ORDER BY id", [writeId])).map(toTransition);
  }

  async claimDueChecks(now: number, leaseUntil: number, limit: number): Promise<WriteRecord[]> {
    const rows = await this.q(
      `UPDATE writes SET check_lease_until = $1
       WHERE id IN (
         SELECT id FROM writes
         WHERE state IN ('pending', 'unknown') AND follow_up = FALSE AND next_check_at IS NOT NULL AND next_check_at <= $2
           AND (check_lease_until IS NULL OR check_lease_until < $2)
         ORDER BY next_check_at LIMIT $3
         FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [leaseUntil, now, limit],
    );
    return rows.map(toWrite).sort((a, b) => (a.nextCheckAt ?? 0) - (b.nextCheckAt ?? 0));
  }

  async nextCheckAt(): Promise<number | null> {
    const rows = await this.q(
      "SELECT MIN(GREATEST(next_check_at, COALESCE(check_lease_until, 0))) AS at FROM writes WHERE state IN ('pending', 'unknown') AND follow_up = FALSE AND next_check_at IS NOT NULL",
    );
    const at = rows[0]?.at;
    return at === null || at === undefined ? null : Number(at);
  }

  async recoverRunning(nodeId: string, now: number, checkAt: number): Promise<WriteRecord[]> {
    return this.tx(async (client) => {
      const running = await this.q(
        `UPDATE writes SET state = 'unknown', result = $1::jsonb, check_count = 0, next_check_at = $2, check_lease_until = NULL, updated_at = $3
         WHERE state = 'running' AND node_id = $4 RETURNING *`,
        [encode({ outcome: "unknown", reason: RECOVERED_REASON }), checkAt, now, nodeId],
        client,
      );
      for (const row of running) {
        await client.query("INSERT INTO write_transitions (write_id, at, from_state, to_state, note) VALUES ($1, $2, 'running', 'unknown', 'recovered at startup')", [row.id, now]);
      }
      const confirmed = await this.q(
        `UPDATE writes SET state = 'not_applied', result = $1::jsonb, updated_at = $2 WHERE state = 'confirmed' AND node_id = $3 RETURNING *`,
        [encode({ outcome: "not_applied", message: NEVER_SENT_MESSAGE }), now, nodeId],
        client,
      );
      for (const row of confirmed) {
        await client.query(
          "INSERT INTO write_transitions (write_id, at, from_state, to_state, note) VALUES ($1, $2, 'confirmed', 'not_applied', 'recovered at startup: never sent')",
          [row.id, now],
        );
      }
      await client.query("UPDATE writes SET check_lease_until = NULL WHERE state IN ('pending', 'unknown') AND node_id = $1 AND check_lease_until IS NOT NULL", [nodeId]);
      return [...running, ...confirmed].map(toWrite);
    });
  }

  async listFollowUps(workspaceId?: string): Promise<WriteRecord[]> {
    if (workspaceId === undefined) return (await this.q("SELECT * FROM writes WHERE follow_up = TRUE ORDER BY updated_at, id")).map(toWrite);
    const rows = await this.q("SELECT w.* FROM writes w JOIN conversations c ON c.id = w.conversation_id WHERE w.follow_up = TRUE AND c.workspace_id = $1 ORDER BY w.updated_at, w.id", [workspaceId]);
    return rows.map(toWrite);
  }

  async claimInboundSource(sourceId: string, conversationId: string, at: number): Promise<boolean> {
    const rows = await this.q("INSERT INTO inbound_sources (source_id, conversation_id, at) VALUES ($1, $2, $3) ON CONFLICT (source_id) DO NOTHING RETURNING source_id", [sourceId, conversationId, at]);
    return rows.length === 1;
  }

  async pruneInboundSources(before: number): Promise<number> {
    return (await this.q("DELETE FROM inbound_sources WHERE at < $1 RETURNING source_id", [before])).length;
  }

  async putFile(file: StoredFile): Promise<void> {
    await this.q("INSERT INTO files (id, conversation_id, name, mime_type, size, bytes, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)", [
      file.id,
      file.conversationId,
      file.name,
      file.mimeType,
      file.size,
      Buffer.from(file.bytes),
      file.createdAt,
    ]);
  }

  async getFile(id: string): Promise<StoredFile | undefined> {
    const rows = await this.q("SELECT * FROM files WHERE id = $1", [id]);
    return rows[0] ? toFile(rows[0]) : undefined;
  }

  async listExpiredProposals(createdBefore: number, limit: number): Promise<WriteRecord[]> {
    return (await this.q("SELECT * FROM writes WHERE state = 'proposed' AND created_at <= $1 ORDER BY created_at, id LIMIT $2", [createdBefore, limit])).map(toWrite);
  }

  async listExpiredStepUps(updatedBefore: number, limit: number): Promise<WriteRecord[]> {
    return (await this.q("SELECT * FROM writes WHERE state = 'step_up_required' AND updated_at <= $1 ORDER BY updated_at, id LIMIT $2", [updatedBefore, limit])).map(toWrite);
  }

  async purgeFiles(createdBefore: number, now: number, limit: number): Promise<number> {
    const result = await this.pool.query(
      `UPDATE files SET bytes = '\\x'::bytea, purged_at = $1
       WHERE id IN (SELECT id FROM files WHERE purged_at IS NULL AND created_at <= $2 LIMIT $3 FOR UPDATE SKIP LOCKED)`,
      [now, createdBefore, limit],
    );
    return result.rowCount ?? 0;
  }

  async insertHandoffNotice(n: NewHandoffNotice): Promise<HandoffNotice> {
    const rows = await this.q(
      `INSERT INTO handoff_notices (id, conversation_id, queue, body, state, attempts, next_attempt_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'pending', 0, $5, $5, $5) RETURNING *`,
      [n.id, n.conversationId, n.queue, n.body, n.createdAt],
    );
    return toHandoffNotice(rows[0]!);
  }

  async claimDueHandoffNotices(now: number, leaseUntil: number, limit: number): Promise<HandoffNotice[]> {
    const rows = await this.q(
      `UPDATE handoff_notices SET lease_until = $1
       WHERE id IN (
         SELECT id FROM handoff_notices
         WHERE state = 'pending' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until < $2)
         ORDER BY next_attempt_at LIMIT $3
         FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [leaseUntil, now, limit],
    );
    return rows.map(toHandoffNotice);
  }

  async recordHandoffAttempt(id: string, expectAttempts: number, a: HandoffAttempt, at: number): Promise<HandoffNotice | undefined> {
    const rows = await this.q(
      `UPDATE handoff_notices SET state = $1, attempts = $2, next_attempt_at = $3, lease_until = NULL, last_status = $4, last_error = $5, updated_at = $6
       WHERE id = $7 AND attempts = $8 AND state = 'pending' RETURNING *`,
      [a.state, a.attempts, a.nextAttemptAt, a.lastStatus, a.lastError, at, id, expectAttempts],
    );
    return rows[0] ? toHandoffNotice(rows[0]) : undefined;
  }

  async listHandoffNotices(conversationId: string): Promise<HandoffNotice[]> {
    return (await this.q("SELECT * FROM handoff_notices WHERE conversation_id = $1 ORDER BY created_at, id", [conversationId])).map(toHandoffNotice);
  }

  async createConsoleSession(session: ConsoleSession): Promise<void> {
    await this.q("INSERT INTO console_sessions (id_hash, member, csrf, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $5)", [session.idHash, session.member, session.csrf, session.createdAt, session.lastSeenAt]);
  }

  async getConsoleSession(idHash: string): Promise<ConsoleSession | undefined> {
    const rows = await this.q("SELECT * FROM console_sessions WHERE id_hash = $1", [idHash]);
    return rows[0] ? toConsoleSession(rows[0]) : undefined;
  }

  async touchConsoleSession(idHash: string, at: number, idleSince: number): Promise<boolean> {
    return (await this.q("UPDATE console_sessions SET last_seen_at = $1 WHERE id_hash = $2 AND last_seen_at > $3 RETURNING id_hash", [at, idHash, idleSince])).length === 1;
  }

  async deleteConsoleSession(idHash: string): Promise<void> {
    await this.q("DELETE FROM console_sessions WHERE id_hash = $1", [idHash]);
  }

  async pruneConsoleSessions(before: number): Promise<number> {
    return (await this.q("DELETE FROM console_sessions WHERE last_seen_at < $1 RETURNING id_hash", [before])).length;
  }

  async countSignInAttempt(addressHash: string, at: number, windowMs: number): Promise<SignInCount> {
    const [row] = await this.q(SIGN_IN_COUNT_SQL, [addressHash, at, at - windowMs, at - windowMs, at]);
    return { count: Number(row!.count), since: Number(row!.since) };
  }

  async pruneSignInAttempts(before: number): Promise<number> {
    return (await this.q("DELETE FROM sign_in_attempts WHERE since < $1 RETURNING address_hash", [before])).length;
  }

  async listInbox(query: InboxQuery): Promise<InboxEntry[]> {
    // The page of conversations first, then the joins for those rows only (joining before the limit joins every row).
    const rows = await this.q(
      `SELECT ${conversationColumns("c")},
         lm.seq AS lm_seq, lm.at AS lm_at, lm.message AS lm_message, wt.at AS waiting_at, COALESCE(r.seq, 0) AS read_seq, ${inboxWriteCounts("TRUE")}
       FROM (SELECT * FROM conversations c WHERE c.workspace_id = $1 ${query.ids ? "AND c.id = ANY($4)" : ""} ORDER BY c.created_at DESC, c.id LIMIT $3) c
       LEFT JOIN events lm ON lm.conversation_id = c.id AND lm.seq = c.last_message_seq
       LEFT JOIN events wt ON wt.conversation_id = c.id AND wt.seq = c.waiting_seq
       LEFT JOIN member_reads r ON r.conversation_id = c.id AND r.member = $2
       ORDER BY c.created_at DESC, c.id`,
      [query.workspaceId, query.member, query.limit, ...(query.ids ? [[...query.ids]] : [])],
    );
    return rows.map(toInboxEntry);
  }

  async searchConversations(workspaceId: string, text: string, limit: number): Promise<SearchHit[]> {
    const plain = containsPattern(text);
    // Events are matched on their JSON text, where quotes and backslashes are escaped.
    const inJson = containsPattern(JSON.stringify(text).slice(1, -1));
    const [own, events] = await Promise.all([
      this.q(
        `SELECT c.id FROM conversations c WHERE c.workspace_id = $1 AND (c.id ILIKE $2 OR c.external_id ILIKE $2 OR c.subject ->> 'id' ILIKE $2 OR c.subject ->> 'ref' ILIKE $2
           OR EXISTS (SELECT 1 FROM writes w WHERE w.conversation_id = c.id AND (w.args::text ILIKE $3 OR w.final_args::text ILIKE $3)))
         ORDER BY c.created_at DESC, c.id LIMIT $4`,
        [workspaceId, plain, inJson, limit],
      ),
      this.q(
        `SELECT e.* FROM events e JOIN conversations c ON c.id = e.conversation_id
         WHERE c.workspace_id = $1 AND e.message::text ILIKE $2 ORDER BY c.created_at DESC, c.id, e.seq DESC LIMIT $3`,
        [workspaceId, inJson, limit * 10],
      ),
    ]);
    return [...own.map((row) => ({ conversationId: String(row.id) })), ...events.map((row) => ({ conversationId: String(row.conversation_id), event: toEvent(row) }))];
  }

  async markRead(conversationId: string, member: string, seq: number, at: number): Promise<void> {
    await this.q(
      "INSERT INTO member_reads (conversation_id, member, seq, at) VALUES ($1, $2, $3, $4) ON CONFLICT (conversation_id, member) DO UPDATE SET seq = excluded.seq, at = excluded.at WHERE excluded.seq > member_reads.seq",
      [conversationId, member, seq, at],
    );
  }

  async addTeamNote(note: TeamNote): Promise<void> {
    await this.q("INSERT INTO team_notes (id, conversation_id, member, text, at) VALUES ($1, $2, $3, $4, $5)", [note.id, note.conversationId, note.member, note.text, note.at]);
  }

  async listTeamNotes(conversationId: string): Promise<TeamNote[]> {
    return (await this.q("SELECT * FROM team_notes WHERE conversation_id = $1 ORDER BY at, id", [conversationId])).map(toTeamNote);
  }

  async setSecret(workspaceId: string, name: string, seal: (version: number) => SealedValue, actor: string, at: number): Promise<SecretMeta> {
    return this.tx(async (client) => {
      // The row lock (FOR UPDATE, or the insert's) orders two sets of one secret: each gets its own version.
      await this.q("INSERT INTO workspace_secrets (workspace_id, name, version, updated_at, updated_by) VALUES ($1, $2, 0, $3, $4) ON CONFLICT (workspace_id, name) DO NOTHING", [workspaceId, name, at, actor], client);
      const before = await this.q("SELECT version FROM workspace_secrets WHERE workspace_id = $1 AND name = $2 FOR UPDATE", [workspaceId, name], client);
      const version = Number(before[0]!.version) + 1;
      const sealed = seal(version);
      await this.q(
        "UPDATE workspace_secrets SET version = $3, key_id = $4, nonce = $5, ciphertext = $6, updated_at = $7, updated_by = $8 WHERE workspace_id = $1 AND name = $2",
        [workspaceId, name, version, sealed.keyId, Buffer.from(sealed.nonce), Buffer.from(sealed.ciphertext), at, actor],
        client,
      );
      await this.insertAudit({ workspaceId, at, actor, action: "secret.set", target: name, detail: { version } }, client);
      return { workspaceId, name, version, updatedAt: at, updatedBy: actor };
    });
  }

  async removeSecret(workspaceId: string, name: string, actor: string, at: number): Promise<boolean> {
    return this.tx(async (client) => {
      const rows = await this.q(
        `UPDATE workspace_secrets SET version = version + 1, key_id = NULL, nonce = NULL, ciphertext = NULL, updated_at = $1, updated_by = $2
         WHERE workspace_id = $3 AND name = $4 AND ciphertext IS NOT NULL RETURNING version`,
        [at, actor, workspaceId, name],
        client,
      );
      if (!rows[0]) return false;
      await this.insertAudit({ workspaceId, at, actor, action: "secret.removed", target: name, detail: { version: Number(rows[0].version) } }, client);
      return true;
    });
  }

  async listSecrets(workspaceId: string): Promise<SecretMeta[]> {
    return (await this.q("SELECT workspace_id, name, version, updated_at, updated_by FROM workspace_secrets WHERE workspace_id = $1 AND ciphertext IS NOT NULL ORDER BY name", [workspaceId])).map(toSecretMeta);
  }

  async readSecrets(workspaceId: string, names: readonly string[]): Promise<StoredSecret[]> {
    if (names.length === 0) return [];
    const rows = await this.q("SELECT * FROM workspace_secrets WHERE workspace_id = $1 AND ciphertext IS NOT NULL AND name = ANY($2::text[])", [workspaceId, [...names]]);
    return rows.map(toStoredSecret);
  }

  async listAllSecrets(): Promise<StoredSecret[]> {
    return (await this.q("SELECT * FROM workspace_secrets WHERE ciphertext IS NOT NULL ORDER BY workspace_id, name")).map(toStoredSecret);
  }

  async resealSecrets(reseal: (secret: StoredSecret) => SealedValue, actor: string, at: number): Promise<number> {
    return this.tx(async (client) => {
      const secrets = (await this.q("SELECT * FROM workspace_secrets WHERE ciphertext IS NOT NULL ORDER BY workspace_id, name FOR UPDATE", [], client)).map(toStoredSecret);
      const counts = new Map<string, number>();
      for (const secret of secrets) {
        const sealed = reseal(secret);
        await this.q("UPDATE workspace_secrets SET key_id = $1, nonce = $2, ciphertext = $3 WHERE workspace_id = $4 AND name = $5", [sealed.keyId, Buffer.from(sealed.nonce), Buffer.from(sealed.ciphertext), secret.workspaceId, secret.name], client);
        counts.set(secret.workspaceId, (counts.get(secret.workspaceId) ?? 0) + 1);
      }
      for (const [workspaceId, count] of counts) await this.insertAudit({ workspaceId, at, actor, action: "secrets.key_rotated", target: "*", detail: { secrets: count } }, client);
      return secrets.length;
    });
  }

  async appendAudit(entry: AuditEntry): Promise<AuditEvent> {
    return this.insertAudit(entry);
  }

  private async insertAudit(entry: AuditEntry, client?: pg.PoolClient): Promise<AuditEvent> {
    const rows = await this.q(
      "INSERT INTO audit_events (workspace_id, at, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5, $6::jsonb) RETURNING id",
      [entry.workspaceId, entry.at, entry.actor, entry.action, entry.target, entry.detail ? encode(entry.detail) : null],
      client,
    );
    return { id: Number(rows[0]!.id), ...entry };
  }

  async lastAudit(workspaceId: string, action: string, target: string): Promise<AuditEvent | undefined> {
    const rows = await this.q("SELECT * FROM audit_events WHERE workspace_id = $1 AND action = $2 AND target = $3 ORDER BY id DESC LIMIT 1", [workspaceId, action, target]);
    return rows[0] ? toAuditEvent(rows[0]) : undefined;
  }

  async listAudit(workspaceId: string, options: { after?: number; limit?: number } = {}): Promise<AuditEvent[]> {
    const rows = await this.q("SELECT * FROM audit_events WHERE workspace_id = $1 AND id > $2 ORDER BY id LIMIT $3", [workspaceId, options.after ?? 0, options.limit ?? 500]);
    return rows.map(toAuditEvent);
  }

  /** A transaction holding the workspace's member lock: one node or command at a time changes its members. */
  private membersTx<T>(workspaceId: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.tx(async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`caplo-members:${this.schema}:${workspaceId}`]);
      return fn(client);
    });
  }

  async syncTeamMembers(workspaceId: string, members: readonly { name: string; tokenSha256: string }[], actor: string, at: number): Promise<MembersSynced> {
    // Two nodes starting together audit a change once: each records under the workspace's member lock.
    return this.membersTx(workspaceId, async (client) => {
      const recorded = (await this.q("SELECT * FROM team_members WHERE workspace_id = $1", [workspaceId], client)).map(toRecordedMember);
      const conflicts = members.filter((member) => recorded.some((kept) => kept.source === "managed" && kept.name === member.name)).map((member) => member.name);
      if (conflicts.length > 0) return { ok: false as const, conflicts };
      const configured = recorded.filter((kept) => kept.source === "config");
      const changes = memberChanges(workspaceId, configured, members, actor, at);
      await this.q("DELETE FROM team_members WHERE workspace_id = $1 AND source = 'config'", [workspaceId], client);
      for (const member of members) {
        const kept = configured.find((candidate) => candidate.name === member.name && candidate.tokenSha256 === member.tokenSha256);
        await this.q("INSERT INTO team_members (workspace_id, name, token_sha256, added_at) VALUES ($1, $2, $3, $4)", [workspaceId, member.name, member.tokenSha256, kept?.addedAt ?? at], client);
      }
      for (const change of changes.filter(endsSessions)) await this.q("DELETE FROM console_sessions WHERE member = $1", [workspaceRef(workspaceId, change.target)], client);
      const events: AuditEvent[] = [];
      for (const entry of changes) events.push(await this.insertAudit(entry, client));
      return { ok: true as const, events };
    });
  }

  async addTeamMember(member: { workspaceId: string; name: string; tokenSha256: string }, actor: string, at: number): Promise<MemberAdded> {
    return this.membersTx(member.workspaceId, async (client) => {
      const added = await this.q(
        "INSERT INTO team_members (workspace_id, name, token_sha256, added_at, source, added_by) VALUES ($1, $2, $3, $4, 'managed', $5) ON CONFLICT (workspace_id, name) DO NOTHING RETURNING name",
        [member.workspaceId, member.name, member.tokenSha256, at, actor],
        client,
      );
      if (added.length === 0) return { ok: false as const, code: "member_exists" as const };
      return { ok: true as const, event: await this.insertAudit({ workspaceId: member.workspaceId, at, actor, action: "member.added", target: member.name, detail: { source: "managed" } }, client) };
    });
  }

  async removeTeamMember(workspaceId: string, name: string, actor: string, at: number): Promise<MemberRemoved> {
    return this.membersTx(workspaceId, async (client) => {
      const row = (await this.q("SELECT * FROM team_members WHERE workspace_id = $1 AND name = $2", [workspaceId, name], client))[0];
      if (!row) return { ok: false as const, code: "member_not_found" as const };
      if (toRecordedMember(row).source !== "managed") return { ok: false as const, code: "member_configured" as const };
      await this.q("DELETE FROM team_members WHERE workspace_id = $1 AND name = $2", [workspaceId, name], client);
      const sessionsEnded = (await this.q("DELETE FROM console_sessions WHERE member = $1 RETURNING id_hash", [workspaceRef(workspaceId, name)], client)).length;
      return { ok: true as const, sessionsEnded, event: await this.insertAudit({ workspaceId, at, actor, action: "member.removed", target: name, detail: { source: "managed", sessionsEnded } }, client) };
    });
  }

  async listTeamMembers(workspaceId: string): Promise<RecordedMember[]> {
    return (await this.q("SELECT * FROM team_members WHERE workspace_id = $1 ORDER BY name", [workspaceId])).map(toRecordedMember);
  }

  async findTeamMemberByToken(tokenSha256: string): Promise<RecordedMember | undefined> {
    const row = (await this.q("SELECT * FROM team_members WHERE token_sha256 = $1 AND source = 'managed' LIMIT 1", [tokenSha256]))[0];
    return row ? toRecordedMember(row) : undefined;
  }

  async getTeamMember(workspaceId: string, name: string): Promise<RecordedMember | undefined> {
    const row = (await this.q("SELECT * FROM team_members WHERE workspace_id = $1 AND name = $2 AND source = 'managed'", [workspaceId, name]))[0];
    return row ? toRecordedMember(row) : undefined;
  }

  async hasManagedMembers(): Promise<boolean> {
    return (await this.q("SELECT 1 FROM team_members WHERE source = 'managed' LIMIT 1")).length > 0;
  }
}
