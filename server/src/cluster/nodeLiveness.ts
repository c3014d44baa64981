// The loop a node runs beside its gateway: renew its liveness lease, and take over (recover) any node
// whose lease ran out. One timer; each round waits for the previous one; errors are reported, not thrown.
import type { NodeLeases } from "./nodeLeases.ts";

export type NodeLivenessOptions = {
  leases: NodeLeases;
  /** Recover a lost node's work (idempotent): e.g. its running writes become unknown with status checks. */
  recover: (lostNodeId: string) => Promise<void>;
  /** Default: a third of the lease, so two missed rounds still leave the lease alive. */
  intervalMs?: number;
  /** This node was itself declared lost (it stalled past its lease) and its work was recovered elsewhere. */
  onTakenOver?: () => void;
  /** A lost node this node recovered. */
  onRecovered?: (lostNodeId: string) => void;
  /** A round failed (PostgreSQL unreachable, recovery failed); the next round tries again. */
  onError?: (error: unknown) => void;
  /** A round succeeded (after failures: the node is back in the cluster). */
  onOk?: () => void;
};

export type NodeLiveness = {
  /** One round now (heartbeat, then takeover); also what the timer runs. */
  round(): Promise<void>;
  /** Stop the loop; with `leave`, also remove this node's lease (a clean shutdown). */
  stop(options?: { leave?: boolean }): Promise<void>;
};

export function startNodeLiveness(options: NodeLivenessOptions): NodeLiveness {
  const { leases } = options;
  const intervalMs = Math.max(100, Math.round(options.intervalMs ?? leases.leaseMs / 3));
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let current: Promise<void> = Promise.resolve();

  const once = async () => {
    try {
      const { wasTakenOver } = await leases.heartbeat();
      if (wasTakenOver) options.onTakenOver?.();
      const recovered = await leases.takeOverLost(options.recover);
      for (const id of recovered) options.onRecovered?.(id);
      options.onOk?.();
    } catch (error) {
      options.onError?.(error);
    }
  };
  const round = () => {
    current = current.then(once);
    return current;
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => void round().then(schedule), intervalMs);
    timer.unref();
  };
  void round().then(schedule);

  return {
    round,
    async stop(stopOptions = {}) {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current;
      if (stopOptions.leave) await leases.leave();
    },
  };
}
