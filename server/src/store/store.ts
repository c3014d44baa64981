// The Store interface: append-only conversation events, the model transcript and the write ledger.
// Every change is one transaction, committed before the engine acts on it; ledger transitions are
// conditional (compare-and-set on the current state), so two confirms of one proposal run it once.
import type { CallSubject, ChannelCapabilities, ChannelKind, Outbound, Rating, StepUp } from "@caplo/shared";
import type { ModelMessage } from "../model/model.ts";
import type { NewWrite, WriteChange, WriteExpectation, WriteRecord, WriteTransition } from "../engine/ledger.ts";

// The ledger's types are the engine's (engine/ledger.ts); the store keeps them and re-exports them for its users.
export { CHECKABLE_WRITE_STATES, UNRESOLVED_WRITE_STATES, WRITE_STATES } from "../engine/ledger.ts";
export type { NewWrite, WriteChange, WriteExpectation, WriteRecord, WriteResult, WriteState, WriteTransition } from "../engine/ledger.ts";

/**
 * insertWrite's refusal while another write of the conversation is unresolved (UNRESOLVED_WRITE_STATES): the
 * database holds at most one, so two nodes proposing in one conversation at once store one proposal.
 */
export class WriteBlockedError extends Error {
  readonly code = "write_blocked";
  readonly conversationId: string;
  constructor(conversationId: string) {
    super(`conversation ${conversationId} already has an unresolved write`);
    this.conversationId = conversationId;
    this.name = "WriteBlockedError";
  }
}
export type HandoffState = {
  state: "requested" | "taken";
  queue?: string;
  /** The team member holding the conversation (state taken). */
  member?: string;
  at: number;
};

export type ConversationRecord = {
  id: string;
  /** The workspace the conversation belongs to (its agent's); `default` on a server without workspaces. */
  workspaceId: string;
  agent: string;
  releaseId: string;
  channel: ChannelKind;
  /** The channel's customer id for messaging apps (for example whatsapp:+15551234567). */
  externalId: string | null;
  /** sha256 hex of the widget's resume token; the token itself is never stored. */
  resumeHash: string | null;
  /** The connection owner: whoever holds the resume token (or the channel identity). */
  ownerId: string;
  subject: CallSubject | null;
  handoff: HandoffState | null;
  capabilities: ChannelCapabilities;
  createdAt: number;
  lastSeq: number;
  /** The seq of the last transcript entry (0 for none): tells a cached transcript whether it is current. */
  lastTranscriptSeq: number;
  /** The turn owed to the latest customer input, while it has not finished (AppendBatch.owedBy). */
  owedTurn: { nodeId: string; seq: number } | null;
};

export type NewConversation = Omit<ConversationRecord, "lastSeq" | "lastTranscriptSeq" | "subject" | "handoff" | "owedTurn"> & {
  subject?: CallSubject | null;
};

export type StoredEvent = { conversationId: string; seq: number; at: number; message: Outbound };
/** A visitor's rating of the event `seq` (one of the agent's replies), as it stands: the latest one given. */
export type EventRating = { seq: number; rating: Rating; at: number };
export type RatingCounts = { up: number; down: number };
export type TranscriptEntry = { conversationId: string; seq: number; at: number; message: ModelMessage };

/**
 * Events and transcript entries of one conversation appended together (one step of a turn). `owedBy`: the
 * batch's last transcript entry is a customer input that owes a turn, run by that node; the conversation
 * records the owed turn in the same transaction (replacing an earlier one), until the turn finishes.
 * `finish`: this batch is the turn's last step; the owed turn is cleared in the same statement if it is
 * still that one, owed by that node (what `finishTurn` does alone), so a turn whose answer is stored is
 * never owed again. A batch may hold only `finish`. A CheckedAppendBatch is a widget customer's input,
 * stored only if the conversation's resume token hash is still its `resumeHash` (checked in the same
 * statement, so nothing a replaced token sends is ever stored).
 */
export type AppendBatch = { events?: readonly Outbound[]; transcript?: readonly ModelMessage[]; owedBy?: string; finish?: { nodeId: string; seq: number } };
/** A batch stored only while the conversation's resume hash is still `resumeHash` (a widget customer's input). */
export type CheckedAppendBatch = AppendBatch & { resumeHash: string };

