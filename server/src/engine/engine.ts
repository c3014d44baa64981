// The conversation engine's facade: what the gateway, the channels and the team API ask of a conversation,
// and the per-conversation queue that keeps one conversation's turns from interleaving in this process.
// Each responsibility is a part of its own (core.ts wires them): the conversation log, the customer's
// actions (customerActions.ts), the transcript cache, a turn, turn recovery, writes, status checks, open
// questions and team actions. Every ledger
// transition is stored (compare-and-set) before it is acted on; the pure rules live in writePolicy.ts
// and presentation.ts.
import type { CallSubject, Inbound, Outbound, Rating } from "@caplo/shared";
import type { EventBus, Unsubscribe } from "../bus/eventBus.ts";
import type { ChannelCapabilities } from "@caplo/shared";
import type { AuditEntry, AuditEvent, ConsoleInboxPort, ConsoleSessionStore, ConversationRecord, TeamMemberPort, EventRating, HandoffNotice, RatingCounts, Store, StoredEvent, StoredFile, TeamNote, WriteTransition } from "../store/store.ts";
import type { WriteRecord } from "./ledger.ts";
import { randomId, type DeliveryRecord, type EngineResult, type EngineValue, type InboundSource, type OpenConversation, type UndeliveredMessage } from "./common.ts";
import { ConversationLog } from "./conversationLog.ts";
import { CustomerActions, type OpenQuestionView, type ProposalView } from "./customerActions.ts";
import type { ReplyDelta } from "./replyStream.ts";
import { EngineCore, type EngineOptions } from "./core.ts";
import { FileRetention } from "./fileRetention.ts";
import { OpenQuestions } from "./openQuestions.ts";
import { ProposalSweep } from "./proposalSweep.ts";
import { StatusChecks } from "./statusChecks.ts";
import { TeamActions } from "./teamActions.ts";
import { TranscriptCache } from "./transcriptCache.ts";
import { Turns } from "./turn.ts";
import { TurnRecovery } from "./turnRecovery.ts";
import { Writes } from "./writes.ts";
import { agentRef, workspaceOf } from "./release.ts";

export { FILES_PATH, HANDOFF_TOOL, INTERRUPTED_NOTE, UNDELIVERED_NOTE_PREFIX, type DeliveryRecord, type EngineResult, type EngineValue, type InboundSource, type OpenConversation, type UndeliveredMessage } from "./common.ts";
export type { OpenQuestionView, ProposalView } from "./customerActions.ts";
export type { EngineOptions } from "./core.ts";
export { TRANSCRIPT_CACHE_MAX_CHARS } from "./transcriptCache.ts";

export class Engine {
  /** Private: the gateway, the team API and the channels ask the engine, never its store. */
  private readonly store: Store;
  readonly bus: EventBus;
  private readonly core: EngineCore;
  /** The options it was made with (some tests read the releases through it). */
  private readonly options: EngineOptions;
  private readonly proposalSweep: ProposalSweep;
  private readonly fileRetention: FileRetention;

  constructor(options: EngineOptions) {
    const core = new EngineCore(options);
    core.attach({
      conversations: new ConversationLog(core),
      customers: new CustomerActions(core),
      transcripts: new TranscriptCache(core),
      turns: new Turns(core),
      recovery: new TurnRecovery(core),
      writes: new Writes(core),
      checks: new StatusChecks(core),
      elicitations: new OpenQuestions(core),
      team: new TeamActions(core),
    });
    this.core = core;
    this.options = options;
    this.store = core.store;
    this.bus = core.bus;
    this.proposalSweep = new ProposalSweep({
      store: core.store,
      now: core.now,
      ttlMs: core.proposalTtl(),
      expire: (write) => core.writes.expireProposal(write),
      ...(options.proposalSweepMs !== undefined && { everyMs: options.proposalSweepMs }),
      log: (level, message, data) => core.log(level, message, data),
    });
    this.fileRetention = new FileRetention({
      store: core.store,
      now: core.now,
      ...(options.fileRetentionMs !== undefined && { retentionMs: options.fileRetentionMs }),
      log: (level, message, data) => core.log(level, message, data),
    });
  }

