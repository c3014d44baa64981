// Keeps package processes warm, one per package version: started on first use, dropped when they
// exit (a crash is restarted on the next call), and capped in number by evicting the least recently
// used idle process.
import { PackageProcess, type ProcessOptions } from "./packageProcess.ts";

export class ProcessPool {
  private readonly processes = new Map<string, Promise<PackageProcess>>();
  private readonly max: number;
  /** How many times a version's process was started, for diagnostics and tests. */
  readonly starts = new Map<string, number>();

  constructor(max: number) {
    this.max = max;
  }

  /** The warm process of a version, starting it if needed. */
  async get(key: string, options: () => ProcessOptions): Promise<PackageProcess> {
    let pending = this.processes.get(key);
    if (pending) {
      const process = await pending.catch(() => undefined);
      if (process && !process.exited) {
        process.lastUsed = Date.now();
        return process;
      }
      if (this.processes.get(key) === pending) this.processes.delete(key);
    }
    pending = this.processes.get(key);
    if (!pending) {
      await this.evict();
      this.starts.set(key, (this.starts.get(key) ?? 0) + 1);
      pending = PackageProcess.start(options());
      this.processes.set(key, pending);
      pending.then(
        (process) => process.onExit(() => {
          if (this.processes.get(key) === pending) this.processes.delete(key);
        }),
        () => {
          if (this.processes.get(key) === pending) this.processes.delete(key);
        },
      );
    }
    const process = await pending;
    process.lastUsed = Date.now();
    return process;
  }

  /** Whether a version has a live process (without starting one). */
  async peek(key: string): Promise<PackageProcess | undefined> {
    const process = await this.processes.get(key)?.catch(() => undefined);
    return process && !process.exited ? process : undefined;
  }

  private async evict(): Promise<void> {
    while (this.processes.size >= this.max) {
      const settled: Array<[string, PackageProcess]> = [];
      for (const [key, pending] of this.processes) {
        const process = await pending.catch(() => undefined);
        if (process && process.routes.size === 0) settled.push([key, process]);
      }
      if (settled.length === 0) return; // every process is busy: allow one over the cap rather than fail a call
      settled.sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
      const [key, oldest] = settled[0]!;
      this.processes.delete(key);
      await oldest.kill();
    }
  }

  async stop(key: string): Promise<void> {
    const pending = this.processes.get(key);
    this.processes.delete(key);
    const process = await pending?.catch(() => undefined);
    await process?.kill();
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
