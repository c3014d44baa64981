// The store's schema as numbered migrations, one list per dialect, applied in order by migrate.ts and
// recorded in schema_migrations. A migration is never edited once released: add the next number instead.
import type { Migration } from "./migrate.ts";

export type { Migration };

const tables = (json: string, bool: string, bigint: string) => `
CREATE TABLE conversations (
  id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  release_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  external_id TEXT,
  resume_hash TEXT UNIQUE,
  owner_id TEXT NOT NULL,
  subject ${json},
  handoff ${json},
  capabilities ${json} NOT NULL,
  created_at ${bigint} NOT NULL,
  last_seq INTEGER NOT NULL DEFAULT 0,
  last_transcript_seq INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX conversations_external ON conversations (agent, channel, external_id);
CREATE TABLE events (
  conversation_id TEXT NOT NULL REFERENCES conversations (id),
  seq INTEGER NOT NULL,
  at ${bigint} NOT NULL,
  message ${json} NOT NULL,
  PRIMARY KEY (conversation_id, seq)
);
CREATE TABLE transcript (
  conversation_id TEXT NOT NULL REFERENCES conversations (id),
  seq INTEGER NOT NULL,
  at ${bigint} NOT NULL,
  message ${json} NOT NULL,
  PRIMARY KEY (conversation_id, seq)
);
CREATE TABLE writes (
  id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL REFERENCES conversations (id),
  turn_id TEXT NOT NULL,
  call_id TEXT NOT NULL,
  tool_ref TEXT NOT NULL,
  model_name TEXT NOT NULL,
  package_version_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  args ${json} NOT NULL,
  final_args ${json},
  state TEXT NOT NULL,
  confirmation TEXT NOT NULL,
  owner_id TEXT NOT NULL,
  subject_id TEXT,
  idempotency_key TEXT UNIQUE,
  operation_ref TEXT,
  check_count INTEGER NOT NULL DEFAULT 0,
  next_check_at ${bigint},
  check_lease_until ${bigint},
  result ${json},
  step_up ${json},
  follow_up ${bool} NOT NULL DEFAULT ${bool === "BOOLEAN" ? "FALSE" : "0"},
  node_id TEXT,
  created_at ${bigint} NOT NULL,
  updated_at ${bigint} NOT NULL
);
CREATE INDEX writes_conversation ON writes (conversation_id, created_at);
CREATE INDEX writes_due ON writes (state, next_check_at);
CREATE TABLE write_transitions (
  id ${bigint === "BIGINT" ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"},
  write_id TEXT NOT NULL REFERENCES writes (id),
  at ${bigint} NOT NULL,
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL,
  note TEXT
);
CREATE INDEX write_transitions_write ON write_transitions (write_id, id);
`;

const files = (blob: string, bigint: string) => `
CREATE TABLE files (
  id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL REFERENCES conversations (id),
  name TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  size INTEGER NOT NULL,
  bytes ${blob} NOT NULL,
  created_at ${bigint} NOT NULL
);
CREATE INDEX files_conversation ON files (conversation_id);
`;

/** A customer's inbound event by its source id (whatsapp:SM…, messenger:m_…): accepted once, even when replayed. */
const inboundSources = (bigint: string) => `
CREATE TABLE inbound_sources (
  source_id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL REFERENCES conversations (id),
  at ${bigint} NOT NULL
);
CREATE INDEX inbound_sources_at ON inbound_sources (at);
`;

/** File retention (bytes purged, row kept), the proposal sweep's index and the handoff notices to the team's webhook. */
const retentionAndHandoff = (bigint: string) => `
ALTER TABLE files ADD COLUMN purged_at ${bigint};
CREATE INDEX files_created ON files (created_at);
CREATE INDEX writes_proposed ON writes (state, created_at);
CREATE TABLE handoff_notices (
  id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL REFERENCES conversations (id),
  queue TEXT NOT NULL,
  body TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at ${bigint},
  lease_until ${bigint},
  last_status INTEGER,
  last_error TEXT,
  created_at ${bigint} NOT NULL,
  updated_at ${bigint} NOT NULL
);
CREATE INDEX handoff_notices_due ON handoff_notices (state, next_attempt_at);
CREATE INDEX handoff_notices_conversation ON handoff_notices (conversation_id, created_at);
`;

/**
 * At most one unresolved write per conversation, enforced by the database: two nodes proposing in one
 * conversation at the same moment cannot both store a proposal (the engine's check alone would race).
 */
const oneUnresolvedWrite = `
CREATE UNIQUE INDEX writes_one_unresolved ON writes (conversation_id)
  WHERE state IN ('proposed', 'confirmed', 'running', 'pending', 'unknown', 'step_up_required');
`;

