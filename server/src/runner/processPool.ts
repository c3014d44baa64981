// Keeps package processes warm, one per package version and workspace: started on first use, dropped when they
// exit (a crash is restarted on the next call), and capped in number by evicting the least recently
// used idle process. When every process is busy, a new version waits for one to become idle (a call
// ending or a process exiting) for at most the caller's wait; then it is refused: never over the cap.
import { PackageProcess, type ProcessOptions } from "./packageProcess.ts";

/** Every package process is busy and none became idle within the caller's wait. */
export class PoolBusyError extends Error {
  readonly code = "runner_busy";
}

export class ProcessPool {
  private readonly processes = new Map<string, Promise<PackageProcess>>();
  private readonly max: number;
  /** How many times a version's process was started, for diagnostics and tests. */
  readonly starts = new Map<string, number>();

  constructor(max: number) {
    this.max = max;
  }

  private waiters: Array<() => void> = [];

  /** Tells waiting starts that a process may have become idle (a call ended) or gone. */
  notify(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const wake of waiting) wake();
  }

  /**
   * The warm process of a version, starting it if needed. `waitMs`: how long to wait for a free place
   * when all `max` processes are busy (default 0: refuse at once).
   */
  async get(key: string, options: () => ProcessOptions, waitMs = 0): Promise<PackageProcess> {
    let pending = this.processes.get(key);
    if (pending) {
      const process = await pending.catch(() => undefined);
      if (process && !process.exited) return this.handOut(process);
      if (this.processes.get(key) === pending) this.processes.delete(key);
    }
    const until = Date.now() + waitMs;
    pending = this.processes.get(key);
    // The place is taken in the same turn as the check, so concurrent starts never go over the cap.
    while (!pending && this.processes.size >= this.max) {
      await this.makeRoom(until);
      pending = this.processes.get(key);
    }
    if (!pending) {
      this.starts.set(key, (this.starts.get(key) ?? 0) + 1);
      pending = PackageProcess.start(options());
      this.processes.set(key, pending);
      pending.then(
        (process) => process.onExit(() => {
          if (this.processes.get(key) === pending) this.processes.delete(key);
          this.notify();
        }),
        () => {
          if (this.processes.get(key) === pending) this.processes.delete(key);
          this.notify();
        },
      );
    }
    return this.handOut(await pending);
  }

  private handOut(process: PackageProcess): PackageProcess {
    process.lastUsed = Date.now();
    process.claims += 1;
    setImmediate(() => {
      process.claims -= 1;
      this.notify();
    });
    return process;
  }

  /** Whether a version has a live process (without starting one). */
  async peek(key: string): Promise<PackageProcess | undefined> {
    const process = await this.processes.get(key)?.catch(() => undefined);
    return process && !process.exited ? process : undefined;
  }

  /** One step towards a free place: stop the least recently used idle process, or wait for one. */
  private async makeRoom(until: number): Promise<void> {
    const live: Array<[string, PackageProcess]> = [];
    for (const [key, pending] of [...this.processes]) {
      const process = await pending.catch(() => undefined);
      if (process && !process.exited && this.processes.get(key) === pending) live.push([key, process]);
    }
    // Idle: no call in flight and none just handed out (checked after the awaits above).
    const candidates = live.filter(([key, process]) => this.processes.has(key) && process.routes.size === 0 && process.claims === 0);
    if (candidates.length > 0) {
      candidates.sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
      const [key, oldest] = candidates[0]!;
      this.processes.delete(key);
      await oldest.kill();
      return;
    }
    if (this.processes.size < this.max) return;
    const left = until - Date.now();
    if (left <= 0) throw new PoolBusyError(`all ${this.max} package processes are busy with other calls`);
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter !== wake);
        resolve();
      }, left);
      this.waiters.push(wake);
    });
  }

  async stop(key: string): Promise<void> {
    const pending = this.processes.get(key);
    this.processes.delete(key);
    const process = await pending?.catch(() => undefined);
    await process?.kill();
  }

  /** Stops every process of a version, in every workspace (keys `id` and `id@workspace`). */
  async stopVersion(versionId: string): Promise<void> {
    const keys = [...this.processes.keys()].filter((key) => key === versionId || key.startsWith(`${versionId}@`));
    await Promise.all(keys.map((key) => this.stop(key)));
  }

  async close(): Promise<void> {
    const all = [...this.processes.values()];
    this.processes.clear();
    await Promise.all(all.map(async (pending) => (await pending.catch(() => undefined))?.kill()));
  }

  get size(): number {
    return this.processes.size;
  }
}
