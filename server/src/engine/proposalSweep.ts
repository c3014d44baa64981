// The proposal sweep: a background pass that expires proposals nobody decided within their lifetime, and
// writes whose step-up the customer never did within it, so a forgotten review card or verification does
// not wait for ever and does not block the conversation's next write. Each
// expiry is a compare-and-set (proposed → expired) in the store: on several nodes sweeping at once, exactly
// one wins each proposal, and only the winner tells the customer's review card and the model.
import { parseSetting, PROPOSAL_TTL_DEFAULT_SECONDS } from "../config/index.ts";
import type { WriteLedgerPort } from "../store/store.ts";
import type { WriteRecord } from "./ledger.ts";

/**
 * How long a proposal waits for the customer's decision. The seeds set no lifetime; one hour keeps a
 * review card usable through a normal pause (looking up a card number, asking someone at home) while
 * not leaving an old, possibly stale action confirmable the next day.
 */
export const PROPOSAL_TTL_DEFAULT_MS = PROPOSAL_TTL_DEFAULT_SECONDS * 1000;
/** How often the sweep looks for expired proposals. */
export const PROPOSAL_SWEEP_DEFAULT_MS = 30 * 1000;
/** Proposals expired per pass at most; the next pass takes the rest. */
export const PROPOSAL_SWEEP_BATCH = 100;

/** Whether a proposal is past its lifetime at `now` (the lazy check at confirm and the sweep agree). */
export function proposalExpired(write: Pick<WriteRecord, "state" | "createdAt">, now: number, ttlMs: number): boolean {
  return write.state === "proposed" && now - write.createdAt > ttlMs;
}

/**
 * Whether a write waiting for the customer to verify again (step_up_required) is past the same lifetime,
 * counted from when it began to wait (its last transition). Nothing was applied: the tool asked for the
 * step-up instead of acting, so it expires like a proposal and the conversation can start another write.
 */
export function stepUpExpired(write: Pick<WriteRecord, "state" | "updatedAt">, now: number, ttlMs: number): boolean {
  return write.state === "step_up_required" && now - write.updatedAt > ttlMs;
}

/** Either lifetime: an undecided proposal, or a write whose step-up the customer never did. */
export function writeExpired(write: Pick<WriteRecord, "state" | "createdAt" | "updatedAt">, now: number, ttlMs: number): boolean {
  return proposalExpired(write, now, ttlMs) || stepUpExpired(write, now, ttlMs);
}

export type ProposalSweepOptions = {
  store: WriteLedgerPort;
  now: () => number;
  ttlMs: number;
  /** Expire one proposal (compare-and-set, then tell); returns whether this call did it. */
  expire: (write: WriteRecord) => Promise<boolean>;
  everyMs?: number;
  log?: (level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>) => void;
};

export class ProposalSweep {
  private readonly options: ProposalSweepOptions;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopped = false;

  constructor(options: ProposalSweepOptions) {
    this.options = options;
  }

  /** One pass: expire every proposal past its lifetime. Returns how many this node expired. */
  sweep(): Promise<number> {
    // One pass at a time in this process; other nodes are kept apart by the store's compare-and-set.
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<number> {
    let expired = 0;
    const store = this.options.store;
    // Proposals by when they were made; writes waiting for step-up by when they began to wait.
    for (const list of [store.listExpiredProposals.bind(store), store.listExpiredStepUps.bind(store)]) {
      for (;;) {
        // Strictly older than the lifetime, as proposalExpired and stepUpExpired say.
        const due = await list(this.options.now() - this.options.ttlMs - 1, PROPOSAL_SWEEP_BATCH);
        let won = 0;
        for (const write of due) if (await this.options.expire(write)) won += 1;
        expired += won;
        if (this.stopped) return expired;
        // A full batch where this node won nothing means other nodes are working the same list: stop here.
        if (due.length < PROPOSAL_SWEEP_BATCH || won === 0) break;
      }
    }
    return expired;
  }

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.sweep()
        .catch((error) => this.options.log?.("error", "proposal sweep failed", { error: String(error) }))
        .finally(() => this.schedule());
    }, this.options.everyMs ?? PROPOSAL_SWEEP_DEFAULT_MS);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }
}

export { PROPOSAL_TTL_MAX_SECONDS, PROPOSAL_TTL_MIN_SECONDS } from "../config/index.ts";

/** CAPLO_PROPOSAL_TTL_SECONDS as milliseconds, the default (1 hour) when unset, or the problem. */
export function readProposalTtl(env: Record<string, string | undefined>): { ok: true; ttlMs: number } | { ok: false; error: { code: string; path: string; message: string } } {
  const seconds = parseSetting("CAPLO_PROPOSAL_TTL_SECONDS", env.CAPLO_PROPOSAL_TTL_SECONDS);
  return seconds.ok ? { ok: true, ttlMs: seconds.value * 1000 } : seconds;
}