/**
 * A customer input whose turn has not finished is recorded on its conversation (the node that owes the turn
 * and the input's transcript seq), in the transaction that stores the input; the turn's end clears it. A
 * node restarting, or a survivor taking over a lost node, claims the owed turns (compare-and-set on the node)
 * and runs them again.
 */
const owedTurns = (bigint: string) => `
ALTER TABLE conversations ADD COLUMN turn_node TEXT;
ALTER TABLE conversations ADD COLUMN turn_seq ${bigint};
CREATE INDEX conversations_turn_node ON conversations (turn_node) WHERE turn_node IS NOT NULL;
`;

/**
 * Workspaces (docs/operators/workspaces.md): one server hosts several, each with its own agents, releases,
 * secrets, team members and conversations. A database from before has one workspace, `default`, which
 * every existing conversation joins (the column's default), so it upgrades in place. Rows kept under a
 * conversation (events, transcript, writes, files, notices) belong to the conversation's workspace. A
 * workspace secret's value is kept only encrypted (AES-256-GCM, secrets/secretBox.ts); removing one
 * keeps its row without a value, so its version keeps counting. The audit records who changed what.
 * SQLite cannot add a column that references another table with a non-null default, so the reference
 * from conversations to workspaces is PostgreSQL's only; the store writes only workspaces it knows.
 */
const workspaces = (blob: string, bigint: string, json: string, references: string) => `
CREATE TABLE workspaces (
  id TEXT PRIMARY KEY,
  created_at ${bigint} NOT NULL
);
INSERT INTO workspaces (id, created_at) VALUES ('default', 0);
ALTER TABLE conversations ADD COLUMN workspace_id TEXT NOT NULL DEFAULT 'default'${references};
DROP INDEX conversations_external;
CREATE INDEX conversations_external ON conversations (workspace_id, agent, channel, external_id);
CREATE INDEX conversations_workspace ON conversations (workspace_id, created_at);
CREATE TABLE workspace_secrets (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  key_id TEXT,
  nonce ${blob},
  ciphertext ${blob},
  updated_at ${bigint} NOT NULL,
  updated_by TEXT NOT NULL,
  PRIMARY KEY (workspace_id, name)
);
CREATE TABLE team_members (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  name TEXT NOT NULL,
  token_sha256 TEXT NOT NULL,
  added_at ${bigint} NOT NULL,
  PRIMARY KEY (workspace_id, name)
);
CREATE TABLE audit_events (
  id ${bigint === "BIGINT" ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"},
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  at ${bigint} NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  detail ${json}
);
CREATE INDEX audit_events_workspace ON audit_events (workspace_id, id);
`;

/**
 * The team console (server/src/console): members' sessions, kept by the hash of their cookie's id so any node
 * can check one and a stolen database gives no usable cookie; and the team's internal notes on a conversation,
 * kept apart from its events so no channel or widget ever sends one to the customer.
 */
const consoleTables = (bigint: string) => `
CREATE TABLE console_sessions (
  id_hash TEXT PRIMARY KEY,
  member TEXT NOT NULL,
  csrf TEXT NOT NULL,
  created_at ${bigint} NOT NULL,
  last_seen_at ${bigint} NOT NULL
);
CREATE INDEX console_sessions_seen ON console_sessions (last_seen_at);
CREATE TABLE team_notes (
  id TEXT PRIMARY KEY,
  conversation_id TEXT NOT NULL REFERENCES conversations (id),
  member TEXT NOT NULL,
  text TEXT NOT NULL,
  at ${bigint} NOT NULL
);
CREATE INDEX team_notes_conversation ON team_notes (conversation_id, at);
`;

/**
 * Visitors' ratings of the agent's replies, one per event (a later rating replaces it): kept beside the
 * append-only events, keyed by the event they rate.
 */
const eventRatings = (bigint: string) => `
CREATE TABLE event_ratings (
  conversation_id TEXT NOT NULL,
  seq ${bigint} NOT NULL,
  rating TEXT NOT NULL,
  at ${bigint} NOT NULL,
  PRIMARY KEY (conversation_id, seq),
  FOREIGN KEY (conversation_id, seq) REFERENCES events (conversation_id, seq)
);
`;

/**
 * The console's sign-in attempts per client address (by its SHA-256, console/sessions.ts), counted in the store
 * so the limit holds across every node behind a load balancer: one row per address and window.
 */
const signInAttempts = (bigint: string) => `
CREATE TABLE sign_in_attempts (
  address_hash TEXT PRIMARY KEY,
  since ${bigint} NOT NULL,
  count INTEGER NOT NULL
);
CREATE INDEX sign_in_attempts_since ON sign_in_attempts (since);
`;

/**
 * Team members managed in the store (`caplo member add|rm`): besides the members each node's CAPLO_TEAM_MEMBERS
 * configures (recorded at its start, source 'config'), members kept here (source 'managed', with who added
 * them), found by their token's SHA-256 by every node at each request. The audit is searched by action and
 * target (the last publish of an agent).
 */