/** A customer input whose turn has not finished: the node that owes it, and the input's transcript seq. */
export type OwedTurn = { conversationId: string; nodeId: string; seq: number };
/** What a batch stored, in order, and the conversation as it stands right after it (same transaction). */
export type AppendedBatch = { conversation: ConversationRecord; events: StoredEvent[]; transcript: TranscriptEntry[] };

/** A transition that landed: the write as it now is, and what was appended with it in the same transaction. */
export type ChangedWrite = { write: WriteRecord; appended: AppendedBatch | undefined };
/** A new write stored with its first transition and its batch, or refused because another write of the conversation is unresolved. */
export type ProposedWrite = { ok: true; write: WriteRecord; appended: AppendedBatch | undefined } | { ok: false; code: "write_blocked"; conversationId: string };

/**
 * A file a read tool returned, kept for the customer to download (the model never sees its bytes).
 * After the retention period its bytes are purged (`purgedAt` set, `bytes` empty); the row and the event stay.
 */
export type StoredFile = {
  id: string;
  conversationId: string;
  name: string;
  mimeType: string;
  size: number;
  bytes: Uint8Array;
  createdAt: number;
  purgedAt?: number | null;
};

/** Where a handoff notice to the team's webhook stands (docs/operators/team-api.md). */
export type HandoffNoticeState = "pending" | "delivered" | "failed";

/** A handoff notice for the team's webhook: stored before it is sent, claimed by one node per attempt. */
export type HandoffNotice = {
  id: string;
  conversationId: string;
  queue: string;
  /** The exact JSON body every attempt sends (and signs). */
  body: string;
  state: HandoffNoticeState;
  attempts: number;
  nextAttemptAt: number | null;
  leaseUntil: number | null;
  /** The last attempt's HTTP status, if it got an answer. */
  lastStatus: number | null;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
};
export type NewHandoffNotice = Pick<HandoffNotice, "id" | "conversationId" | "queue" | "body" | "createdAt">;
/** What one delivery attempt changes; only the attempt that holds `attempts` as read may record it. */
export type HandoffAttempt = Pick<HandoffNotice, "state" | "nextAttemptAt" | "lastStatus" | "lastError"> & { attempts: number };

/** A team console session: the member it signs in and its CSRF token, found by the SHA-256 of the cookie's id. */
export type ConsoleSession = { idHash: string; member: string; csrf: string; createdAt: number; lastSeenAt: number };
/** Sign-in attempts from one address in its current window: how many so far (this one included) and when the window began. */
export type SignInCount = { count: number; since: number };
/** The part of the store the team console's sessions use (console/sessions.ts). */
export type ConsoleSessionStore = Pick<
  Store,
  "createConsoleSession" | "getConsoleSession" | "touchConsoleSession" | "deleteConsoleSession" | "pruneConsoleSessions" | "countSignInAttempt" | "pruneSignInAttempts"
>;
/**
 * A conversation as the team inbox lists it, read in one query (store/inboxSummary.ts): its last shown message,
 * since when the customer has waited for an answer (their first unanswered message), its writes still pending or
 * unknown and those waiting for a follow-up, and the last seq the asking member has read (0: none).
 */
export type InboxEntry = { conversation: ConversationRecord; lastMessage: StoredEvent | null; waitingSince: number | null; unresolvedWrites: number; followUps: number; readSeq: number };
/** The inbox of one workspace as `member` sees it, newest conversations first; `ids`: only these. */
export type InboxQuery = { workspaceId: string; member: string; limit: number; ids?: readonly string[] };
/**
 * A conversation a search may match: on its own id, customer or a write's arguments (`event` undefined), or an
 * event whose stored JSON contains the text, for the caller to check the event's words (`event`).
 */
export type SearchHit = { conversationId: string; event?: StoredEvent };
/**
 * The part of the store the team inbox uses (console/consoleApi.ts): its events are read from the store itself,
 * never a node's memory of recent events, which does not hear another node's appends.
 */
