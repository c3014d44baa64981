// The conversation engine's driver: turns with the model, reads at once, writes through the write policy
// and the ledger, status checks, step-up, elicitation and handoff. Every ledger transition is stored
// (compare-and-set) before it is acted on; the pure rules live in writePolicy.ts and presentation.ts.
import { randomFillSync } from "node:crypto";
import {
  FILE_TYPES,
  TIMEOUT_SECONDS_MAX,
  type CallSubject,
  type ChannelCapabilities,
  type ChannelKind,
  type Inbound,
  type Outbound,
  type OutboundOf,
  type StepUp,
  type WriteOutcome,
} from "@caplo/shared";
import type { EventBus, Unsubscribe } from "../bus/eventBus.ts";
import { MemoryBus } from "../bus/memoryBus.ts";
import { satisfiesStepUp } from "../identity/stepUp.ts";
import type { Model, ModelMessage, ModelTool, ModelToolCall } from "../model/model.ts";
import type { DeliveredFile, ElicitRequest, ElicitResponse, ToolRunner } from "../runner/api.ts";
import { validateAgainst } from "../runner/schemaValidator.ts";
import type { AppendBatch, AppendedBatch, ConversationRecord, Store, StoredEvent, TranscriptEntry, WriteChange, WriteRecord } from "../store/store.ts";
import { questionFields } from "./elicitation.ts";
import { customerText, modelNote } from "./outcomeText.ts";
import { applyEdits, modelParameters, projectResult, receiptFields, reviewCard, type Problem } from "./presentation.ts";
import { findTool, type AgentRelease, type EngineTool, type ReleaseSource } from "./release.ts";
import { PROPOSAL_TTL_DEFAULT_MS, ProposalSweep, proposalExpired, stepUpExpired, writeExpired } from "./proposalSweep.ts";
import { messageCost, TRANSCRIPT_BUDGET_DEFAULT_CHARS, transcriptWindow, windowStart } from "./transcriptWindow.ts";
import { FileRetention } from "./fileRetention.ts";
import { handoffReason, type HandoffNotifier } from "./handoff.ts";
import { blockedMessage, blockingWrite, changedWrite, decide, ledgerChange, type Actor, type PolicyEvent } from "./writePolicy.ts";

/** Where the gateway serves delivered files: `${FILES_PATH}/<id>` (the id is random and unguessable). */
export const FILES_PATH = "/v1/files";

/** A node's claim on due status checks lasts this long; each check must fit in it with the margin to spare. */
const CHECK_LEASE_MS = 60_000;
const CHECK_LEASE_MARGIN_MS = 5_000;
const CHECK_CLAIM_LIMIT = 20;
const RECENT_EVENTS_PER_CONVERSATION = 32;
const RECENT_CONVERSATIONS = 2000;
const RECENT_OWNERS = 10_000;
/**
 * The transcript cache, by message cost (messageCost, about characters): a conversation's copy is cut back to
 * what the window can use once it holds twice the transcript budget, and the least recent conversations are
 * dropped while all copies together hold more than this.
 */
export const TRANSCRIPT_CACHE_MAX_CHARS = 16_000_000;

/** Owed turns claimed per store call at recovery. */
const OWED_TURN_CLAIM_LIMIT = 100;
/** How many of a conversation's latest events a resumed turn looks through for its step's progress and review card. */
const RESUME_EVENTS_LOOKBACK = 64;
/** Tool results that end a turn (a resumed turn that stored one is not run again). */
const PROPOSED_PREFIX = "proposed:";
const HANDED_OFF_PREFIX = "handed_off:";
const HANDED_OFF_NOTE = `${HANDED_OFF_PREFIX} the conversation is now with the team. Say nothing more.`;
/** The result of a tool call whose node was killed before it finished (a read; no write was stored for it). */
export const INTERRUPTED_NOTE = "interrupted: this call did not finish (the server restarted) and its result is lost; nothing was proposed or changed. You may call it again.";
const proposedNote = (toolRef: string, writeId: string) =>
  `${PROPOSED_PREFIX} the customer sees a review card for ${toolRef} (proposal ${writeId}). It runs only if the customer confirms it on the card; their typed text cannot confirm it. Do not call it again.`;

/** The model-facing name of the built-in handoff tool (no `__`, so it never clashes with a package tool). */
export const HANDOFF_TOOL = "handoff_to_team";

export type EngineOptions = {
  store: Store;
  runner: ToolRunner;
  /** One model for every agent, or one per release. */
  model: Model | ((release: AgentRelease) => Model);
  releases: ReleaseSource;
  /** Carries "new events up to seq N" notices to subscribers; in-process by default. */
  bus?: EventBus;
  /** This server node (recovery only touches writes this node ran). Default "local". */
  nodeId?: string;
  now?: () => number;
  /** Gap before the first status check; each next gap doubles. Default 5000 ms. */
  statusCheckBaseMs?: number;
  /** How often the scheduler looks for due status checks. Default 1000 ms. */
  checkPollMs?: number;
  /** A proposal not decided within this time expires. Default 1 hour (proposalSweep.ts). */
  proposalTtlMs?: number;
  /** How often the background sweep expires undecided proposals. Default 30 s. */
  proposalSweepMs?: number;
  /** Tells the team (the queue's webhook) when the agent hands a conversation over (handoff.ts). */
  handoffNotifier?: HandoffNotifier;
  /** Delivered files' bytes are purged this long after delivery (fileRetention.ts). Default 30 days. */
  fileRetentionMs?: number;
  /** Characters of transcript sent to the model per step at most (transcriptWindow.ts). Default 48,000. */
  transcriptBudgetChars?: number;
  /** The transcript cache's total size (message cost, about characters) at most. Default TRANSCRIPT_CACHE_MAX_CHARS. */
  transcriptCacheChars?: number;
  /** Model calls per turn at most. Default 8. */
  maxModelSteps?: number;
  /** How long a tool's question waits for the customer's answer. Default 120 s. */
  elicitTimeoutMs?: number;
  /** Secret values for a package version, from the workspace's secret store. */
  secrets?: (packageVersionId: string) => Record<string, string>;
  log?: (level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>) => void;
};

export type EngineResult = { ok: true } | { ok: false; error: Problem };

export type OpenConversation = {
  agent: string;
  channel: ChannelKind;
  capabilities: ChannelCapabilities;
  ownerId: string;
  externalId?: string | null;
  resumeHash?: string | null;
  subject?: CallSubject | null;
};

/** The platform event an inbound came from (`whatsapp:SM…`, `messenger:m_…`): the same for every redelivery. */
export type InboundSource = { sourceId: string };

/** Ids of history events recording a message the customer never received: kept for the team, never sent. */
export const UNDELIVERED_NOTE_PREFIX = "undelivered_";

/** A message that never reached its customer, as the team's follow-up list shows it. */
export type UndeliveredMessage = { conversationId: string; channel: string; code: string; message: string; at: number };

type Pending = { conversationId: string; resolve: (response: ElicitResponse) => void; schema: Record<string, unknown> };

/**
 * A conversation's transcript in memory: the stored entries with seq `dropped + 1`..`lastSeq`, in order. The
 * `dropped` oldest are no longer held: no window of the transcript budget can use them (windowStart).
 * `chars`: what the held messages cost against the budget (messageCost), for the cache's bounds.
 */
type CachedTranscript = { lastSeq: number; messages: ModelMessage[]; dropped: number; chars: number };

/**
 * What a step of a turn has produced but not stored yet (the model's reply, a read's results). It is
 * stored, in one transaction, before anything else happens: the next tool call, model call, ledger
 * change or customer-visible event. Nothing in it has been sent or shown yet.
 */
type Carry = { events: Outbound[]; transcript: ModelMessage[] };

/** What a tool call tells the model; `stored`: its tool entry is already stored (with a proposal), not to be carried. */
type ToolCallOutcome = { modelText: string; endTurn?: boolean; stored?: boolean };

// Ids from a pool of cryptographically random bytes, each byte used once, refilled 4 KiB at a time (one
// call into the CSPRNG per few hundred ids instead of one per id: a turn makes about ten).
const idPool = Buffer.alloc(4096);
let idPoolAt = idPool.length;
function randomId(prefix: string, bytes = 12): string {
  if (idPoolAt + bytes > idPool.length) {
    randomFillSync(idPool);
    idPoolAt = 0;
  }
  const id = `${prefix}_${idPool.toString("base64url", idPoolAt, idPoolAt + bytes)}`;
  idPoolAt += bytes;
  return id;
}
const fail = (code: string, path: string, message: string): EngineResult => ({ ok: false, error: { code, path, message } });

