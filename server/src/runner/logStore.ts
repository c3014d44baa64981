// A small store of invocations and their log lines: one JSON line per finished call in a file, read back by
// `caplo tool logs`. `caplo tool test` writes DIR/.caplo/invocations.jsonl; `caplo serve` writes
// invocations.jsonl beside its SQLite file (see invocationLogSettings). The file is bounded: when the next
// line would take it over half of maxBytes it becomes FILE.1 (replacing the older one) and a new FILE is
// started, so the two together stay under maxBytes and at least the newest maxBytes/2 are kept. A broken
// line (a crash mid-write) is skipped when reading; the rest is still read.
import { parseSetting } from "../config/index.ts";
import { closeSync, constants, mkdirSync, openSync, readFileSync, renameSync, statSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import type { LogLine } from "./api.ts";
import { insidePackage, type PathError } from "./packagePath.ts";

export type InvocationRecord = {
  invocationId: string;
  packageVersionId: string;
  tool: string;
  /** "between calls": a package process's use of the network while none of its calls was in flight (no tool). */
  kind: "call" | "status" | "between calls";
  at: string;
  durationMs: number;
  isError: boolean;
  outcome?: string;
  /** From the call's context, when the caller gave them: how an operator finds a conversation's or a write's calls. */
  conversationId?: string;
  turnId?: string;
  idempotencyKey?: string;
  logs: LogLine[];
};

export interface LogStore {
  record(entry: InvocationRecord): void;
  /** Every record, oldest first; or the one with this id. */
  read(invocationId?: string): InvocationRecord[];
}

/** The context fields a record keeps (never secrets or the subject). */
export function recordContext(context: { conversationId?: string | undefined; turnId?: string | undefined; idempotencyKey?: string | undefined }): Pick<InvocationRecord, "conversationId" | "turnId" | "idempotencyKey"> {
  return {
    ...(context.conversationId !== undefined && { conversationId: context.conversationId }),
    ...(context.turnId !== undefined && { turnId: context.turnId }),
    ...(context.idempotencyKey !== undefined && { idempotencyKey: context.idempotencyKey }),
  };
}

export const DEFAULT_LOG_FILE = join(".caplo", "invocations.jsonl");
/** Default bound of an invocation log (the file and its one rotated predecessor together). */
export const DEFAULT_LOG_MAX_BYTES = 64 * 1024 * 1024;

export type JsonlLogStoreOptions = {
  /** The file and FILE.1 together stay under this many bytes (default 64 MiB). */
  maxBytes?: number;
  /** A record that could not be written (disk full, no permission): the call itself never fails for it. */
  onError?: (error: Error) => void;
  /**
   * The package folder the file lies in (`caplo tool test DIR`): then the file, and its rotated one, are
   * written and read only while they stay inside it, links followed (a package may ship .caplo/ linked
   * to a file of the host), and never through a link.
   */
  root?: string;
  /**
   * Records made in one turn of the event loop go to the file together, in one write, on the next turn
   * (`caplo serve`, where many conversations' calls finish at once): a stat, open, write and close per turn
   * of the loop instead of per call. A record not yet written is read back all the same (read flushes
   * first); flush() writes what waits (serve's stop does). A crash loses at most that one turn's records.
   */
  grouped?: boolean;
};

export class JsonlLogStore implements LogStore {
  readonly file: string;
  readonly maxBytes: number;
  private readonly onError: ((error: Error) => void) | undefined;
  private readonly root: string | undefined;
  constructor(file: string = DEFAULT_LOG_FILE, options: JsonlLogStoreOptions = {}) {
    this.file = file;
    this.maxBytes = options.maxBytes ?? DEFAULT_LOG_MAX_BYTES;
    this.onError = options.onError;
    this.root = options.root;
    this.grouped = options.grouped ?? false;
  }
  private readonly grouped: boolean;
  /** Grouped: the lines waiting for the next turn of the loop. */
  private waiting: string[] = [];

  /** Why the file (or FILE.1) may not be used: it leads outside the package folder. */
  outsideRoot(): PathError | undefined {
    if (!this.root) return undefined;
    for (const file of [this.file, this.previousFile]) {
      const inside = insidePackage(this.root, file);
      if (!inside.ok) return inside.error;
    }
    return undefined;
  }

  /** The rotated predecessor of the file. */
  get previousFile(): string {
    return `${this.file}.1`;
  }

  record(entry: InvocationRecord): void {
    let line: string;
    try {
      line = this.fit(entry);
    } catch (error) {
      this.onError?.(error as Error);
      return;
    }
    if (!this.grouped) return this.append([line]);
    this.waiting.push(line);
    if (this.waiting.length === 1) setImmediate(() => this.flush());
  }

  /** Writes the records still waiting (grouped): at once, instead of on the next turn of the loop. */
  flush(): void {
    if (this.waiting.length === 0) return;
    const lines = this.waiting;
    this.waiting = [];
    this.append(lines);
  }

  /**
   * Lines appended to the file, which becomes FILE.1 before a line that would take it over half the bound.
   * Size from the file itself, not a counter: another process (a second node on this machine, `caplo tool
   * test`) may append to it too. One stat, then an open, write and close per file written (the folder made
   * only when missing).
   */
  private append(lines: string[]): void {
    try {
      const outside = this.outsideRoot();
      if (outside) throw new Error(`${outside.code}: ${outside.message}`);
      let size = statSync(this.file, { throwIfNoEntry: false })?.size ?? 0;
      let chunk = "";
      for (const line of lines) {
        const bytes = Buffer.byteLength(line);
        if (size > 0 && size + bytes > this.maxBytes / 2) {
          if (chunk) this.write(chunk);
          chunk = "";
          renameSync(this.file, this.previousFile);
          size = 0;
        }
        chunk += line;
        size += bytes;
      }
      if (chunk) this.write(chunk);
    } catch (error) {
      this.onError?.(error as Error);
    }
  }

  private write(text: string): void {
    const fd = this.open();
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
  }

  /** The file opened for appending (O_NOFOLLOW: a link put in place of the file is refused, not followed); its folder made if missing. */
  private open(): number {
    const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;
    try {
      return openSync(this.file, flags, 0o644);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      mkdirSync(dirname(this.file), { recursive: true });
      return openSync(this.file, flags, 0o644);
    }
  }

  /**
   * The record as one line, at most maxBytes/2: a record over that keeps the log lines that fit (oldest
   * first) and says how many were dropped, so one huge call cannot push every other record out.
   */
  private fit(entry: InvocationRecord): string {
    const limit = Math.floor(this.maxBytes / 2);
    let line = JSON.stringify(entry) + "\n";
    if (Buffer.byteLength(line) <= limit) return line;
    let keep = entry.logs.length;
    while (keep > 0) {
      keep = Math.floor(keep / 2);
      const note: LogLine = { level: "warn", message: `${entry.logs.length - keep} log lines dropped: the record was over the invocation log's limit`, at: entry.at };
      line = JSON.stringify({ ...entry, logs: [...entry.logs.slice(0, keep), note] }) + "\n";
      if (Buffer.byteLength(line) <= limit) return line;
    }
    return line;
  }

  read(invocationId?: string): InvocationRecord[] {
    this.flush();
    const records: InvocationRecord[] = [];
    if (this.outsideRoot()) return records;
    for (const file of [this.previousFile, this.file]) {
      let text: string;
      try {
        text = readFileSync(file, "utf8");
      } catch {
        continue; // not there (yet), or rotated away while reading
      }
      for (const line of text.split("\n")) {
        if (!line.trim()) continue;
        try {
          const record = JSON.parse(line) as InvocationRecord;
          if (typeof record !== "object" || record === null || typeof record.invocationId !== "string" || !Array.isArray(record.logs)) continue;
          if (!invocationId || record.invocationId === invocationId) records.push(record);
        } catch {
          // A torn line from a crash: skip it, keep the rest.
        }
      }
    }
    return records;
  }
}

/** Keeps records in memory (the runner's default when no file is given). */
export class MemoryLogStore implements LogStore {
  private readonly records: InvocationRecord[] = [];
  private readonly max: number;
  constructor(max = 1000) {
    this.max = max;
  }
  record(entry: InvocationRecord): void {
    this.records.push(entry);
    if (this.records.length > this.max) this.records.shift();
  }
  read(invocationId?: string): InvocationRecord[] {
    return invocationId ? this.records.filter((record) => record.invocationId === invocationId) : [...this.records];
  }
}

export type InvocationLogSettings = { ok: true; file: string; maxBytes: number } | { ok: false; error: { code: string; path: string; message: string } };

/**
 * Where `caplo serve` keeps its invocation log, and how big it may grow: CAPLO_INVOCATION_LOG, else
 * invocations.jsonl beside the SQLite file, else (a postgres:// store: one file per node) .caplo/invocations.jsonl
 * of the working folder; CAPLO_INVOCATION_LOG_MAX_MB (default 64). `caplo tool logs --db` finds it the same way.
 */
export function invocationLogSettings(db: string, env: Record<string, string | undefined>): InvocationLogSettings {
  const mib = parseSetting("CAPLO_INVOCATION_LOG_MAX_MB", env.CAPLO_INVOCATION_LOG_MAX_MB);
  if (!mib.ok) return mib;
  const maxBytes = mib.value * 1024 * 1024;
  return { ok: true, file: invocationLogFile(db, env.CAPLO_INVOCATION_LOG), maxBytes };
}

/** The invocation log's file: CAPLO_INVOCATION_LOG if set, else beside the SQLite file, else DEFAULT_LOG_FILE. */
export function invocationLogFile(db: string, setting: string | undefined): string {
  const postgres = /^postgres(ql)?:\/\//.test(db);
  return setting || (postgres || db === ":memory:" ? DEFAULT_LOG_FILE : join(dirname(db), "invocations.jsonl"));
}