export type ConsoleInboxPort = Pick<Store, "listInbox" | "searchConversations" | "markRead" | "listEvents">;
/** A team member's internal note on a conversation: shown to the team only, never sent to the customer. */
export type TeamNote = { id: string; conversationId: string; member: string; text: string; at: number };
/** A workspace secret's value as kept: AES-256-GCM under the operator's key `keyId` (secrets/secretBox.ts), never in the clear. */
export type SealedValue = { keyId: string; nonce: Uint8Array; ciphertext: Uint8Array };
/** What is known of a secret without its value: listed by `caplo secret list`. */
export type SecretMeta = { workspaceId: string; name: string; version: number; updatedAt: number; updatedBy: string };
export type StoredSecret = SecretMeta & { sealed: SealedValue };
/** One recorded change (secrets, members, releases, follow-up outcomes): who did what, when, in which workspace. */
export type AuditEntry = { workspaceId: string; at: number; actor: string; action: string; target: string; detail?: Record<string, unknown> };
export type AuditEvent = AuditEntry & { id: number };
/**
 * The audit entry a write's change carries (a follow-up listed or resolved): stored in the change's own
 * transaction, only if the change lands, in the write's conversation's workspace, at the change's time, with
 * the write's id as its target.
 */
export type WriteAudit = Pick<AuditEntry, "actor" | "action" | "detail">;
/**
 * Where a team member comes from: `config`, a node's CAPLO_TEAM_MEMBERS (recorded at its start); `managed`,
 * added with `caplo member add` and kept in the store (every node sees a change at its next request).
 */
export type MemberSource = "config" | "managed";
/** A team member as recorded: the SHA-256 (hex) of their token, never the token; who added a managed one. */
export type RecordedMember = { workspaceId: string; name: string; tokenSha256: string; addedAt: number; source: MemberSource; addedBy: string | null };
/** A managed member added (with its audit entry), or why not. */
export type MemberAdded = { ok: true; event: AuditEvent } | { ok: false; code: "member_exists" };
/** A managed member removed (its console sessions ended, its audit entry kept), or why not. */
export type MemberRemoved = { ok: true; event: AuditEvent; sessionsEnded: number } | { ok: false; code: "member_not_found" | "member_configured" };
/** The configured members recorded (what changed, audited), or the configured names a managed member already has. */
export type MembersSynced = { ok: true; events: AuditEvent[] } | { ok: false; conflicts: string[] };


export interface Store {
  /** Which implementation, for logs: sqlite or postgres. */
  readonly kind: "sqlite" | "postgres";
  /** Apply pending migrations (idempotent). */
  migrate(): Promise<void>;
  /** Readiness: the store answers. */
  ping(): Promise<boolean>;
  close(): Promise<void>;

  /** Record a workspace (idempotent): a conversation, secret or member names only a workspace that exists. */
  ensureWorkspace(id: string, at: number): Promise<void>;
  listWorkspaces(): Promise<string[]>;

  createConversation(conversation: NewConversation): Promise<ConversationRecord>;
  getConversation(id: string): Promise<ConversationRecord | undefined>;
  /** The last event seq of each of these conversations that exists (one query: the event bus's poll of the store). */
  latestSeqs(ids: readonly string[]): Promise<Map<string, number>>;
  findConversationByResume(resumeHash: string): Promise<ConversationRecord | undefined>;
  /** Replace the conversation's resume hash if it is still `from` (compare-and-set); false when it was not. */
  rotateResumeHash(id: string, from: string, to: string): Promise<boolean>;
  findConversationByExternal(agent: string, channel: ChannelKind, externalId: string, workspaceId: string): Promise<ConversationRecord | undefined>;
  setSubject(id: string, subject: CallSubject | null): Promise<void>;
  /**
   * Sets the conversation's handoff. With `holder`, only while no other member holds it (taken by someone else):
   * of two members taking it over (or handing it back) at once on two nodes, one change lands. With `holder`
   * null, only while no member holds it (the agent's handoff request). Whether it was set.
   */
  setHandoff(id: string, handoff: HandoffState | null, holder?: string | null): Promise<boolean>;
  setCapabilities(id: string, capabilities: ChannelCapabilities): Promise<void>;
  /** Newest first; only the workspace's when `workspaceId` is given (the team API always gives it). */
  listConversations(filter: { workspaceId?: string; handoff?: boolean; limit?: number }): Promise<ConversationRecord[]>;

  /** Append one customer-visible event; its seq is the conversation's next (1, 2, 3, ...). */
  appendEvent(conversationId: string, message: Outbound, at: number): Promise<StoredEvent>;
  /** Events with seq > after, in order. */
  listEvents(conversationId: string, after: number, limit?: number): Promise<StoredEvent[]>;
  /** Rate the stored event `seq` (replacing an earlier rating of it); `null` removes the rating. The caller checks the event is rateable. */
  rateEvent(conversationId: string, seq: number, rating: Rating | null, at: number): Promise<void>;
  /** A conversation's ratings, by event seq. */
  listRatings(conversationId: string): Promise<EventRating[]>;
  /** How many of each conversation's replies are rated up and down (a conversation with none is absent). */
  countRatings(conversationIds: readonly string[]): Promise<Map<string, RatingCounts>>;