export class Engine {
  readonly store: Store;
  readonly bus: EventBus;
  private readonly options: EngineOptions;
  private readonly now: () => number;
  private readonly nodeId: string;
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly elicitations = new Map<string, Pending>();
  private readonly typingListeners = new Set<(conversationId: string, on: boolean) => void>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly recentEvents = new Map<string, StoredEvent[]>();
  /** The model transcript of recently active conversations (the store stays the truth; see transcriptOf). */
  private readonly transcripts = new Map<string, CachedTranscript>();
  /** The cost of every cached transcript together (bounded by TRANSCRIPT_CACHE_MAX_CHARS). */
  private transcriptChars = 0;
  /** Conversation id → owner id of recent conversations (an owner never changes). */
  private readonly owners = new Map<string, string>();
  private readonly undeliveredSources = new Set<() => Promise<UndeliveredMessage[]>>();
  private checkTimer: NodeJS.Timeout | undefined;
  private checking = false;
  private stopped = false;
  private readonly proposalSweep: ProposalSweep;
  private readonly fileRetention: FileRetention;

  constructor(options: EngineOptions) {
    this.options = options;
    this.store = options.store;
    this.bus = options.bus ?? new MemoryBus();
    this.now = options.now ?? Date.now;
    this.nodeId = options.nodeId ?? "local";
    this.proposalSweep = new ProposalSweep({
      store: this.store,
      now: this.now,
      ttlMs: this.proposalTtl(),
      expire: (write) => this.expireProposal(write),
      ...(options.proposalSweepMs !== undefined && { everyMs: options.proposalSweepMs }),
      log: (level, message, data) => this.log(level, message, data),
    });
    this.fileRetention = new FileRetention({
      store: this.store,
      now: this.now,
      ...(options.fileRetentionMs !== undefined && { retentionMs: options.fileRetentionMs }),
      log: (level, message, data) => this.log(level, message, data),
    });
  }

  // ---------------------------------------------------------------- lifecycle

  /** Load every release's packages, recover writes a stop interrupted, and start the status-check scheduler. */
  async start(options: { scheduler?: boolean } = {}): Promise<void> {
    for (const release of this.options.releases.list()) {
      for (const version of release.packages) await this.options.runner.load(version);
    }
    await this.recover();
    if (options.scheduler !== false) {
      this.scheduleChecks();
      this.proposalSweep.start();
      this.fileRetention.start();
    }
  }

  /**
   * Recovery: a write left running is unknown (told to the customer) and its status checks resume. At
   * start for this node's own writes; in a cluster, a survivor calls it with a lost node's id.
   */
  async recover(nodeId: string = this.nodeId): Promise<WriteRecord[]> {
    const now = this.now();
    const recovered = await this.store.recoverRunning(nodeId, now, now + this.checkBase());
    for (const write of recovered) {
      const tool = this.toolForWrite(write);
      await this.tell(write, tool);
      if (write.state === "unknown" && tool && !tool.hasStatus) await this.markFollowUp(write);
    }
    // Then the turns that node owed (after its writes are unknown, so a resumed turn sees where they stand).
    await this.recoverTurns(nodeId);
    return recovered;
  }

  /**
   * Turns owed by `nodeId` (its process was killed, or it was lost, mid-turn) are claimed by this node in
   * the store (compare-and-set: of several survivors each turn goes to one) and run again in the
   * background, each after what is queued for its conversation. Returns how many were claimed.
   */
  async recoverTurns(nodeId: string = this.nodeId): Promise<number> {
    let claimed = 0;
    for (;;) {
      const owed = await this.store.claimOwedTurns(nodeId, this.nodeId, OWED_TURN_CLAIM_LIMIT);
      claimed += owed.length;
      for (const turn of owed) {
        this.log("warn", "resuming a turn that was interrupted", { conversationId: turn.conversationId, lostNodeId: nodeId });
        void this.serial(turn.conversationId, () => this.resumeTurn(turn.conversationId, turn.seq)).catch((error: unknown) =>
          this.log("error", "an interrupted turn could not be resumed", { conversationId: turn.conversationId, error: String(error) }),
        );
      }
      // The same node id at restart: what it claimed stays owed by it, so one pass takes them all.
      if (owed.length < OWED_TURN_CLAIM_LIMIT || nodeId === this.nodeId) return claimed;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.checkTimer) clearTimeout(this.checkTimer);
    await this.proposalSweep.stop();
    await this.fileRetention.stop();
    for (const pending of this.elicitations.values()) pending.resolve({ action: "cancel" });
    this.elicitations.clear();
    await this.idle();
  }

  /** Resolves when no turn, confirm or status check started so far is still running. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    void promise.finally(() => this.inFlight.delete(promise)).catch(() => undefined);
    return promise;
  }

  /** Run fn after everything queued for the conversation (turns of one conversation never interleave in this process). */
  private serial<T>(conversationId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(conversationId) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.queues.set(conversationId, settled);
    void settled.then(() => {
      if (this.queues.get(conversationId) === settled) this.queues.delete(conversationId);
    });
    return this.track(next);
  }

  private log(level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>): void {
    this.options.log?.(level, message, data);
  }

  private checkBase(): number {
    return this.options.statusCheckBaseMs ?? 5000;
  }

  // ---------------------------------------------------------------- conversations and events

  async openConversation(input: OpenConversation): Promise<ConversationRecord> {
    const release = this.options.releases.get(input.agent);
    if (!release) throw new Error(`openConversation: no release for agent ${input.agent}`);
    const conversation = await this.store.createConversation({
      id: randomId("c", 16),
      agent: release.agent,
      releaseId: release.id,
      channel: input.channel,
      externalId: input.externalId ?? null,
      resumeHash: input.resumeHash ?? null,
      ownerId: input.ownerId,
      subject: input.subject ?? null,
      capabilities: input.capabilities,
      createdAt: this.now(),
    });
    if (release.config.greeting) await this.emit(conversation.id, { type: "text", id: randomId("m"), from: "agent", text: release.config.greeting });
    return conversation;
  }

  /** Store a customer-visible event and notify subscribers (on every node through the bus). */
  async emit(conversationId: string, message: Outbound): Promise<StoredEvent> {
    const event = await this.store.appendEvent(conversationId, message, this.now());
    this.remember(event);
    const published = await this.bus.publish(conversationId, { seq: event.seq });
    if (!published.ok) this.log("warn", "event notice not published; subscribers catch up from the store", { code: published.error.code });
    return event;
  }

  /**
   * Store one step's events and transcript entries in ONE transaction, then remember them and notify
   * subscribers. Nothing in the batch has been shown to anyone or given to the model before this returns.
   */
  private async record(conversationId: string, batch: AppendBatch): Promise<AppendedBatch> {
    const stored = await this.store.append(conversationId, batch, this.now());
    await this.announce(stored);
    return stored;
  }

  /** What a transaction appended (alone, or with a ledger change): remembered, and its subscribers notified. */
  private async announce(stored: AppendedBatch): Promise<void> {
    for (const entry of stored.transcript) this.rememberTranscript(entry);
    for (const event of stored.events) this.remember(event);
    const last = stored.events.at(-1);
    if (last) {
      const published = await this.bus.publish(last.conversationId, { seq: last.seq });
      if (!published.ok) this.log("warn", "event notice not published; subscribers catch up from the store", { code: published.error.code });
    }
  }

  /**
   * Store what a step has waiting (if anything) plus `extra`, in one transaction; the step's carry is emptied.
   * `finish`: the turn ends with this batch and its owed turn is cleared in the same statement.
   */
  private async flushCarry(conversationId: string, carry: Carry, extra: Outbound[] = [], finish?: AppendBatch["finish"]): Promise<AppendedBatch | undefined> {
    const events = carry.events.concat(extra);
    if (events.length === 0 && carry.transcript.length === 0 && !finish) return undefined;
    const transcript = carry.transcript;
    carry.events = [];
    carry.transcript = [];
    return this.record(conversationId, { events, transcript, ...(finish && { finish }) });
  }