  // ---------------------------------------------------------------- lifecycle

  /** Load every release's packages, recover writes a stop interrupted, and start the status-check scheduler. */
  async start(options: { scheduler?: boolean } = {}): Promise<void> {
    for (const release of this.core.options.releases.list()) {
      await this.core.store.ensureWorkspace(workspaceOf(release), this.core.now());
      for (const version of release.packages) await this.core.options.runner.load(version);
    }
    await this.recover();
    if (options.scheduler !== false) {
      this.core.checks.scheduleChecks();
      this.proposalSweep.start();
      this.fileRetention.start();
    }
  }

  /**
   * Recovery: a write left running is unknown (told to the customer) and its status checks resume. At
   * start for this node's own writes; in a cluster, a survivor calls it with a lost node's id.
   */
  recover(nodeId: string = this.core.nodeId): Promise<WriteRecord[]> {
    return this.core.recovery.recover(nodeId);
  }

  /** Turns owed by `nodeId` claimed by this node and run again in the background (turnRecovery.ts). Returns how many. */
  recoverTurns(nodeId: string = this.core.nodeId): Promise<number> {
    return this.core.recovery.recoverTurns(nodeId);
  }

  async stop(): Promise<void> {
    this.core.stopped = true;
    this.core.checks.stop();
    await this.proposalSweep.stop();
    await this.fileRetention.stop();
    this.core.elicitations.cancelAll();
    await this.idle();
  }

  /** Resolves when no turn, confirm or status check started so far is still running. */
  async idle(): Promise<void> {
    while (this.core.inFlight.size > 0) await Promise.allSettled([...this.core.inFlight]);
  }

  // ---------------------------------------------------------------- conversations and events

  openConversation(input: OpenConversation): Promise<ConversationRecord> {
    return this.core.customers.open(input);
  }

  /** Store a customer-visible event and notify subscribers (on every node through the bus). */
  emit(conversationId: string, message: Outbound): Promise<StoredEvent> {
    return this.core.conversations.emit(conversationId, message);
  }

  /** Stored events with seq > after, in order: from memory when it holds all of them, else from the store. */
  eventsAfter(conversationId: string, after: number, limit = 200): Promise<StoredEvent[]> {
    return this.core.conversations.eventsAfter(conversationId, after, limit);
  }

  /** What the transcript cache holds now: conversations, messages and their cost (for tests and metrics). */
  transcriptCacheSize(): { conversations: number; messages: number; chars: number } {
    return this.core.transcripts.transcriptCacheSize();
  }

  /** Listen for "events up to seq N are stored" on one conversation. */
  subscribe(conversationId: string, listener: (seq: number) => void): Unsubscribe {
    return this.core.bus.subscribe(conversationId, (_id, notice) => listener(notice.seq));
  }

  /** Listen for the agent's reply text as the model writes it (the stored event, whole, follows under the same id). */
  onReplyDelta(listener: (conversationId: string, delta: ReplyDelta) => void): () => void {
    return this.core.replies.onDelta(listener);
  }

  /** The reply being written in a conversation now, as far as it goes. */
  replyInProgress(conversationId: string): ReplyDelta | undefined {
    return this.core.replies.inProgress(conversationId);
  }

  /** The conversation's owner stops the reply being written: the text so far is stored as the reply. */
  stopReply(conversationId: string, ownerId: string): Promise<EngineResult> {
    return this.core.customers.stopReply(conversationId, ownerId);
  }

