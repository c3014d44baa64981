// A small store of invocations and their log lines: one JSON line per finished call in a file (by
// default .caplo/invocations.jsonl of the working folder), read back by `caplo tool logs`.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { LogLine } from "./api.ts";

export type InvocationRecord = {
  invocationId: string;
  packageVersionId: string;
  tool: string;
  kind: "call" | "status";
  at: string;
  durationMs: number;
  isError: boolean;
  outcome?: string;
  logs: LogLine[];
};

export interface LogStore {
  record(entry: InvocationRecord): void;
  /** Every record, oldest first; or the one with this id. */
  read(invocationId?: string): InvocationRecord[];
}

export const DEFAULT_LOG_FILE = join(".caplo", "invocations.jsonl");

export class JsonlLogStore implements LogStore {
  readonly file: string;
  constructor(file: string = DEFAULT_LOG_FILE) {
    this.file = file;
  }

  record(entry: InvocationRecord): void {
    mkdirSync(dirname(this.file), { recursive: true });
    appendFileSync(this.file, JSON.stringify(entry) + "\n");
  }

  read(invocationId?: string): InvocationRecord[] {
    if (!existsSync(this.file)) return [];
    const records: InvocationRecord[] = [];
    for (const line of readFileSync(this.file, "utf8").split("\n")) {
      if (!line.trim()) continue;
      try {
        const record = JSON.parse(line) as InvocationRecord;
        if (!invocationId || record.invocationId === invocationId) records.push(record);
      } catch {
        // A torn last line from a crash: skip it, keep the rest.
      }
    }
    return records;
  }
}

/** Keeps records in memory (the server's default when no file is configured). */
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