  /** Extend the cached transcript of a conversation with a stored entry, when it follows the cached ones. */
  private rememberTranscript(entry: TranscriptEntry): void {
    const cached = this.transcripts.get(entry.conversationId);
    if (!cached) {
      if (entry.seq === 1) this.cacheTranscript(entry.conversationId, this.holdTranscript({ lastSeq: 0, messages: [], dropped: 0, chars: 0 }, [entry.message]));
      return;
    }
    if (cached.lastSeq !== entry.seq - 1) return; // a gap (another node appended): the next read tops it up from the store
    this.transcriptChars -= cached.chars;
    this.holdTranscript(cached, [entry.message]);
    this.transcriptChars += cached.chars;
    this.boundTranscripts(entry.conversationId);
  }

  private transcriptBudget(): number {
    return this.options.transcriptBudgetChars ?? TRANSCRIPT_BUDGET_DEFAULT_CHARS;
  }

  /**
   * Append stored messages (the next seqs) to a cached copy, then cut it back to what the window can use when it
   * holds twice the budget (so the cut, which reads the copy, happens once per budget's worth of messages).
   */
  private holdTranscript(cached: CachedTranscript, messages: readonly ModelMessage[]): CachedTranscript {
    for (const message of messages) {
      cached.messages.push(message);
      cached.chars += messageCost(message);
    }
    cached.lastSeq += messages.length;
    const budget = this.transcriptBudget();
    if (cached.chars > 2 * budget) {
      const start = windowStart(cached.messages, budget);
      if (start > 0) {
        // A new array: a caller may still hold the old one for the step it is sending.
        cached.messages = cached.messages.slice(start);
        cached.dropped += start;
        cached.chars = 0;
        for (const message of cached.messages) cached.chars += messageCost(message);
      }
    }
    return cached;
  }

  private cacheTranscript(conversationId: string, cached: CachedTranscript): void {
    const previous = this.transcripts.get(conversationId);
    if (previous) this.transcriptChars -= previous.chars;
    this.transcripts.delete(conversationId); // re-inserted: most recent last
    this.transcripts.set(conversationId, cached);
    this.transcriptChars += cached.chars;
    this.boundTranscripts(conversationId);
  }

  /** Drop the least recent conversations' copies past the count or the total size (never `keep`, the one just used). */
  private boundTranscripts(keep: string): void {
    for (const [id, cached] of this.transcripts) {
      if (this.transcripts.size <= RECENT_CONVERSATIONS && this.transcriptChars <= (this.options.transcriptCacheChars ?? TRANSCRIPT_CACHE_MAX_CHARS)) return;
      if (id === keep) continue;
      this.transcripts.delete(id);
      this.transcriptChars -= cached.chars;
    }
  }

  /** What the transcript cache holds now: conversations, messages and their cost (for tests and metrics). */
  transcriptCacheSize(): { conversations: number; messages: number; chars: number } {
    let messages = 0;
    for (const cached of this.transcripts.values()) messages += cached.messages.length;
    return { conversations: this.transcripts.size, messages, chars: this.transcriptChars };
  }

  /**
   * The model transcript of a conversation as stored up to (at least) `conversation.lastTranscriptSeq`, as far
   * back as the window can use (`earlier`: how many older messages are not held): from memory when the cache is
   * that current, else topped up (or read whole) from the store.
   */
  private async transcriptOf(conversation: ConversationRecord): Promise<{ messages: readonly ModelMessage[]; earlier: number }> {
    const cached = this.transcripts.get(conversation.id);
    if (cached && cached.lastSeq >= conversation.lastTranscriptSeq) return { messages: cached.messages, earlier: cached.dropped };
    const after = cached?.lastSeq ?? 0;
    const entries = await this.store.listTranscript(conversation.id, after);
    let current = this.transcripts.get(conversation.id);
    if (current && current.lastSeq !== after) current = undefined; // changed meanwhile: rebuild below
    if (!current && after > 0) return this.reloadTranscript(conversation.id);
    if (entries.some((entry, index) => entry.seq !== after + index + 1)) return this.reloadTranscript(conversation.id);
    const held = current ? { ...current, messages: current.messages.slice() } : { lastSeq: 0, messages: [], dropped: 0, chars: 0 };
    this.holdTranscript(held, entries.map((entry) => entry.message));
    this.cacheTranscript(conversation.id, held);
    return { messages: held.messages, earlier: held.dropped };
  }

  private async reloadTranscript(conversationId: string): Promise<{ messages: readonly ModelMessage[]; earlier: number }> {
    const entries = await this.store.listTranscript(conversationId);
    const held = this.holdTranscript({ lastSeq: 0, messages: [], dropped: 0, chars: 0 }, entries.map((entry) => entry.message));
    held.lastSeq = entries.at(-1)?.seq ?? 0;
    this.cacheTranscript(conversationId, held);
    return { messages: held.messages, earlier: held.dropped };
  }

  /** Keep the latest events of recently active conversations, contiguous by seq, so delivery rarely reads the store. */
  private remember(event: StoredEvent): void {
    let recent = this.recentEvents.get(event.conversationId);
    if (!recent || recent.at(-1)!.seq !== event.seq - 1) recent = [];
    else this.recentEvents.delete(event.conversationId); // re-inserted below: most recent last
    recent.push(event);
    if (recent.length > RECENT_EVENTS_PER_CONVERSATION) recent.shift();
    this.recentEvents.set(event.conversationId, recent);
    if (this.recentEvents.size > RECENT_CONVERSATIONS) this.recentEvents.delete(this.recentEvents.keys().next().value!);
  }

  /** Stored events with seq > after, in order: from memory when it holds all of them, else from the store. */
  async eventsAfter(conversationId: string, after: number, limit = 200): Promise<StoredEvent[]> {
    const recent = this.recentEvents.get(conversationId);
    if (recent && recent[0]!.seq <= after + 1) {
      const last = recent.at(-1)!.seq;
      if (last <= after) {
        // Memory may lag another node's appends: only trust it when the store agrees there is nothing newer.
        return this.store.listEvents(conversationId, after, limit);
      }
      return recent.filter((event) => event.seq > after).slice(0, limit);
    }
    return this.store.listEvents(conversationId, after, limit);
  }

  /** Listen for "events up to seq N are stored" on one conversation. */
  subscribe(conversationId: string, listener: (seq: number) => void): Unsubscribe {
    return this.bus.subscribe(conversationId, (_id, notice) => listener(notice.seq));
  }

  onTyping(listener: (conversationId: string, on: boolean) => void): () => void {
    this.typingListeners.add(listener);
    return () => this.typingListeners.delete(listener);
  }

  private typing(conversationId: string, on: boolean): void {
    for (const listener of this.typingListeners) listener(conversationId, on);
  }

  private async note(conversationId: string, content: string): Promise<void> {
    this.rememberTranscript(await this.store.appendTranscript(conversationId, { role: "system", content }, this.now()));
  }

  private releaseOf(conversation: ConversationRecord): AgentRelease | undefined {
    const current = this.options.releases.get(conversation.agent);
    return current;
  }

  private toolForWrite(write: Pick<WriteRecord, "packageVersionId" | "tool" | "modelName">): EngineTool | undefined {
    for (const release of this.options.releases.list()) {
      const tool = release.tools.find((candidate) => candidate.packageVersionId === write.packageVersionId && candidate.tool === write.tool);
      if (tool) return tool;
    }
    return undefined;
  }

  // ---------------------------------------------------------------- inbound

  /**
   * One customer action from the customer's own client. `ownerId` is the connection owner (resume-token
   * holder or channel identity); only `confirm` from that owner runs a write. Typed text never does.
   * `recorded` is called once a confirm or decline is recorded, before the write runs and the model's next
   * turn (the widget acks the decision then; the outcome follows as events).
   */
  async handle(conversationId: string, ownerId: string, inbound: Inbound, source?: InboundSource, recorded?: () => void): Promise<EngineResult> {
    const owner = await this.ownerOf(conversationId);
    if (owner === undefined) return fail("conversation_not_found", "conversationId", "no such conversation");
    if (owner !== ownerId) return fail("not_conversation_owner", "", "this connection does not own the conversation");
    // A platform event (MessageSid, mid) is accepted once, atomically in the store, right before it acts:
    // its redelivery, or its replay after a crash, gets no second turn.
    const once = (act: () => Promise<EngineResult>) => async (): Promise<EngineResult> => {
      if (source && !(await this.store.claimInboundSource(source.sourceId, conversationId, this.now()))) {
        this.log("info", "inbound event already accepted; not processed again", { conversationId, sourceId: source.sourceId });
        return { ok: true };
      }
      return act();
    };
    switch (inbound.type) {
      case "answer":
        return once(() => this.answer(conversationId, inbound))();
      case "message":
        return this.serial(conversationId, once(() => this.customerMessage(conversationId, inbound.text)));
      case "confirm":
      case "decline":
        return this.serial(conversationId, once(() => this.decideProposal(conversationId, ownerId, inbound, recorded)));
    }
  }

