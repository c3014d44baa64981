// File retention: files a read tool delivered to a customer (invoices, tickets) are kept for a set period,
// then their bytes are purged. The conversation's `file` event stays, so the history still says a file was
// delivered; downloading it afterwards answers 410 Gone with `file_expired` (gateway.ts). Purging is
// idempotent (only files not yet purged), so several nodes may run it at once.
import { FILE_RETENTION_DEFAULT_DAYS, parseSetting } from "../config/index.ts";
import type { FilePort } from "../store/store.ts";

export { FILE_RETENTION_DEFAULT_DAYS, FILE_RETENTION_MAX_DAYS, FILE_RETENTION_MIN_DAYS } from "../config/index.ts";
export const DAY_MS = 24 * 60 * 60 * 1000;
/** How often the purge runs. */
export const FILE_PURGE_EVERY_MS = 60 * 60 * 1000;
const PURGE_BATCH = 200;

/** CAPLO_FILE_RETENTION_DAYS as milliseconds, the default when unset, or the problem. */
export function readFileRetention(env: Record<string, string | undefined>): { ok: true; retentionMs: number } | { ok: false; error: { code: string; path: string; message: string } } {
  const days = parseSetting("CAPLO_FILE_RETENTION_DAYS", env.CAPLO_FILE_RETENTION_DAYS);
  return days.ok ? { ok: true, retentionMs: days.value * DAY_MS } : days;
}

export type FileRetentionOptions = {
  store: FilePort;
  retentionMs?: number;
  now?: () => number;
  everyMs?: number;
  log?: (level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>) => void;
};

export class FileRetention {
  readonly retentionMs: number;
  private readonly options: FileRetentionOptions;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private started = false;
  private stopping = false;

  constructor(options: FileRetentionOptions) {
    this.options = options;
    this.retentionMs = options.retentionMs ?? FILE_RETENTION_DEFAULT_DAYS * DAY_MS;
    this.now = options.now ?? Date.now;
  }

  /** Purge the bytes of every file older than the retention period. Returns how many files this call purged. */
  purge(): Promise<number> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<number> {
    let purged = 0;
    for (;;) {
      const now = this.now();
      const count = await this.options.store.purgeFiles(now - this.retentionMs, now, PURGE_BATCH);
      purged += count;
      if (count < PURGE_BATCH || this.stopping) break;
    }
    if (purged > 0) this.options.log?.("info", "delivered files purged after the retention period", { files: purged });
    return purged;
  }

  /** Purge now, then every `everyMs`. */
  start(): void {
    this.started = true;
    this.stopping = false;
    const tick = () => {
      void this.purge()
        .catch((error) => this.options.log?.("error", "file purge failed", { error: String(error) }))
        .finally(() => {
          if (!this.started) return;
          this.timer = setTimeout(tick, this.options.everyMs ?? FILE_PURGE_EVERY_MS);
          this.timer.unref?.();
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }
}