  /**
   * The conversation's owner rates one of the agent's replies (the stored event `seq`, an agent's text), or
   * takes the rating back with `null`; a later rating replaces the earlier one.
   */
  rate(conversationId: string, ownerId: string, seq: number, rating: Rating | null): Promise<EngineResult> {
    return this.core.customers.rate(conversationId, ownerId, seq, rating);
  }

  /** A conversation's ratings of the agent's replies, by event seq (for the team). */
  ratings(conversationId: string): Promise<EventRating[]> {
    return this.core.store.listRatings(conversationId);
  }

  /** How many replies of each conversation are rated up and down (for the team's list). */
  ratingCounts(conversationIds: readonly string[]): Promise<Map<string, RatingCounts>> {
    return this.core.store.countRatings(conversationIds);
  }

  onTyping(listener: (conversationId: string, on: boolean) => void): () => void {
    this.core.typingListeners.add(listener);
    return () => this.core.typingListeners.delete(listener);
  }

  // ---------------------------------------------------------------- inbound
  /**
   * One customer action from the customer's own client. `ownerId` is the connection owner (resume-token
   * holder or channel identity); only `confirm` from that owner runs a write. Typed text never does.
   * `recorded` is called once a message, a confirm or a decline is recorded, before the turn, the write or
   * the model's next turn runs (the widget acks the frame then; what follows comes as events).
   */
  handle(conversationId: string, ownerId: string, inbound: Inbound, source?: InboundSource, recorded?: () => void): Promise<EngineResult> {
    return this.core.customers.handle(conversationId, ownerId, inbound, source, recorded);
  }

  /** A proposal of the conversation and where it stands as the customer is told it; proposal_not_found (a value) for any other. */
  proposal(conversationId: string, proposalId: string): Promise<EngineValue<ProposalView>> {
    return this.core.customers.proposal(conversationId, proposalId);
  }

  /** The proposal waiting for the customer's decision in the conversation (one at most), if any. */
  openProposal(conversationId: string): Promise<ProposalView | undefined> {
    return this.core.customers.openProposal(conversationId);
  }

  /** The question a running tool asked in the conversation and waits for on this node, as shown to the customer, if any. */
  openQuestion(conversationId: string): OpenQuestionView | undefined {
    return this.core.customers.openQuestion(conversationId);
  }

  /**
   * Replace a web conversation's resume token hash (the visitor signed in or stepped up): only if it is still
   * `from`, so of two rotations one wins; the old token no longer resumes the conversation.
   */
  async rotateResume(conversationId: string, from: string, to: string): Promise<boolean> {
    this.core.conversations.forgetRow(conversationId);
    const rotated = await this.core.store.rotateResumeHash(conversationId, from, to);
    this.core.conversations.forgetRow(conversationId); // an append that read the old hash meanwhile
    return rotated;
  }

  /**
   * Whether this node's own appends show `resumeHash` as the conversation's, read at most `maxAgeMs` ago
   * with every event up to `seq` already stored (no store read). False: not known here; ask resumeCurrent.
   */
  resumeSeen(conversationId: string, resumeHash: string, seq: number, maxAgeMs: number): boolean {
    return this.core.conversations.resumeSeen(conversationId, resumeHash, seq, maxAgeMs);
  }

  /**
   * The conversation's resume token hash as this node's latest append of it read it (null: it has none), or
   * undefined when none is remembered: what a reply being written on this node may stream under.
   */
  seenResumeHash(conversationId: string): string | null | undefined {
    return this.core.conversations.seenResumeHash(conversationId);
  }

  /** Whether `resumeHash` is still the conversation's (not replaced since a connection joined with it). */
  async resumeCurrent(conversationId: string, resumeHash: string): Promise<boolean> {
    return (await this.core.store.getConversation(conversationId))?.resumeHash === resumeHash;
  }