  private async customerMessage(conversationId: string, text: string): Promise<EngineResult> {
    // The event and the transcript entry in one transaction, which also reads the conversation as it now
    // stands and records the turn this node owes the message (a restart or a survivor runs it if this dies).
    const { conversation, transcript } = await this.record(conversationId, {
      events: [{ type: "text", id: randomId("m"), from: "customer", text }],
      transcript: [{ role: "user", content: text }],
      owedBy: this.nodeId,
    });
    const seq = transcript[0]!.seq;
    // The turn's last append clears what it owes; a turn that ended by throwing (the store away) stays owed,
    // for a restart or a survivor. The team holds the conversation: the agent stays silent, nothing is owed.
    if (!conversation.handoff) await this.runTurn(conversation, true, seq);
    else await this.store.finishTurn(conversationId, this.nodeId, seq);
    return { ok: true };
  }

  /**
   * Run again a turn that was interrupted (its node was killed mid-turn), from where its stored steps end. A
   * tool call of the last stored step without a stored result did not finish: a write it stored is never
   * run again, the model is told where it stands (a proposal not yet shown is shown, and ends the turn as it
   * would have); any other call is recorded as interrupted (its progress ended), and the model continues.
   * A turn that had finished (its last stored step answered, proposed or handed off) is not run again.
   */
  private async resumeTurn(conversationId: string, seq: number): Promise<void> {
    const conversation = await this.store.getConversation(conversationId);
    const release = conversation && this.releaseOf(conversation);
    if (!conversation || !release) return;
    const entries = await this.store.listTranscript(conversationId, seq - 1);
    if (entries[0]?.seq !== seq || entries[0].message.role !== "user") {
      await this.store.finishTurn(conversationId, this.nodeId, seq);
      return;
    }
    const steps = entries.slice(1);
    const stepAt = steps.findLastIndex((entry) => entry.message.role === "assistant");
    const step = steps[stepAt];
    const calls = step?.message.role === "assistant" ? (step.message.toolCalls ?? []) : [];
    const answered = new Set(steps.slice(stepAt + 1).flatMap((entry) => (entry.message.role === "tool" ? [entry.message.toolCallId] : [])));
    const endedBy = (content: string) => content.startsWith(PROPOSED_PREFIX) || content.startsWith(HANDED_OFF_PREFIX);
    let finished = step !== undefined && calls.length === 0; // the model's answer is stored
    for (const entry of steps.slice(stepAt + 1)) if (entry.message.role === "tool" && endedBy(entry.message.content)) finished = true;
    const carry: Carry = { events: [], transcript: [] };
    const missing = calls.filter((call) => !answered.has(call.id));
    if (!finished && missing.length > 0) {
      const writes = await this.store.listWrites(conversationId);
      const recent = await this.store.listEvents(conversationId, Math.max(0, conversation.lastSeq - RESUME_EVENTS_LOOKBACK));
      for (const call of missing) {
        const write = writes.find((candidate) => candidate.callId === call.id && candidate.createdAt >= step!.at);
        if (write) {
          const tool = this.toolForWrite(write);
          if (write.state === "proposed") {
            finished = true;
            const shown = recent.some((event) => event.message.type === "review" && event.message.proposalId === write.id);
            if (!shown && tool) {
              const card = reviewCard(tool, write.args, conversation.capabilities);
              carry.events.push({ type: "review", id: randomId("m"), proposalId: write.id, tool: tool.ref, title: card.title, fields: card.fields, state: "proposed" });
            }
            carry.transcript.push({ role: "tool", toolCallId: call.id, name: call.name, content: proposedNote(write.toolRef, write.id) });
          } else {
            carry.transcript.push({ role: "tool", toolCallId: call.id, name: call.name, content: modelNote(write) });
          }
          continue;
        }
        if (call.name === HANDOFF_TOOL && conversation.handoff) {
          finished = true;
          carry.transcript.push({ role: "tool", toolCallId: call.id, name: call.name, content: HANDED_OFF_NOTE });
          continue;
        }
        const started = recent.some((event) => event.message.type === "progress" && event.message.callId === call.id && event.message.state === "start");
        const ended = recent.some((event) => event.message.type === "progress" && event.message.callId === call.id && event.message.state === "end");
        const tool = findTool(release, call.name);
        if (started && !ended && tool) carry.events.push(progressEvent(tool, call.id, "end"));
        carry.transcript.push({ role: "tool", toolCallId: call.id, name: call.name, content: INTERRUPTED_NOTE });
      }
    }
    const finish = { nodeId: this.nodeId, seq };
    if (finished) {
      await this.flushCarry(conversationId, carry, [], finish);
      return;
    }
    const stored = await this.flushCarry(conversationId, carry);
    const current = stored?.conversation ?? (await this.store.getConversation(conversationId))!;
    if (!current.handoff) await this.runTurn(current, true, seq);
    else await this.store.finishTurn(conversationId, this.nodeId, seq);
  }

  private async decideProposal(conversationId: string, ownerId: string, inbound: Extract<Inbound, { type: "confirm" | "decline" }>, recorded?: () => void): Promise<EngineResult> {
    const conversation = (await this.store.getConversation(conversationId))!;
    const write = await this.store.getWrite(inbound.proposalId);
    // A proposal of another conversation is not visible here: refused exactly like a missing one.
    if (!write || write.conversationId !== conversationId) return fail("proposal_not_found", "proposalId", "no such proposal in this conversation");
    const tool = this.toolForWrite(write);
    if (!tool) return fail("tool_unavailable", "proposalId", "the tool of this proposal is no longer available");
    const actor: Actor = { ownerId, subjectId: conversation.subject?.id ?? null };
    if (proposalExpired(write, this.now(), this.proposalTtl())) {
      await this.apply(write, tool, { type: "expire" });
      return fail("proposal_expired", "proposalId", "this proposal expired; ask the agent again");
    }
    if (inbound.type === "decline") {
      const decision = decide(write, { type: "decline", actor });
      if (!decision.ok) return fail(decision.code, "proposalId", decision.message);
      const declined = await this.apply(write, tool, { type: "decline", actor });
      if (!declined) return fail("proposal_not_open", "proposalId", "this proposal was already decided");
      recorded?.();
      if (!conversation.handoff) await this.runTurn(conversation);
      return { ok: true };
    }
    const decision = decide(write, { type: "confirm", actor });
    if (!decision.ok) return fail(decision.code, "proposalId", decision.message);
    const edited = applyEdits(tool, write.args, inbound.edits, conversation.capabilities);
    if (!edited.ok) return { ok: false, error: edited.error };
    const confirmed = await this.store.transitionWrite(
      write.id,
      { states: ["proposed"] },
      { state: "confirmed", finalArgs: edited.args, idempotencyKey: randomId("ik", 32), nodeId: this.nodeId, note: "confirmed by the customer" },
      this.now(),
    );
    // Two confirms (double click, two tabs): the compare-and-set lets exactly one through.
    if (!confirmed) return fail("proposal_not_open", "proposalId", "this proposal was already decided");
    recorded?.();
    await this.runWrite(confirmed, tool, conversation);
    const after = (await this.store.getConversation(conversationId))!;
    if (!after.handoff) await this.runTurn(after);
    return { ok: true };
  }

  /** A customer verified (identity token, or a channel identity): cancel other customers' proposals, resume step-ups. */
  async verify(conversationId: string, subject: CallSubject): Promise<EngineResult> {
    return this.serial(conversationId, async () => {
      const conversation = await this.store.getConversation(conversationId);
      if (!conversation) return fail("conversation_not_found", "conversationId", "no such conversation");
      await this.store.setSubject(conversationId, subject);
      await this.note(conversationId, `The customer is verified (level ${subject.level}).`);
      const updated = (await this.store.getConversation(conversationId))!;
      for (const write of await this.store.listWrites(conversationId)) {
        if (stepUpExpired(write, this.now(), this.proposalTtl())) {
          // Verified too late: it expires (nothing was applied) rather than running long after it was asked for.
          await this.expireWrite(write);
          continue;
        }
        const satisfies = write.stepUp ? satisfiesStepUp(subject, write.stepUp, new Date(this.now())) : false;
        const decision = decide(write, { type: "verified", subjectId: subject.id, satisfiesStepUp: satisfies });
        if (!decision.ok) continue;
        const tool = this.toolForWrite(write);
        if (!tool) continue;
        if (decision.to === "running") {
          const running = await this.store.transitionWrite(write.id, { states: ["step_up_required"] }, { state: "running", stepUp: null, nodeId: this.nodeId, note: "step-up satisfied" }, this.now());
          if (running) await this.runWrite(running, tool, updated, true);
        } else {
          await this.apply(write, tool, { type: "verified", subjectId: subject.id, satisfiesStepUp: satisfies });
        }
      }
      return { ok: true } as EngineResult;
    });
  }