  appendTranscript(conversationId: string, message: ModelMessage, at: number): Promise<TranscriptEntry>;
  /** Transcript entries with seq > after (default 0: all), in order. */
  listTranscript(conversationId: string, after?: number): Promise<TranscriptEntry[]>;
  /**
   * Append events and transcript entries to one conversation in ONE transaction (all or none), with the
   * next seqs of each. Returns what was stored and the conversation read in the same transaction; with a
   * `resumeHash` that is no longer the conversation's, nothing is stored and the answer is undefined.
   */
  append(conversationId: string, batch: CheckedAppendBatch, at: number): Promise<AppendedBatch | undefined>;
  append(conversationId: string, batch: AppendBatch, at: number): Promise<AppendedBatch>;

  /** The turn owed to the customer input at `seq` has finished: clears it if it is still that one, owed by that node. */
  finishTurn(conversationId: string, nodeId: string, seq: number): Promise<boolean>;
  /** Turns owed by a node, oldest conversation first (read only). */
  listOwedTurns(nodeId: string, limit: number): Promise<OwedTurn[]>;
  /**
   * Recovery: move up to `limit` turns owed by `fromNodeId` (a lost node, or this node at restart) to `toNodeId`,
   * each by compare-and-set on its node, so of several nodes taking over one lost node each turn goes to one.
   */
  claimOwedTurns(fromNodeId: string, toNodeId: string, limit: number): Promise<OwedTurn[]>;

  /** Stores a new write with its first transition; WriteBlockedError while another write of the conversation is unresolved. */
  insertWrite(write: NewWrite): Promise<WriteRecord>;
  /**
   * insertWrite and an append to the write's conversation (the review card, the model's step) in ONE
   * transaction; write_blocked (as a value, nothing stored) while another write of the conversation is unresolved.
   */
  proposeWrite(write: NewWrite, batch?: AppendBatch): Promise<ProposedWrite>;
  getWrite(id: string): Promise<WriteRecord | undefined>;
  listWrites(conversationId: string): Promise<WriteRecord[]>;
  /** Compare-and-set: applies the change only if the write meets the expectation; undefined otherwise. */
  transitionWrite(id: string, expect: WriteExpectation, change: WriteChange, at: number): Promise<WriteRecord | undefined>;
  /**
   * transitionWrite and, only if it lands, an append to the write's conversation (what announces the change:
   * the outcome event, the note to the model) in ONE transaction: the change and its announcement are never apart.
   * `audit`: the change's audit entry, in the same transaction (WriteAudit).
   */
  changeWrite(id: string, expect: WriteExpectation, change: WriteChange, at: number, batch?: AppendBatch, audit?: WriteAudit): Promise<ChangedWrite | undefined>;
  listTransitions(writeId: string): Promise<WriteTransition[]>;
  /** Claim up to `limit` due status checks (pending/unknown, not follow-up, next check due, not leased). */
  claimDueChecks(now: number, leaseUntil: number, limit: number): Promise<WriteRecord[]>;
  /** Earliest next status check, to sleep until then. */
  nextCheckAt(): Promise<number | null>;
  /** Startup recovery: this node's `running` writes become `unknown` with a check due at `checkAt`. */
  recoverRunning(nodeId: string, now: number, checkAt: number): Promise<WriteRecord[]>;
  /** Writes listed for the team: still unresolved after the last status check (only the workspace's conversations' when given). */
  listFollowUps(workspaceId?: string): Promise<WriteRecord[]>;

  /**
   * Accept a customer's inbound event by its source id (e.g. `whatsapp:SM…`) once: true the first time,
   * false for a repeat. One insert on a unique key, so a replay after a crash or two copies at once cannot both pass.
   */
  claimInboundSource(sourceId: string, conversationId: string, at: number): Promise<boolean>;
  /** Forget source ids accepted before `before` (past any platform redelivery); returns how many. */
  pruneInboundSources(before: number): Promise<number>;

  putFile(file: StoredFile): Promise<void>;
  getFile(id: string): Promise<StoredFile | undefined>;