  /**
   * The web conversation a resume token's hash opens, if it is this agent's: its capabilities become those of
   * the client now joining. Undefined: no such conversation, or another agent's (a new one is started).
   */
  async resumeConversation(resumeHash: string, agent: string, capabilities: ChannelCapabilities): Promise<ConversationRecord | undefined> {
    const found = await this.store.findConversationByResume(resumeHash);
    // `agent` is the reference the widget named (workspace/name): a token of another workspace's agent opens nothing.
    if (!found || agentRef(found.workspaceId, found.agent) !== agent) return undefined;
    await this.store.setCapabilities(found.id, capabilities);
    this.core.customers.rememberOwner(found);
    return found;
  }

  /** One conversation as stored, or undefined when there is none. */
  conversation(conversationId: string): Promise<ConversationRecord | undefined> {
    return this.store.getConversation(conversationId);
  }

  /** Conversations for the team, newest first; `handoff`: only those the team holds (true) or does not (false); `workspaceId`: only that workspace's. */
  listConversations(filter: { workspaceId?: string; handoff?: boolean; limit?: number }): Promise<ConversationRecord[]> {
    return this.store.listConversations(filter);
  }

  /** A conversation's writes, oldest first, as the ledger holds them (the team console's view). */
  writes(conversationId: string): Promise<WriteRecord[]> {
    return this.store.listWrites(conversationId);
  }

  /** One write's transitions, oldest first: when it moved from which state to which, and why. */
  transitions(writeId: string): Promise<WriteTransition[]> {
    return this.store.listTransitions(writeId);
  }

  /** The team's internal notes on a conversation, oldest first; never sent to the customer. */
  teamNotes(conversationId: string): Promise<TeamNote[]> {
    return this.store.listTeamNotes(conversationId);
  }

  /** Keep a team member's internal note on a conversation (never an event: no channel or widget sends it). */
  async addTeamNote(conversationId: string, member: string, text: string): Promise<{ ok: true; note: TeamNote } | { ok: false; error: { code: string; path: string; message: string } }> {
    if (!(await this.store.getConversation(conversationId))) return { ok: false, error: { code: "conversation_not_found", path: "id", message: "no such conversation" } };
    const note: TeamNote = { id: randomId("n"), conversationId, member, text, at: this.core.now() };
    await this.store.addTeamNote(note);
    return { ok: true, note };
  }

  /** The team inbox's summaries, search and read marks: the store, so every node shows what any node stored. */
  get consoleInbox(): ConsoleInboxPort {
    return this.store;
  }

  /** Where the team console keeps its sessions: the store, so every node knows every session. */
  get consoleSessionStore(): ConsoleSessionStore {
    return this.store;
  }

  /** Where the team's members managed in the store are found (the team API and console, at each request). */
  get teamMemberStore(): TeamMemberPort {
    return this.store;
  }

  /** A workspace's audit (who changed what and when), oldest first, ids after `after`. */
  audit(workspaceId: string, options: { after?: number; limit?: number } = {}): Promise<AuditEvent[]> {
    return this.store.listAudit(workspaceId, options);
  }

  /** The newest entry of one action on one target in a workspace's audit (who published a remote version). */
  lastAudit(workspaceId: string, action: string, target: string): Promise<AuditEvent | undefined> {
    return this.store.lastAudit(workspaceId, action, target);
  }

  /** Record a change in a workspace's audit. */
  recordAudit(entry: AuditEntry): Promise<AuditEvent> {
    return this.store.appendAudit(entry);
  }

  /** The notices sent to a conversation's handoff destination, oldest first. */
  handoffNotices(conversationId: string): Promise<HandoffNotice[]> {
    return this.store.listHandoffNotices(conversationId);
  }

  /** A delivered file (its bytes gone once purged: `purgedAt`), or undefined when there is none. */
  file(id: string): Promise<StoredFile | undefined> {
    return this.store.getFile(id);
  }

  /** Whether the store answers now (readiness): a failed ping is false, never a throw. */
  async storeReady(): Promise<boolean> {
    return this.store.ping().catch(() => false);
  }