  /**
   * Replace a web conversation's resume token hash (the visitor signed in or stepped up): only if it is still
   * `from`, so of two rotations one wins; the old token no longer resumes the conversation.
   */
  rotateResume(conversationId: string, from: string, to: string): Promise<boolean> {
    return this.store.rotateResumeHash(conversationId, from, to);
  }

  /** Whether `resumeHash` is still the conversation's (not replaced since a connection joined with it). */
  async resumeCurrent(conversationId: string, resumeHash: string): Promise<boolean> {
    return (await this.store.getConversation(conversationId))?.resumeHash === resumeHash;
  }

  /** A conversation's owner (it never changes): remembered for recent conversations, else read from the store. */
  private async ownerOf(conversationId: string): Promise<string | undefined> {
    const known = this.owners.get(conversationId);
    if (known !== undefined) return known;
    const conversation = await this.store.getConversation(conversationId);
    if (!conversation) return undefined;
    this.owners.set(conversationId, conversation.ownerId);
    if (this.owners.size > RECENT_OWNERS) this.owners.delete(this.owners.keys().next().value!);
    return conversation.ownerId;
  }

  private async answer(conversationId: string, inbound: Extract<Inbound, { type: "answer" }>): Promise<EngineResult> {
    const pending = this.elicitations.get(inbound.elicitationId);
    // A question waits in the memory of the node whose tool asked it: an answer arriving at another node
    // (the connection moved) is refused clearly; the asking node cancels the question when it times out.
    if (!pending || pending.conversationId !== conversationId) return fail("question_not_open", "elicitationId", "no open question with this id on this server (it was answered, timed out, or waits on another node); ask again");
    if (inbound.action !== "accept") {
      this.elicitations.delete(inbound.elicitationId);
      pending.resolve({ action: inbound.action });
      return { ok: true };
    }
    const content = inbound.content ?? {};
    const issues = validateAgainst(pending.schema, content);
    if (issues.length > 0) return fail("answer_invalid", `content${issues[0]!.path ? `.${issues[0]!.path}` : ""}`, issues[0]!.message);
    this.elicitations.delete(inbound.elicitationId);
    pending.resolve({ action: "accept", content });
    return { ok: true };
  }

  // ---------------------------------------------------------------- turns

  private modelFor(release: AgentRelease): Model {
    return typeof this.options.model === "function" ? this.options.model(release) : this.options.model;
  }

  private modelTools(release: AgentRelease, conversation: ConversationRecord): ModelTool[] {
    const tools: ModelTool[] = release.tools.map((tool) => ({ name: tool.modelName, description: tool.description, parameters: modelParameters(tool) }));
    if (release.config.channels[conversation.channel]?.handoff) {
      tools.push({
        name: HANDOFF_TOOL,
        description: "Hand the conversation to a person on the team when the customer asks for one or you cannot help.",
        parameters: { type: "object", properties: { reason: { type: "string", maxLength: 500 } }, additionalProperties: false },
      });
    }
    return tools;
  }

  /**
   * A turn: model steps until the model answers without tool calls. Each step's results (the model's reply,
   * a read's progress end and result, the tool entry) are stored in one transaction before anything acts
   * on them; `fresh` says the caller's record was read in the transaction that stored the customer's input.
   */
  private async runTurn(conversation: ConversationRecord, fresh = false, owedSeq?: number): Promise<void> {
    const release = this.releaseOf(conversation);
    if (!release) return;
    const model = this.modelFor(release);
    const turnId = randomId("t");
    const carry: Carry = { events: [], transcript: [] };
    const finish = owedSeq !== undefined ? { nodeId: this.nodeId, seq: owedSeq } : undefined;
    let ended = false;
    this.typing(conversation.id, true);
    try {
      await this.turnSteps(conversation, release, model, turnId, carry, fresh, owedSeq);
      ended = true;
    } finally {
      // A turn that ends (answer, end of turn, step limit, or a failure) stores what it has not stored yet; one
      // that ended without throwing also clears what it owed, in the same statement.
      try {
        await this.flushCarry(conversation.id, carry, [], ended ? finish : undefined);
      } finally {
        this.typing(conversation.id, false);
      }
    }
  }

  /** The model steps of a turn (runTurn stores what they leave in the carry). */
  private async turnSteps(conversation: ConversationRecord, release: AgentRelease, model: Model, turnId: string, carry: Carry, fresh: boolean, owedSeq: number | undefined): Promise<void> {
    {
      for (let step = 0; step < (this.options.maxModelSteps ?? 8); step++) {
        // The previous step's results are stored first; that transaction reads the conversation too.
        const stored = await this.flushCarry(conversation.id, carry);
        const current = stored?.conversation ?? (step === 0 && fresh ? conversation : (await this.store.getConversation(conversation.id))!);
        if (current.handoff) return;
        // The turn owed to a customer message stops once it is no longer this node's: this node stalled and
        // another took it over, or a newer message on another node owes the next turn (which sees this one's steps).
        if (owedSeq !== undefined && (current.owedTurn?.nodeId !== this.nodeId || current.owedTurn.seq !== owedSeq)) {
          this.log("warn", "a turn no longer owed by this node stops", { conversationId: conversation.id, owedTurn: current.owedTurn });
          return;
        }
        const transcript = await this.transcriptOf(current);
        const verified = current.subject ? `The customer is verified (level ${current.subject.level}).` : "The customer is not verified.";
        const messages: ModelMessage[] = [{ role: "system", content: `${release.config.instructions}\n\n${verified}` }, ...transcriptWindow(transcript.messages, this.transcriptBudget(), transcript.earlier)];
        let text = "";
        const calls: ModelToolCall[] = [];
        let failed: string | undefined;
        for await (const part of model.stream({ messages, tools: this.modelTools(release, current) })) {
          if (part.type === "text-delta") text += part.text;
          else if (part.type === "tool-call") calls.push(part.call);
          else if (part.type === "error") failed = `${part.code}: ${part.message}`;
        }
        if (failed) {
          this.log("error", "model failed", { conversationId: conversation.id, error: failed });
          carry.events.push({ type: "text", id: randomId("m"), from: "system", text: "Sorry, I could not answer just now. Please try again." });
          return;
        }
        carry.transcript.push({ role: "assistant", content: text, ...(calls.length > 0 && { toolCalls: calls }) });
        if (text.trim()) carry.events.push({ type: "text", id: randomId("m"), from: "agent", text });
        if (calls.length === 0) return;
        let endTurn = false;
        for (const call of calls) {
          const outcome = await this.toolCall(current, release, turnId, call, carry);
          // A proposal stored its tool entry with the write itself.
          if (!outcome.stored) carry.transcript.push({ role: "tool", toolCallId: call.id, name: call.name, content: outcome.modelText });
          if (outcome.endTurn) endTurn = true;
        }
        if (endTurn) return;
      }
    }
  }

