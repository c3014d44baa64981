// The engine's shared core: its settings, store and bus, the per-conversation queue, the clock and the log,
// and the parts that each do one responsibility (engine.ts wires them; each part reaches the others here).
import { ReplyStreams } from "./replyStream.ts";
import type { EventBus } from "../bus/eventBus.ts";
import { MemoryBus } from "../bus/memoryBus.ts";
import type { Model } from "../model/model.ts";
import type { ToolRunner } from "../runner/api.ts";
import type { ConversationRecord, Store } from "../store/store.ts";
import type { WriteRecord } from "./ledger.ts";
import type { ConversationLog } from "./conversationLog.ts";
import type { CustomerActions } from "./customerActions.ts";
import type { HandoffNotifier } from "./handoff.ts";
import type { OpenQuestions } from "./openQuestions.ts";
import { PROPOSAL_TTL_DEFAULT_MS } from "./proposalSweep.ts";
import { agentRef, type AgentRelease, type EngineTool, type ReleaseSource } from "./release.ts";
import type { StatusChecks } from "./statusChecks.ts";
import type { TeamActions } from "./teamActions.ts";
import type { TranscriptCache } from "./transcriptCache.ts";
import { TRANSCRIPT_BUDGET_DEFAULT_CHARS } from "./transcriptWindow.ts";
import type { Turns } from "./turn.ts";
import type { TurnRecovery } from "./turnRecovery.ts";
import type { Writes } from "./writes.ts";

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
  /** A read still running after this is shown working: its progress start is stored (default PROGRESS_SHOWN_AFTER_MS). */
  progressShownAfterMs?: number;
  /** How long a tool's question waits for the customer's answer (not counted against the tool's timeout). Default ELICITATION_WAIT_SECONDS. */
  elicitTimeoutMs?: number;
  /**
   * Secret values for a package version in a workspace (the conversation's), from that workspace's secret
   * store, read at each call (a changed secret is used by the next call). Only the names the version declares.
   */
  secrets?: (packageVersionId: string, workspaceId: string) => Record<string, string> | Promise<Record<string, string>>;
  log?: (level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>) => void;
};

/** The parts of an engine, each set once by the Engine that owns the core. */
export type EngineParts = {
  conversations: ConversationLog;
  customers: CustomerActions;
  transcripts: TranscriptCache;
  turns: Turns;
  recovery: TurnRecovery;
  writes: Writes;
  checks: StatusChecks;
  elicitations: OpenQuestions;
  team: TeamActions;
};

export class EngineCore {
  readonly store: Store;
  readonly bus: EventBus;
  readonly options: EngineOptions;
  readonly now: () => number;
  readonly nodeId: string;
  private readonly queues = new Map<string, Promise<unknown>>();
  readonly typingListeners = new Set<(conversationId: string, on: boolean) => void>();
  /** Replies while the model writes them (streamed to the widget, never stored as parts). */
  readonly replies = new ReplyStreams();
  readonly inFlight = new Set<Promise<unknown>>();
  stopped = false;
  conversations!: ConversationLog;
  customers!: CustomerActions;
  transcripts!: TranscriptCache;
  turns!: Turns;
  recovery!: TurnRecovery;
  writes!: Writes;
  checks!: StatusChecks;
  elicitations!: OpenQuestions;
  team!: TeamActions;

  constructor(options: EngineOptions) {
    this.options = options;
    this.store = options.store;
    this.bus = options.bus ?? new MemoryBus();
    this.now = options.now ?? Date.now;
    this.nodeId = options.nodeId ?? "local";
  }

  /** Set the parts (once, by the Engine). */
  attach(parts: EngineParts): void {
    Object.assign(this, parts);
  }

  track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    void promise.finally(() => this.inFlight.delete(promise)).catch(() => undefined);
    return promise;
  }

  /** Run fn after everything queued for the conversation (turns of one conversation never interleave in this process). */
  serial<T>(conversationId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(conversationId) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.queues.set(conversationId, settled);
    void settled.then(() => {
      if (this.queues.get(conversationId) === settled) this.queues.delete(conversationId);
    });
    return this.track(next);
  }

  log(level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>): void {
    this.options.log?.(level, message, data);
  }

  checkBase(): number {
    return this.options.statusCheckBaseMs ?? 5000;
  }

  typing(conversationId: string, on: boolean): void {
    for (const listener of this.typingListeners) listener(conversationId, on);
  }

  releaseOf(conversation: ConversationRecord): AgentRelease | undefined {
    return this.options.releases.get(agentRef(conversation.workspaceId, conversation.agent));
  }

  toolForWrite(write: Pick<WriteRecord, "packageVersionId" | "tool" | "modelName">): EngineTool | undefined {
    for (const release of this.options.releases.list()) {
      const tool = release.tools.find((candidate) => candidate.packageVersionId === write.packageVersionId && candidate.tool === write.tool);
      if (tool) return tool;
    }
    return undefined;
  }

  async secrets(packageVersionId: string, workspaceId: string): Promise<Record<string, string>> {
    return (await this.options.secrets?.(packageVersionId, workspaceId)) ?? {};
  }

  proposalTtl(): number {
    return this.options.proposalTtlMs ?? PROPOSAL_TTL_DEFAULT_MS;
  }

  transcriptBudget(): number {
    return this.options.transcriptBudgetChars ?? TRANSCRIPT_BUDGET_DEFAULT_CHARS;
  }
}

/** A part of the engine: one responsibility, reaching the shared core and the other parts through it. */
export abstract class EnginePart {
  protected readonly core: EngineCore;

  constructor(core: EngineCore) {
    this.core = core;
  }
}
