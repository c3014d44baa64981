// The single-node EventBus: notices stay in this process. Buses sharing one `MemoryHub` see each other's
// notices, which is how tests run two "nodes" in one process; a real node needs no hub of its own.
import { closedResult, parsePublish, type BusHealth, type BusListener, type EventBus, type PublishResult, type Unsubscribe } from "./eventBus.ts";
import { LocalFanout, reportListenerError, type ListenerErrorHandler } from "./localFanout.ts";

export class MemoryHub {
  #members = new Set<LocalFanout>();
  join(fanout: LocalFanout): () => void {
    this.#members.add(fanout);
    return () => this.#members.delete(fanout);
  }
  deliver(conversationId: string, seq: number): void {
    for (const member of this.#members) member.deliver(conversationId, seq);
  }
}

export type MemoryBusOptions = { hub?: MemoryHub; onListenerError?: ListenerErrorHandler };

export class MemoryBus implements EventBus {
  readonly transport = "memory" as const;
  #fanout: LocalFanout;
  #hub: MemoryHub;
  #leave: () => void;
  #health: BusHealth = { transport: "memory", state: "healthy", since: Date.now(), polling: false };

  constructor(options: MemoryBusOptions = {}) {
    this.#fanout = new LocalFanout(options.onListenerError ?? reportListenerError);
    this.#hub = options.hub ?? new MemoryHub();
    this.#leave = this.#hub.join(this.#fanout);
  }

  async publish(conversationId: string, notice: { seq: number }): Promise<PublishResult> {
    const parsed = parsePublish(conversationId, notice);
    if (!parsed.ok) return parsed;
    if (this.#health.state === "closed") return closedResult();
    this.#hub.deliver(parsed.conversationId, parsed.notice.seq);
    return { ok: true };
  }

  subscribe(conversationId: string, listener: BusListener): Unsubscribe {
    if (this.#health.state === "closed") return Object.assign(() => {}, { ready: Promise.resolve() });
    const { remove } = this.#fanout.add(conversationId, listener);
    return Object.assign(() => void remove(), { ready: Promise.resolve() });
  }

  health(): BusHealth {
    return { ...this.#health };
  }

  async close(): Promise<void> {
    if (this.#health.state === "closed") return;
    this.#health = { transport: "memory", state: "closed", since: Date.now(), polling: false };
    this.#leave();
    this.#fanout.clear();
  }
}