const managedMembers = `
ALTER TABLE team_members ADD COLUMN source TEXT NOT NULL DEFAULT 'config';
ALTER TABLE team_members ADD COLUMN added_by TEXT;
CREATE INDEX team_members_token ON team_members (token_sha256);
CREATE INDEX audit_events_target ON audit_events (workspace_id, action, target, id);
`;

/**
 * The team inbox (store/inboxSummary.ts): each conversation's last shown message and first unanswered customer
 * message, kept as seqs by every append (the inbox joins the two events by primary key instead of reading every
 * event), filled here from the events already stored; and what each member has read (member_reads), so unread
 * marks follow a member to any browser and node. `field(alias, name)` reads a top-level field of the JSON of the event row `alias`.
 */
const inboxSummary = (bigint: string, field: (alias: string, name: string) => string) => `
ALTER TABLE conversations ADD COLUMN last_message_seq ${bigint};
ALTER TABLE conversations ADD COLUMN waiting_seq ${bigint};
UPDATE conversations SET last_message_seq = (
  SELECT MAX(e.seq) FROM events e WHERE e.conversation_id = conversations.id AND ${field("e", "type")} IN ('text', 'handoff', 'outcome'));
UPDATE conversations SET waiting_seq = (
  SELECT MIN(e.seq) FROM events e WHERE e.conversation_id = conversations.id AND ${field("e", "type")} = 'text' AND ${field("e", "from")} = 'customer'
    AND e.seq > COALESCE((SELECT MAX(a.seq) FROM events a WHERE a.conversation_id = conversations.id AND ${field("a", "type")} <> 'progress'
      AND NOT (${field("a", "type")} = 'text' AND ${field("a", "from")} = 'customer')), 0));
CREATE TABLE member_reads (
  conversation_id TEXT NOT NULL REFERENCES conversations (id),
  member TEXT NOT NULL,
  seq ${bigint} NOT NULL,
  at ${bigint} NOT NULL,
  PRIMARY KEY (conversation_id, member)
);
`;

export const SQLITE_MIGRATIONS: Migration[] = [
  { version: 1, name: "conversations, events, transcript, write ledger", sql: tables("TEXT", "INTEGER", "INTEGER") },
  { version: 2, name: "files delivered to customers", sql: files("BLOB", "INTEGER") },
  { version: 3, name: "inbound source ids accepted once", sql: inboundSources("INTEGER") },
  { version: 4, name: "file retention, proposal sweep, handoff notices", sql: retentionAndHandoff("INTEGER") },
  { version: 5, name: "one unresolved write per conversation", sql: oneUnresolvedWrite },
  { version: 6, name: "turns owed to customer inputs", sql: owedTurns("INTEGER") },
  { version: 7, name: "workspaces, workspace secrets, team members, audit", sql: workspaces("BLOB", "INTEGER", "TEXT", "") },
  { version: 8, name: "console sessions and team notes", sql: consoleTables("INTEGER") },
  { version: 9, name: "ratings of the agent's replies", sql: eventRatings("INTEGER") },
  { version: 10, name: "console sign-in attempts per address", sql: signInAttempts("INTEGER") },
  { version: 11, name: "team members managed in the store", sql: managedMembers },
  { version: 12, name: "inbox summaries and members' reads", sql: inboxSummary("INTEGER", (alias, name) => `json_extract(${alias}.message, '$.${name}')`) },
];
export const POSTGRES_MIGRATIONS: Migration[] = [
  { version: 1, name: "conversations, events, transcript, write ledger", sql: tables("JSONB", "BOOLEAN", "BIGINT") },
  { version: 2, name: "files delivered to customers", sql: files("BYTEA", "BIGINT") },
  { version: 3, name: "inbound source ids accepted once", sql: inboundSources("BIGINT") },
  { version: 4, name: "file retention, proposal sweep, handoff notices", sql: retentionAndHandoff("BIGINT") },
  { version: 5, name: "one unresolved write per conversation", sql: oneUnresolvedWrite },
  { version: 6, name: "turns owed to customer inputs", sql: owedTurns("BIGINT") },
  { version: 7, name: "workspaces, workspace secrets, team members, audit", sql: workspaces("BYTEA", "BIGINT", "JSONB", " REFERENCES workspaces (id)") },
  { version: 8, name: "console sessions and team notes", sql: consoleTables("BIGINT") },
  { version: 9, name: "ratings of the agent's replies", sql: eventRatings("BIGINT") },
  { version: 10, name: "console sign-in attempts per address", sql: signInAttempts("BIGINT") },
  { version: 11, name: "team members managed in the store", sql: managedMembers },
  { version: 12, name: "inbox summaries and members' reads", sql: inboxSummary("BIGINT", (alias, name) => `(${alias}.message ->> '${name}')`) },
];
