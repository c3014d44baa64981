// Row mapping shared by the SQLite and PostgreSQL stores: database rows in, typed records out.
// SQLite returns JSON as text and integers as numbers; PostgreSQL returns JSONB parsed and BIGINT as text.
import { channelCapabilitiesSchema, outboundSchema, type CallSubject, type ChannelCapabilities, type ChannelKind, type StepUp } from "@caplo/shared";
import type { ModelMessage } from "../model/model.ts";
import type {
  ConsoleSession,
  AuditEntry,
  AuditEvent,
  ConversationRecord,
  RecordedMember,
  SecretMeta,
  StoredSecret,
  HandoffNotice,
  HandoffNoticeState,
  HandoffState,
  InboxEntry,
  OwedTurn,
  StoredEvent,
  StoredFile,
  TeamNote,
  TranscriptEntry,
  WriteChange,
  WriteRecord,
  WriteResult,
  WriteState,
  WriteTransition,
} from "./store.ts";

export type Row = Record<string, unknown>;

export function json<T>(value: unknown): T | null {
  if (value === null || value === undefined) return null;
  return (typeof value === "string" ? JSON.parse(value) : value) as T;
}

function num(value: unknown): number {
  return typeof value === "number" ? value : Number(value);
}

function numOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : num(value);
}