  /** Retention: forget the platform event ids accepted before `before` (a redelivery older than that is not expected). Returns how many. */
  pruneInboundSources(before: number): Promise<number> {
    return this.store.pruneInboundSources(before);
  }

  /**
   * A customer verified (identity token, or a channel identity): cancel other customers' proposals, resume step-ups.
   * `resume` (the widget's sign-in): the conversation's resume token is replaced first, from `from` to `to`, and
   * only if `from` is still its own (else resume_rotated, nothing changed); `rotated` runs once it is. One
   * compare-and-set decides both, so of two sign-ins racing with one token (on any nodes), the one whose socket
   * holds the new token is the one whose subject the conversation has.
   */
  verify(conversationId: string, subject: CallSubject, resume?: { from: string; to: string; rotated: () => void }): Promise<EngineResult> {
    return this.core.writes.verify(conversationId, subject, resume && (async () => {
      if (!(await this.rotateResume(conversationId, resume.from, resume.to))) return false;
      resume.rotated();
      return true;
    }));
  }

  // ---------------------------------------------------------------- background work

  /** Purge the bytes of delivered files past the retention period now (also hourly once started). Returns how many. */
  async purgeExpiredFiles(): Promise<number> {
    return this.fileRetention.purge();
  }

  /** Expire every proposal past its lifetime now (the background sweep calls this). Returns how many this node expired. */
  async expireDueProposals(): Promise<number> {
    return this.proposalSweep.sweep();
  }

  /** Run every status check that is due now, one at a time per write (the claim is a lease). Returns how many ran. */
  runDueChecks(): Promise<number> {
    return this.core.checks.runDueChecks();
  }

  // ---------------------------------------------------------------- the team

  /** A team member takes over any text conversation: the agent stays silent until it is handed back. */
  takeOver(conversationId: string, member: string): Promise<EngineResult> {
    return this.core.team.takeOver(conversationId, member);
  }

  teamMessage(conversationId: string, member: string, text: string): Promise<EngineResult> {
    return this.core.team.teamMessage(conversationId, member, text);
  }

  /** Hand the conversation back to the agent. */
  handBack(conversationId: string, member: string): Promise<EngineResult> {
    return this.core.team.handBack(conversationId, member);
  }

  /** Writes still unresolved after the last status check: the team checks their own system and follows up. */
  followUps(workspaceId?: string): Promise<WriteRecord[]> {
    return this.core.team.followUps(workspaceId);
  }

  /** A member records a follow-up write's real outcome after checking their own system; the tool never runs (teamActions.ts). */
  resolveFollowUp(writeId: string, member: string, outcome: "applied" | "not_applied", note: string, workspaceId?: string): Promise<EngineResult> {
    return this.core.team.resolveFollowUp(writeId, member, outcome, note, workspaceId);
  }

  /** A message that could not reach the customer: kept in the conversation's history for the team, and the model is told. */
  recordUndelivered(conversationId: string, text: string): Promise<EngineResult> {
    return this.core.team.recordUndelivered(conversationId, text);
  }

  /** Registers where messages that never reached their customer are kept (a channel store), for the team's follow-up list. */
  addUndeliveredSource(source: () => Promise<UndeliveredMessage[]>): () => void {
    return this.core.team.addUndeliveredSource(source);
  }

  /** Messages that never reached their customer, newest first. */
  undelivered(): Promise<UndeliveredMessage[]> {
    return this.core.team.undelivered();
  }

  /** Registers where a conversation's sends on a messaging channel and their delivery statuses are kept. */
  addDeliverySource(source: (conversationId: string) => Promise<DeliveryRecord[]>): () => void {
    return this.core.team.addDeliverySource(source);
  }

  /** How the conversation's outbound events went out on its messaging channel, with their delivery statuses. */
  deliveries(conversationId: string): Promise<DeliveryRecord[]> {
    return this.core.team.deliveries(conversationId);
  }
}