  /** Open proposals made at or before `createdBefore`, oldest first: the proposal sweep expires them. */
  listExpiredProposals(createdBefore: number, limit: number): Promise<WriteRecord[]>;
  /**
   * Writes waiting for the customer to verify again (step_up_required) since at or before `updatedBefore`,
   * oldest first: the sweep expires them like proposals (nothing was applied: the tool asked before acting).
   */
  listExpiredStepUps(updatedBefore: number, limit: number): Promise<WriteRecord[]>;
  /** Retention: drop the bytes of up to `limit` files created at or before `createdBefore`, keeping the row marked purged. How many. */
  purgeFiles(createdBefore: number, now: number, limit: number): Promise<number>;

  insertHandoffNotice(notice: NewHandoffNotice): Promise<HandoffNotice>;
  /** Claim up to `limit` pending notices due at `now` (not leased), leasing them until `leaseUntil`. */
  claimDueHandoffNotices(now: number, leaseUntil: number, limit: number): Promise<HandoffNotice[]>;
  /** Record an attempt (compare-and-set on the attempt count read at claim); undefined if another node got there first. */
  recordHandoffAttempt(id: string, expectAttempts: number, attempt: HandoffAttempt, at: number): Promise<HandoffNotice | undefined>;
  listHandoffNotices(conversationId: string): Promise<HandoffNotice[]>;

  createConsoleSession(session: ConsoleSession): Promise<void>;
  getConsoleSession(idHash: string): Promise<ConsoleSession | undefined>;
  /** Marks the session used at `at` if it was last seen after `idleSince` (still live); false when it had expired or is gone. */
  touchConsoleSession(idHash: string, at: number, idleSince: number): Promise<boolean>;
  deleteConsoleSession(idHash: string): Promise<void>;
  /** Forget sessions last seen before `before` (idle past their expiry); how many. */
  pruneConsoleSessions(before: number): Promise<number>;
  /**
   * Count one sign-in attempt from `addressHash` at `at`, in one statement (every node shares the count): a new
   * window begins when the address's last began `windowMs` or more before `at`. Returns the window's count so far.
   */
  countSignInAttempt(addressHash: string, at: number, windowMs: number): Promise<SignInCount>;
  /** Forget addresses whose window began before `before`; how many. */
  pruneSignInAttempts(before: number): Promise<number>;
  /** The team inbox: one row per conversation with its summary, the member's read mark and write counts (InboxEntry). */
  listInbox(query: InboxQuery): Promise<InboxEntry[]>;
  /**
   * Conversations of a workspace matching `text` (case-insensitive for ASCII): on their id, customer id or ref,
   * external id or a write's arguments, newest first, at most `limit`; and up to `limit` × 10 candidate events whose
   * JSON holds the text, newest conversations first.
   */
  searchConversations(workspaceId: string, text: string, limit: number): Promise<SearchHit[]>;
  /** Record that `member` has read the conversation up to `seq` (a lower seq than recorded changes nothing). */
  markRead(conversationId: string, member: string, seq: number, at: number): Promise<void>;
  addTeamNote(note: TeamNote): Promise<void>;
  listTeamNotes(conversationId: string): Promise<TeamNote[]>;
  /**
   * Set a workspace secret: its next version, sealed by `seal(version)` (the version is part of what the
   * seal authenticates), with its audit entry (`secret.set`, no value) in the same transaction.
   */
  setSecret(workspaceId: string, name: string, seal: (version: number) => SealedValue, actor: string, at: number): Promise<SecretMeta>;
  /** Remove a secret's value (its version still counts on), audited as `secret.removed`; false when it had none. */
  removeSecret(workspaceId: string, name: string, actor: string, at: number): Promise<boolean>;
  /** A workspace's secrets that have a value, by name: never the values. */
  listSecrets(workspaceId: string): Promise<SecretMeta[]>;
  /** The sealed values of the named secrets of one workspace (those that have one). */
  readSecrets(workspaceId: string, names: readonly string[]): Promise<StoredSecret[]>;
  /** Every sealed value, of every workspace (the key check at start, rotation). */
  listAllSecrets(): Promise<StoredSecret[]>;
  /**
   * Seal every value again (rotate-key): `reseal` gives each one's new seal, all in ONE transaction with one
   * `secrets.key_rotated` audit entry per workspace touched. Returns how many were sealed again.
   */
  resealSecrets(reseal: (secret: StoredSecret) => SealedValue, actor: string, at: number): Promise<number>;