function str(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

// Capabilities are one of a handful of JSON texts: validated once per text, a fresh copy per record.
const CAPABILITIES_KEPT = 64;
const capabilitiesByText = new Map<string, ChannelCapabilities>();

function capabilitiesOf(value: unknown): ChannelCapabilities {
  if (typeof value !== "string") return channelCapabilitiesSchema.parse(value);
  let parsed = capabilitiesByText.get(value);
  if (!parsed) {
    parsed = channelCapabilitiesSchema.parse(JSON.parse(value));
    if (capabilitiesByText.size >= CAPABILITIES_KEPT) capabilitiesByText.clear();
    capabilitiesByText.set(value, parsed);
  }
  return { ...parsed };
}

export function toConversation(row: Row): ConversationRecord {
  return {
    id: String(row.id),
    workspaceId: String(row.workspace_id),
    agent: String(row.agent),
    releaseId: String(row.release_id),
    channel: String(row.channel) as ChannelKind,
    externalId: str(row.external_id),
    resumeHash: str(row.resume_hash),
    ownerId: String(row.owner_id),
    subject: json<CallSubject>(row.subject),
    handoff: json<HandoffState>(row.handoff),
    capabilities: capabilitiesOf(row.capabilities),
    createdAt: num(row.created_at),
    lastSeq: num(row.last_seq),
    lastTranscriptSeq: num(row.last_transcript_seq),
    owedTurn: row.turn_node === null || row.turn_node === undefined ? null : { nodeId: String(row.turn_node), seq: num(row.turn_seq) },
  };
}

export function toOwedTurn(row: Row): OwedTurn {
  return { conversationId: String(row.id), nodeId: String(row.turn_node), seq: num(row.turn_seq) };
}

export function toEvent(row: Row): StoredEvent {
  return {
    conversationId: String(row.conversation_id),
    seq: num(row.seq),
    at: num(row.at),
    message: outboundSchema.parse(json(row.message)),
  };
}

export function toTranscript(row: Row): TranscriptEntry {
  return { conversationId: String(row.conversation_id), seq: num(row.seq), at: num(row.at), message: json<ModelMessage>(row.message)! };
}

export function toWrite(row: Row): WriteRecord {
  return {
    id: String(row.id),
    conversationId: String(row.conversation_id),
    turnId: String(row.turn_id),
    callId: String(row.call_id),
    toolRef: String(row.tool_ref),
    modelName: String(row.model_name),
    packageVersionId: String(row.package_version_id),
    tool: String(row.tool),
    args: json<Record<string, unknown>>(row.args) ?? {},
    finalArgs: json<Record<string, unknown>>(row.final_args),
    state: String(row.state) as WriteState,
    confirmation: row.confirmation === "none" ? "none" : "required",
    ownerId: String(row.owner_id),
    subjectId: str(row.subject_id),
    idempotencyKey: str(row.idempotency_key),
    operationRef: str(row.operation_ref),
    checkCount: num(row.check_count),
    nextCheckAt: numOrNull(row.next_check_at),
    checkLeaseUntil: numOrNull(row.check_lease_until),
    result: json<WriteResult>(row.result),
    stepUp: json<StepUp>(row.step_up),
    followUp: row.follow_up === true || row.follow_up === 1,
    nodeId: str(row.node_id),
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

export function toFile(row: Row): StoredFile {
  const bytes = row.bytes as Buffer;
  return {
    id: String(row.id),
    conversationId: String(row.conversation_id),
    name: String(row.name),
    mimeType: String(row.mime_type),
    size: num(row.size),
    bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    createdAt: num(row.created_at),
    purgedAt: numOrNull(row.purged_at),
  };
}

export function toHandoffNotice(row: Row): HandoffNotice {
  return {
    id: String(row.id),
    conversationId: String(row.conversation_id),
    queue: String(row.queue),
    body: String(row.body),
    state: String(row.state) as HandoffNoticeState,
    attempts: num(row.attempts),
    nextAttemptAt: numOrNull(row.next_attempt_at),
    leaseUntil: numOrNull(row.lease_until),
    lastStatus: numOrNull(row.last_status),
    lastError: str(row.last_error),
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

export function toTransition(row: Row): WriteTransition {
  return {
    writeId: String(row.write_id),
    at: num(row.at),
    from: String(row.from_state) as WriteState,
    to: String(row.to_state) as WriteState,
    note: str(row.note),
  };
}

/** The columns a change sets, in a fixed order, with values ready for the driver. */
export function changeColumns(change: WriteChange, encodeJson: (value: unknown) => unknown, encodeBool: (value: boolean) => unknown): [string, unknown][] {
  const columns: [string, unknown][] = [["state", change.state]];
  if (change.finalArgs !== undefined) columns.push(["final_args", encodeJson(change.finalArgs)]);
  if (change.idempotencyKey !== undefined) columns.push(["idempotency_key", change.idempotencyKey]);
  if (change.operationRef !== undefined) columns.push(["operation_ref", change.operationRef]);
  if (change.checkCount !== undefined) columns.push(["check_count", change.checkCount]);
  if (change.nextCheckAt !== undefined) columns.push(["next_check_at", change.nextCheckAt]);
  if (change.checkLeaseUntil !== undefined) columns.push(["check_lease_until", change.checkLeaseUntil]);
  if (change.result !== undefined) columns.push(["result", change.result === null ? null : encodeJson(change.result)]);
  if (change.stepUp !== undefined) columns.push(["step_up", change.stepUp === null ? null : encodeJson(change.stepUp)]);
  if (change.followUp !== undefined) columns.push(["follow_up", encodeBool(change.followUp)]);
  if (change.nodeId !== undefined) columns.push(["node_id", change.nodeId]);
  return columns;
}

export const RECOVERED_REASON = "The server stopped while the write was running; it may or may not have happened.";
export const NEVER_SENT_MESSAGE = "The server stopped before the request was sent; nothing was changed.";

export function toConsoleSession(row: Row): ConsoleSession {
  return { idHash: String(row.id_hash), member: String(row.member), csrf: String(row.csrf), createdAt: num(row.created_at), lastSeenAt: num(row.last_seen_at) };
}

export function toTeamNote(row: Row): TeamNote {
  return { id: String(row.id), conversationId: String(row.conversation_id), member: String(row.member), text: String(row.text), at: num(row.at) };
}

const bytesOf = (value: unknown): Uint8Array => {
  const buffer = value as Buffer;
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
};

export function toSecretMeta(row: Row): SecretMeta {
  return { workspaceId: String(row.workspace_id), name: String(row.name), version: num(row.version), updatedAt: num(row.updated_at), updatedBy: String(row.updated_by) };
}

export function toStoredSecret(row: Row): StoredSecret {
  return { ...toSecretMeta(row), sealed: { keyId: String(row.key_id), nonce: bytesOf(row.nonce), ciphertext: bytesOf(row.ciphertext) } };
}

export function toAuditEvent(row: Row): AuditEvent {
  const detail = json<Record<string, unknown>>(row.detail);
  return {
    id: num(row.id),
    workspaceId: String(row.workspace_id),
    at: num(row.at),
    actor: String(row.actor),
    action: String(row.action),
    target: String(row.target),
    ...(detail && { detail }),
  };
}

export function toRecordedMember(row: Row): RecordedMember {
  return {
    workspaceId: String(row.workspace_id),
    name: String(row.name),
    tokenSha256: String(row.token_sha256),
    addedAt: num(row.added_at),
    source: row.source === "managed" ? "managed" : "config",
    addedBy: row.added_by === null || row.added_by === undefined ? null : String(row.added_by),
  };
}

const CONFIGURED = { source: "config" };

/** Whose console sessions end with a member change: a member removed, or given another token. */
export const endsSessions = (entry: AuditEntry) => entry.action === "member.removed" || entry.action === "member.token_changed";

/** What changed between the members last recorded and the ones configured now, as audit entries (no token, no hash). */
export function memberChanges(workspaceId: string, recorded: readonly RecordedMember[], configured: readonly { name: string; tokenSha256: string }[], actor: string, at: number): AuditEntry[] {
  const entries: AuditEntry[] = [];
  for (const member of configured) {
    const before = recorded.find((candidate) => candidate.name === member.name);
    if (!before) entries.push({ workspaceId, at, actor, action: "member.added", target: member.name, detail: CONFIGURED });
    else if (before.tokenSha256 !== member.tokenSha256) entries.push({ workspaceId, at, actor, action: "member.token_changed", target: member.name, detail: CONFIGURED });
  }
  for (const before of recorded) {
    if (!configured.some((member) => member.name === before.name)) entries.push({ workspaceId, at, actor, action: "member.removed", target: before.name, detail: CONFIGURED });
  }
  return entries;
}

/**
 * Counts a sign-in attempt in one statement on both stores ($1 address hash, $2 now, $3 and $4 now minus the
 * window, $5 now; each once and in order, so SQLite takes them as `?`): the first attempt of an address, or the
 * first after its window ended, starts a window at 1; any other adds one. Returns the count and the window's start.
 */
export const SIGN_IN_COUNT_SQL = `INSERT INTO sign_in_attempts (address_hash, since, count) VALUES ($1, $2, 1)
  ON CONFLICT (address_hash) DO UPDATE SET
    count = CASE WHEN sign_in_attempts.since <= $3 THEN 1 ELSE sign_in_attempts.count + 1 END,
    since = CASE WHEN sign_in_attempts.since <= $4 THEN $5 ELSE sign_in_attempts.since END
  RETURNING count, since`;

/**
 * An inbox row: the conversation's columns, its last shown event (lm_seq, lm_at, lm_message), the time of its first
 * unanswered customer message (waiting_at), the counts of its unresolved and follow-up writes and the member's read seq.
 */
export function toInboxEntry(row: Row): InboxEntry {
  return {
    conversation: toConversation(row),
    lastMessage: row.lm_seq === null || row.lm_seq === undefined ? null : toEvent({ conversation_id: row.id, seq: row.lm_seq, at: row.lm_at, message: row.lm_message }),
    waitingSince: numOrNull(row.waiting_at),
    unresolvedWrites: num(row.unresolved_writes),
    followUps: num(row.follow_ups),
    readSeq: num(row.read_seq),
  };
}

/** `text` as a LIKE pattern matching it anywhere (`\` escapes %, _ and itself: ESCAPE '\'). */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The inbox's write counts of conversation c (both dialects; `yes` is the dialect's true). */
export const inboxWriteCounts = (yes: string) => `(SELECT COUNT(*) FROM writes w WHERE w.conversation_id = c.id AND w.state IN ('pending', 'unknown')) AS unresolved_writes,
  (SELECT COUNT(*) FROM writes w WHERE w.conversation_id = c.id AND w.follow_up = ${yes}) AS follow_ups`;