  /** One tool call of the model: a read runs at once, a write becomes a proposal (or runs, with confirmation none). */
  private async toolCall(
    conversation: ConversationRecord,
    release: AgentRelease,
    turnId: string,
    call: ModelToolCall,
    carry: Carry,
  ): Promise<ToolCallOutcome> {
    if (call.name === HANDOFF_TOOL && release.config.channels[conversation.channel]?.handoff) {
      await this.flushCarry(conversation.id, carry);
      await this.handOff(conversation, release, handoffReason(call.arguments));
      return { modelText: HANDED_OFF_NOTE, endTurn: true };
    }
    const tool = findTool(release, call.name);
    if (!tool) return { modelText: `tool_unknown: there is no tool named ${call.name}.` };
    let args: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(call.arguments || "{}");
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
      args = parsed as Record<string, unknown>;
    } catch {
      return { modelText: "arguments_invalid: the arguments must be one JSON object." };
    }
    const subjectPolicy = tool.policy.subject;
    if (subjectPolicy?.selector && subjectPolicy.selector in args) {
      return { modelText: `selector_refused: ${subjectPolicy.selector} is filled by Caplo from the verified customer; leave it out.` };
    }
    if (subjectPolicy && !conversation.subject) {
      await this.flushCarry(conversation.id, carry, [{ type: "step_up", id: randomId("m"), level: "low", text: "Please verify your identity so I can help with that." }]);
      return { modelText: "customer_not_verified: this tool acts for a verified customer; the customer has been asked to verify. Try again after they have." };
    }
    if (tool.policy.effect === "read") return this.runRead(conversation, tool, turnId, call, args, carry);
    return this.proposeWrite(conversation, tool, turnId, call, args, carry);
  }

  private withSelector(tool: EngineTool, args: Record<string, unknown>, subject: CallSubject | null): Record<string, unknown> {
    const selector = tool.policy.subject?.selector;
    if (!selector || !subject?.ref) return args;
    return { ...args, [selector]: subject.ref };
  }

  private secrets(packageVersionId: string): Record<string, string> {
    return this.options.secrets?.(packageVersionId) ?? {};
  }


  /**
   * A read runs at once. Its progress start is stored (with what the step had waiting) before the runner is
   * called; its progress end, result and step-up notice join the carry, stored before the next action.
   */
  private async runRead(
    conversation: ConversationRecord,
    tool: EngineTool,
    turnId: string,
    call: ModelToolCall,
    args: Record<string, unknown>,
    carry: Carry,
  ): Promise<{ modelText: string }> {
    await this.flushCarry(conversation.id, carry, [progressEvent(tool, call.id, "start")]);
    let result;
    try {
      result = await this.options.runner.call({
        packageVersionId: tool.packageVersionId,
        tool: tool.tool,
        args, // the runner fills the subject selector itself
        context: {
          invocationId: randomId("inv"),
          conversationId: conversation.id,
          turnId,
          ...(tool.policy.subject && conversation.subject && { subject: conversation.subject }),
          secrets: this.secrets(tool.packageVersionId),
        },
        ...(this.canElicit(conversation, tool) && { elicit: (request: ElicitRequest) => this.elicit(conversation, tool, request) }),
      });
    } catch (error) {
      carry.events.push(progressEvent(tool, call.id, "end"));
      this.log("error", "read failed in the runner", { tool: tool.ref, error: String(error) });
      return { modelText: "tool_failed: the tool could not run." };
    }
    carry.events.push(progressEvent(tool, call.id, "end"));
    if (result.stepUp) {
      carry.events.push(stepUpEvent(result.stepUp, undefined));
      return { modelText: `step_up_required: the customer must verify at level ${result.stepUp.level}${result.stepUp.maxAuthAgeSeconds !== undefined ? ` within ${result.stepUp.maxAuthAgeSeconds} seconds` : ""}; they have been told. Nothing was looked up.` };
    }
    if (result.isError) return { modelText: `error: ${result.modelText}` };
    const shown = projectResult(tool, result.structuredContent, randomId("m"), call.id);
    if (shown) carry.events.push(shown);
    let modelText = result.modelText;
    if (result.files.length > 0) {
      await this.flushCarry(conversation.id, carry);
      modelText += await this.deliverFiles(conversation, result.files);
    }
    return { modelText };
  }

  /** Files a read returned: kept and shown as downloads where the channel can; the model is told either way and never sees the bytes. */
  private async deliverFiles(conversation: ConversationRecord, files: DeliveredFile[]): Promise<string> {
    if (!conversation.capabilities.files) return `\n[${files.length} file(s) were not delivered: this channel cannot receive files.]`;
    const delivered: string[] = [];
    for (const file of files) {
      const mimeType = FILE_TYPES.find((type) => type === file.mimeType);
      if (!mimeType) continue;
      const id = randomId("f", 24);
      await this.store.putFile({ id, conversationId: conversation.id, name: file.name, mimeType, size: file.size, bytes: file.bytes, createdAt: this.now() });
      await this.emit(conversation.id, { type: "file", id: randomId("m"), name: file.name, mimeType, size: file.size, url: `${FILES_PATH}/${id}` });
      delivered.push(file.name);
    }
    const skipped = files.length - delivered.length;
    return `\n[${delivered.length} file(s) delivered to the customer as downloads${delivered.length ? `: ${delivered.join(", ")}` : ""}.${skipped ? ` ${skipped} not delivered (type not allowed).` : ""}]`;
  }

  private canElicit(conversation: ConversationRecord, tool: EngineTool): boolean {
    const elicitation = tool.policy.effect === "read" ? tool.policy.elicitation : undefined;
    if (!elicitation) return false;
    return elicitation.style === "questions" ? conversation.capabilities.questions : conversation.capabilities.forms;
  }

  private elicit(conversation: ConversationRecord, tool: EngineTool, request: ElicitRequest): Promise<ElicitResponse> {
    const style = tool.policy.effect === "read" && tool.policy.elicitation?.style === "questions" ? "questions" : "form";
    const elicitationId = randomId("q");
    return new Promise<ElicitResponse>((resolve) => {
      const timer = setTimeout(() => {
        if (this.elicitations.delete(elicitationId)) resolve({ action: "cancel" });
      }, this.options.elicitTimeoutMs ?? 120_000);
      timer.unref?.();
      this.elicitations.set(elicitationId, {
        conversationId: conversation.id,
        schema: request.requestedSchema,
        resolve: (response) => {
          clearTimeout(timer);
          resolve(response);
        },
      });
      void this.emit(conversation.id, { type: "question", id: randomId("m"), elicitationId, style, message: request.message, fields: questionFields(request.requestedSchema) });
    });
  }



  // ---------------------------------------------------------------- writes

  private async proposeWrite(
    conversation: ConversationRecord,
    tool: EngineTool,
    turnId: string,
    call: ModelToolCall,
    args: Record<string, unknown>,
    carry: Carry,
  ): Promise<ToolCallOutcome> {
    let writes = await this.store.listWrites(conversation.id);
    const expired = writes.filter((write) => writeExpired(write, this.now(), this.proposalTtl()));
    // A proposal (or a step-up) past its time expires here, so it does not block the conversation for ever.
    for (const write of expired) await this.expireWrite(write);
    if (expired.length > 0) writes = await this.store.listWrites(conversation.id);
    const blocking = blockingWrite(writes);
    if (blocking) return { modelText: blockedMessage(blocking.state, blocking.toolRef) };
    const issues = validateAgainst(tool.inputSchema, this.withSelector(tool, args, conversation.subject));
    if (issues.length > 0) return { modelText: `arguments_invalid: ${issues.map((issue) => `${issue.path || "/"} ${issue.message}`).join("; ")}` };
    const confirmation = tool.policy.effect === "write" ? tool.policy.confirmation : "required";
    const id = randomId("p", 16);
    const card = confirmation === "required" ? reviewCard(tool, args, conversation.capabilities) : undefined;
    // The write, what the step has waiting, its review card and its tool entry: one transaction.
    const batch: AppendBatch = {
      events: card ? [...carry.events, { type: "review", id: randomId("m"), proposalId: id, tool: tool.ref, title: card.title, fields: card.fields, state: "proposed" }] : carry.events,
      transcript: card ? [...carry.transcript, { role: "tool", toolCallId: call.id, name: call.name, content: proposedNote(tool.ref, id) }] : carry.transcript,
    };
    const proposed = await this.store.proposeWrite(
      {
        id,
        conversationId: conversation.id,
        turnId,
        callId: call.id,
        toolRef: tool.ref,
        modelName: tool.modelName,
        packageVersionId: tool.packageVersionId,
        tool: tool.tool,
        args,
        state: "proposed",
        confirmation,
        ownerId: conversation.ownerId,
        subjectId: conversation.subject?.id ?? null,
        createdAt: this.now(),
      },
      batch,
    );
    // Another node stored a write in this conversation since the check above: the store kept only one (and nothing of this batch).
    if (!proposed.ok) {
      const other = blockingWrite(await this.store.listWrites(conversation.id));
      return { modelText: other ? blockedMessage(other.state, other.toolRef) : "write_blocked: another write of this conversation was started at the same moment and has just ended; you may try again." };
    }
    carry.events = [];
    carry.transcript = [];
    if (proposed.appended) await this.announce(proposed.appended);
    if (confirmation === "none") {
      const confirmed = await this.store.transitionWrite(
        id,
        { states: ["proposed"] },
        { state: "confirmed", finalArgs: args, idempotencyKey: randomId("ik", 32), nodeId: this.nodeId, note: "confirmation: none" },
        this.now(),
      );
      const done = await this.runWrite(confirmed!, tool, conversation, false);
      return { modelText: modelNote(done ?? confirmed!) };
    }
    return { modelText: proposedNote(tool.ref, id), endTurn: true, stored: true };
  }

  /**
   * Run a confirmed write (or re-run one after step-up) with exactly its final arguments and its key, and
   * record the outcome. The `running` transition is stored, with the progress the customer sees, before the
   * runner is called.
   */
  private async runWrite(write: WriteRecord, tool: EngineTool, conversation: ConversationRecord, noteToModel = true): Promise<WriteRecord | undefined> {
    const start: AppendBatch = { events: [progressEvent(tool, write.callId, "start")] };
    let running: WriteRecord | undefined = write;
    if (write.state === "confirmed") {
      const changed = await this.store.changeWrite(write.id, { states: ["confirmed"] }, { state: "running", nodeId: this.nodeId, note: "sent to the tool" }, this.now(), start);
      if (changed?.appended) await this.announce(changed.appended);
      running = changed?.write;
    } else {
      await this.record(conversation.id, start); // made running by its step-up
    }
    if (!running) return undefined;
    let outcome: WriteOutcome;
    try {
      const result = await this.options.runner.call({
        packageVersionId: running.packageVersionId,
        tool: running.tool,
        args: running.finalArgs ?? running.args, // the runner fills the subject selector itself
        context: {
          invocationId: randomId("inv"),
          conversationId: conversation.id,
          turnId: running.turnId,
          idempotencyKey: running.idempotencyKey!,
          ...(tool.policy.subject && conversation.subject && { subject: conversation.subject }),
          secrets: this.secrets(running.packageVersionId),
        },
      });
      outcome =
        result.outcome ??
        (result.stepUp
          ? { outcome: "step_up_required", stepUp: result.stepUp }
          : result.isError
            ? { outcome: "unknown", reason: result.modelText }
            : { outcome: "applied", text: result.modelText, ...(result.structuredContent && { structuredContent: result.structuredContent }) });
    } catch (error) {
      outcome = { outcome: "unknown", reason: `the runner failed: ${error instanceof Error ? error.message : String(error)}` };
    }
    return this.recordOutcome(running, tool, outcome, noteToModel);
  }

  /**
   * The outcome of a write is known only here, in memory: if the store is away (PostgreSQL restarting),
   * keep trying to record it, with a growing gap, rather than leave the write `running`. If this node
   * dies first, another takes it over (unknown, then a status check); its compare-and-set then fails here.
   * The progress end, the outcome and what the model is told are stored with the transition.
   */
  private async recordOutcome(running: WriteRecord, tool: EngineTool, outcome: WriteOutcome, noteToModel: boolean): Promise<WriteRecord | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.apply(running, tool, { type: "finished", outcome }, noteToModel, [progressEvent(tool, running.callId, "end")]);
      } catch (error) {
        if (this.stopped || attempt >= 60 || !storeUnreachable(error)) throw error;
        if (attempt === 0) this.log("warn", "a write's outcome could not be stored yet; retrying", { writeId: running.id, error: String(error) });
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 100 * 2 ** attempt)));
      }
    }
  }

  /**
   * Store a decision's ledger change (compare-and-set from the write's current state) together with what
   * announces it (its effects: the outcome event, the note to the model, the step-up request), in one transaction.
   */
  private async apply(write: WriteRecord, tool: EngineTool, event: PolicyEvent, noteToModel = true, before: Outbound[] = []): Promise<WriteRecord | undefined> {
    const decision = decide(write, event);
    if (!decision.ok) return undefined;
    const now = this.now();
    const change = ledgerChange(write, event, decision, { now, checkBaseMs: this.checkBase(), hasStatus: tool.hasStatus });
    const after = changedWrite(write, change, now);
    const batch: AppendBatch & { events: Outbound[]; transcript: ModelMessage[] } = { events: [...before], transcript: [] };
    for (const effect of decision.effects) {
      if (effect.type === "tell") this.addTell(batch, after, tool, noteToModel);
      if (effect.type === "ask_step_up") {
        // The review card learns its write waits for the customer to verify again (not "confirming" forever).
        this.addTell(batch, after, tool, false);
        batch.events.push(stepUpEvent(effect.stepUp, after.id));
        if (noteToModel) batch.transcript.push({ role: "system", content: modelNote(after) });
      }
    }
    const expect = { states: [write.state] as const, ...(event.type === "checked" && { checkCount: write.checkCount }) };
    const announced = batch.events.length > 0 || batch.transcript.length > 0;
    const changed = await this.store.changeWrite(write.id, expect, change, now, announced ? batch : undefined);
    if (!changed) {
      // Another node changed the write first (and tells the customer where it stands): the progress this node
      // showed still ends.
      if (before.length > 0) await this.record(write.conversationId, { events: before });
      return undefined;
    }
    if (changed.appended) await this.announce(changed.appended);
    return changed.write;
  }

  /** The outcome event (and the note to the model) telling where a write stands, added to a batch. */
  private addTell(batch: { events: Outbound[]; transcript: ModelMessage[] }, write: WriteRecord, tool: EngineTool | undefined, noteToModel: boolean): void {
    const title = tool?.policy.presentation?.title ?? tool?.tool.replaceAll("_", " ").replace(/^./, (first) => first.toUpperCase()) ?? write.toolRef;
    const receipt = write.state === "applied" && tool && write.result?.outcome === "applied" ? receiptFields(tool, write.result.structuredContent) : undefined;
    batch.events.push({
      type: "outcome",
      id: randomId("m"),
      proposalId: write.id,
      state: write.state === "confirmed" ? "running" : write.state,
      message: customerText(title, write),
      ...(receipt && receipt.length > 0 && { receipt }),
    });
    if (noteToModel) batch.transcript.push({ role: "system", content: modelNote(write) });
  }

  /** Tell the customer (outcome event) and the model (transcript note) where a write stands: one append. */
  private async tell(write: WriteRecord, tool: EngineTool | undefined, noteToModel = true): Promise<void> {
    const batch = { events: [] as Outbound[], transcript: [] as ModelMessage[] };
    this.addTell(batch, write, tool, noteToModel);
    await this.record(write.conversationId, batch);
  }

  private async markFollowUp(write: WriteRecord): Promise<void> {
    await this.store.transitionWrite(write.id, { states: [write.state] }, { state: write.state, followUp: true, nextCheckAt: null, note: "no status check: listed for the team" }, this.now());
  }

  // ---------------------------------------------------------------- proposal expiry

  private proposalTtl(): number {
    return this.options.proposalTtlMs ?? PROPOSAL_TTL_DEFAULT_MS;
  }

  /** Purge the bytes of delivered files past the retention period now (also hourly once started). Returns how many. */
  async purgeExpiredFiles(): Promise<number> {
    return this.fileRetention.purge();
  }

  /** Expire every proposal past its lifetime now (the background sweep calls this). Returns how many this node expired. */
  async expireDueProposals(): Promise<number> {
    return this.proposalSweep.sweep();
  }

  /**
   * Expire one proposal: compare-and-set proposed → expired, then tell the review card and the model. Of
   * several nodes sweeping at once only the one whose transition lands tells anyone.
   */
  private expireProposal(write: WriteRecord): Promise<boolean> {
    return this.serial(write.conversationId, async () => {
      const current = await this.store.getWrite(write.id);
      if (!current || !writeExpired(current, this.now(), this.proposalTtl())) return false;
      return this.expireWrite(current);
    });
  }

  /**
   * Compare-and-set proposed (or step_up_required) → expired, from the state the write was read in; only if
   * it lands are the customer (the review card) and the model told that nothing was done.
   */
  private async expireWrite(write: WriteRecord): Promise<boolean> {
    const decision = decide(write, { type: "expire" });
    if (!decision.ok) return false;
    const note = write.state === "step_up_required" ? "expired: the customer did not verify again in time" : "expired: not decided in time";
    const change: WriteChange = { state: decision.to, note };
    const now = this.now();
    const batch = { events: [] as Outbound[], transcript: [] as ModelMessage[] };
    this.addTell(batch, changedWrite(write, change, now), this.toolForWrite(write), true);
    const expired = await this.store.changeWrite(write.id, { states: [write.state] }, change, now, batch);
    if (!expired) return false;
    if (expired.appended) await this.announce(expired.appended);
    return true;
  }

  // ---------------------------------------------------------------- status checks

  private scheduleChecks(): void {
    if (this.stopped) return;
    this.checkTimer = setTimeout(() => {
      void this.runDueChecks()
        .catch((error) => this.log("error", "status checks failed", { error: String(error) }))
        .finally(() => this.scheduleChecks());
    }, this.options.checkPollMs ?? 1000);
    this.checkTimer.unref?.();
  }

  /** Run every status check that is due now, one at a time per write (the claim is a lease). Returns how many ran. */
  async runDueChecks(): Promise<number> {
    if (this.checking) return 0;
    this.checking = true;
    try {
      const now = this.now();
      const leaseUntil = now + CHECK_LEASE_MS;
      const claimed = await this.store.claimDueChecks(now, leaseUntil, CHECK_CLAIM_LIMIT);
      let ran = 0;
      for (const write of claimed) {
        // One at a time per write: a check starts only if it can end (the tool's timeout and a margin) inside
        // this node's lease. Otherwise another node could claim the write when the lease ends and ask while
        // this one still does; a check that no longer fits (earlier checks were slow) is left, and the write is
        // claimed again when the lease ends.
        const timeoutMs = (this.toolForWrite(write)?.policy.timeoutSeconds ?? TIMEOUT_SECONDS_MAX) * 1000;
        if (leaseUntil - this.now() < timeoutMs + CHECK_LEASE_MARGIN_MS) continue;
        await this.track(this.checkOne(write));
        ran++;
      }
      return ran;
    } finally {
      this.checking = false;
    }
  }

  private async checkOne(write: WriteRecord): Promise<void> {
    const tool = this.toolForWrite(write);
    if (!tool || !tool.hasStatus) {
      await this.markFollowUp(write);
      return;
    }
    const conversation = await this.store.getConversation(write.conversationId);
    let outcome: WriteOutcome;
    try {
      outcome = await this.options.runner.checkStatus({
        packageVersionId: write.packageVersionId,
        tool: write.tool,
        ...(write.operationRef && { operationRef: write.operationRef }),
        context: {
          invocationId: randomId("inv"),
          conversationId: write.conversationId,
          turnId: write.turnId,
          idempotencyKey: write.idempotencyKey!,
          ...(tool.policy.subject && conversation?.subject && { subject: conversation.subject }),
          secrets: this.secrets(write.packageVersionId),
        },
      });
    } catch (error) {
      outcome = { outcome: "unknown", reason: `the status check failed: ${error instanceof Error ? error.message : String(error)}` };
    }
    await this.apply(write, tool, { type: "checked", outcome });
  }

  // ---------------------------------------------------------------- handoff and the team

  private async handOff(conversation: ConversationRecord, release: AgentRelease, reason: string | undefined): Promise<void> {
    const destination = release.config.channels[conversation.channel]?.handoff;
    if (!destination) return;
    await this.store.setHandoff(conversation.id, { state: "requested", queue: destination.queue, at: this.now() });
    await this.emit(conversation.id, {
      type: "handoff",
      id: randomId("m"),
      state: "requested",
      text: destination.message ?? "I've passed this conversation to our team. Someone will reply here.",
    });
    // The team hears of it at the queue's webhook (stored first, sent and retried in the background).
    await this.options.handoffNotifier?.notify({ conversation, queue: destination.queue, reason, at: this.now() });
  }

  /** A team member takes over any text conversation: the agent stays silent until it is handed back. */
  async takeOver(conversationId: string, member: string): Promise<EngineResult> {
    return this.serial(conversationId, async () => {
      const conversation = await this.store.getConversation(conversationId);
      if (!conversation) return fail("conversation_not_found", "conversationId", "no such conversation");
      if (conversation.handoff?.state === "taken" && conversation.handoff.member !== member) {
        return fail("conversation_held", "member", "another team member holds this conversation");
      }
      await this.store.setHandoff(conversationId, { state: "taken", member, ...(conversation.handoff?.queue && { queue: conversation.handoff.queue }), at: this.now() });
      await this.record(conversationId, {
        events: [{ type: "handoff", id: randomId("m"), state: "taken", text: "A member of our team has joined the conversation." }],
        transcript: [{ role: "system", content: "A team member took over the conversation." }],
      });
      return { ok: true } as EngineResult;
    });
  }

  async teamMessage(conversationId: string, member: string, text: string): Promise<EngineResult> {
    return this.serial(conversationId, async () => {
      const conversation = await this.store.getConversation(conversationId);
      if (!conversation) return fail("conversation_not_found", "conversationId", "no such conversation");
      if (conversation.handoff?.state !== "taken" || conversation.handoff.member !== member) {
        return fail("conversation_not_held", "member", "take the conversation over before writing in it");
      }
      await this.record(conversationId, { events: [{ type: "text", id: randomId("m"), from: "team", text }], transcript: [{ role: "system", content: `[team] ${text}` }] });
      return { ok: true } as EngineResult;
    });
  }

  /** Hand the conversation back to the agent. */
  async handBack(conversationId: string, member: string): Promise<EngineResult> {
    return this.serial(conversationId, async () => {
      const conversation = await this.store.getConversation(conversationId);
      if (!conversation) return fail("conversation_not_found", "conversationId", "no such conversation");
      if (!conversation.handoff) return fail("conversation_not_held", "conversationId", "the agent already holds this conversation");
      if (conversation.handoff.state === "taken" && conversation.handoff.member !== member) {
        return fail("conversation_held", "member", "another team member holds this conversation");
      }
      await this.store.setHandoff(conversationId, null);
      await this.record(conversationId, {
        events: [{ type: "handoff", id: randomId("m"), state: "released", text: "You're back with the assistant." }],
        transcript: [{ role: "system", content: "The team handed the conversation back to you." }],
      });
      return { ok: true } as EngineResult;
    });
  }

  /** Writes still unresolved after the last status check: the team checks their own system and follows up. */
  async followUps(): Promise<WriteRecord[]> {
    return this.store.listFollowUps();
  }

  /**
   * A message that could not reach the customer (outside a messaging app's window, refused for good): the
   * conversation's history records it for the team, under an id no channel sends, and the model is told.
   */
  async recordUndelivered(conversationId: string, text: string): Promise<EngineResult> {
    return this.serial(conversationId, async () => {
      if (!(await this.store.getConversation(conversationId))) return fail("conversation_not_found", "conversationId", "no such conversation");
      await this.record(conversationId, {
        events: [{ type: "text", id: randomId(UNDELIVERED_NOTE_PREFIX.slice(0, -1)), from: "system", text }],
        transcript: [{ role: "system", content: `The customer did not receive a message: ${text}` }],
      });
      return { ok: true } as EngineResult;
    });
  }

  /** Registers where messages that never reached their customer are kept (a channel store), for the team's follow-up list. */
  addUndeliveredSource(source: () => Promise<UndeliveredMessage[]>): () => void {
    this.undeliveredSources.add(source);
    return () => this.undeliveredSources.delete(source);
  }

  /** Messages that never reached their customer, newest first. */
  async undelivered(): Promise<UndeliveredMessage[]> {
    const lists = await Promise.all([...this.undeliveredSources].map((source) => source()));
    return lists.flat().sort((a, b) => b.at - a.at);
  }
}