  appendAudit(entry: AuditEntry): Promise<AuditEvent>;
  /** A workspace's audit, oldest first, ids after `after`. */
  listAudit(workspaceId: string, options?: { after?: number; limit?: number }): Promise<AuditEvent[]>;
  /** The newest entry of one action on one target in a workspace's audit, or undefined. */
  lastAudit(workspaceId: string, action: string, target: string): Promise<AuditEvent | undefined>;
  /**
   * Record a workspace's configured team members (CAPLO_TEAM_MEMBERS) and audit what changed since the last
   * record (member.added, member.removed, member.token_changed; never a token or its hash), ending the console
   * sessions of a member removed or given another token, in one transaction. Managed members are left as they
   * are; a configured name that is a managed member's is refused (conflicts), and nothing is recorded.
   */
  syncTeamMembers(workspaceId: string, members: readonly { name: string; tokenSha256: string }[], actor: string, at: number): Promise<MembersSynced>;
  /** Keep a managed member with its audit entry (member.added) in one transaction; member_exists when the workspace has the name. */
  addTeamMember(member: { workspaceId: string; name: string; tokenSha256: string }, actor: string, at: number): Promise<MemberAdded>;
  /**
   * Remove a managed member, end their console sessions and audit member.removed, in one transaction;
   * member_configured for a configured member (remove it from CAPLO_TEAM_MEMBERS instead).
   */
  removeTeamMember(workspaceId: string, name: string, actor: string, at: number): Promise<MemberRemoved>;
  /** A workspace's members as recorded, configured and managed, by name. */
  listTeamMembers(workspaceId: string): Promise<RecordedMember[]>;
  /** The managed member whose token's SHA-256 (hex) this is, of any workspace. */
  findTeamMemberByToken(tokenSha256: string): Promise<RecordedMember | undefined>;
  /** A workspace's managed member by name. */
  getTeamMember(workspaceId: string, name: string): Promise<RecordedMember | undefined>;
  /** Whether any workspace has a managed member. */
  hasManagedMembers(): Promise<boolean>;
}

// The store's narrow ports: what each part that keeps state needs of it, so a part names only its own
// (HandoffDelivery the handoff outbox, FileRetention the files, ProposalSweep the write ledger). Both
// stores implement every port by implementing Store. Each port has a contract suite of its own, run on
// SQLite and on PostgreSQL by testing/storeHarness.ts (conversationLog, writeLedger, files, handoffOutbox and
// inboundEvents .contract.test.ts); store.contract.test.ts holds what belongs to no one port.

/** The conversation log: conversations, their customer-visible events and transcript, and the turns they owe. */
export type ConversationLogPort = Pick<
  Store,
  | "createConversation"
  | "getConversation"
  | "latestSeqs"
  | "findConversationByResume"
  | "rotateResumeHash"
  | "findConversationByExternal"
  | "setSubject"
  | "setHandoff"
  | "setCapabilities"
  | "listConversations"
  | "appendEvent"
  | "listEvents"
  | "appendTranscript"
  | "listTranscript"
  | "append"
  | "finishTurn"
  | "listOwedTurns"
  | "claimOwedTurns"
>;

/** The write ledger: writes, their compare-and-set changes with what announces them, status checks and expiry. */
export type WriteLedgerPort = Pick<
  Store,
  | "insertWrite"
  | "proposeWrite"
  | "getWrite"
  | "listWrites"
  | "transitionWrite"
  | "changeWrite"
  | "listTransitions"
  | "claimDueChecks"
  | "nextCheckAt"
  | "recoverRunning"
  | "listFollowUps"
  | "listExpiredProposals"
  | "listExpiredStepUps"
>;

/** Delivered files and their retention. */
export type FilePort = Pick<Store, "putFile" | "getFile" | "purgeFiles">;

/** The handoff outbox: notices for the team's webhook, stored before they are sent, claimed per attempt. */
export type HandoffOutboxPort = Pick<Store, "insertHandoffNotice" | "claimDueHandoffNotices" | "recordHandoffAttempt" | "listHandoffNotices">;

/** The team's members kept in the store, as the team API and the console find them at each request. */
export type TeamMemberPort = Pick<Store, "findTeamMemberByToken" | "getTeamMember" | "hasManagedMembers">;

/** Inbound platform events accepted once by their source id. */
export type InboundEventPort = Pick<Store, "claimInboundSource" | "pruneInboundSources">;