function progressEvent(tool: EngineTool, callId: string, state: "start" | "end"): OutboundOf<"progress"> {
  const progress = tool.policy.progress;
  return {
    type: "progress",
    id: randomId("m"),
    callId,
    state,
    ...(progress?.label && { label: progress.label }),
    ...(state === "start" && progress?.spoken && { spoken: progress.spoken }),
  };
}

function stepUpEvent(stepUp: StepUp, proposalId: string | undefined): OutboundOf<"step_up"> {
  return {
    type: "step_up",
    id: randomId("m"),
    level: stepUp.level,
    ...(stepUp.maxAuthAgeSeconds !== undefined && { maxAuthAgeSeconds: stepUp.maxAuthAgeSeconds }),
    ...(proposalId && { proposalId }),
    text: proposalId ? "To finish this, please verify your identity again." : "You need to verify your identity for this.",
  };
}

/** A store error worth waiting out: the database is restarting or the connection to it was cut. */
function storeUnreachable(error: unknown): boolean {
  const code = String((error as { code?: unknown })?.code ?? "");
  if (["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN"].includes(code)) return true;
  if (/^(57P0[123]|08\d{3})$/.test(code)) return true; // shutdown, cannot connect now, connection exceptions
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(error instanceof Error ? error.message : String(error));
}
