// Bounds on what a package may put in its invocation's log: each line's message and data, and each
// call's lines and bytes. What is cut is said, in the line (message or data) or in one closing note.
import type { LogLine } from "./api.ts";

/** Characters of one line's message kept. */
export const LOG_MESSAGE_CHARS_MAX = 8192;
/** Bytes of one line's data (as JSON) kept; larger data is replaced by a note of its size and its start. */
export const LOG_DATA_BYTES_MAX = 16 * 1024;
/** Lines and bytes (messages and data as JSON) one call keeps. */
export const CALL_LOG_LINES_MAX = 1000;
export const CALL_LOG_BYTES_MAX = 256 * 1024;

/** A copy of a short part of a long string: V8's slices keep the whole string alive (8 MiB for 1 KiB). */
function detached(text: string): string {
  return Buffer.from(text, "utf8").toString("utf8");
}

/** Where to cut a text at most `at` characters long (a call's redactor moves it before a secret it would split). */
export type CutPoint = (text: string, at: number) => number;
const plainCut: CutPoint = (_text, at) => at;

/** One line within the per-line bounds; a cut message or data says how much was cut. */
export function boundLine(line: LogLine, cutPoint: CutPoint = plainCut): LogLine {
  let message = line.message;
  if (message.length > LOG_MESSAGE_CHARS_MAX) {
    const keep = cutPoint(message, LOG_MESSAGE_CHARS_MAX);
    message = `${detached(message.slice(0, keep))}… [${message.length - keep} more characters cut]`;
  }
  if (line.data === undefined) return message === line.message ? line : { ...line, message };
  let json: string;
  try {
    json = JSON.stringify(line.data) ?? "null";
  } catch {
    json = '"[data that is not JSON]"';
  }
  const bytes = Buffer.byteLength(json);
  if (bytes <= LOG_DATA_BYTES_MAX) return { ...line, message };
  return { ...line, message, data: { cut: `data of ${bytes} bytes, over the ${LOG_DATA_BYTES_MAX}-byte limit of a log line: only its start is kept`, start: detached(json.slice(0, cutPoint(json, 1024))) } };
}

/** Size of a line as it is counted against the call's bytes. */
function lineBytes(line: LogLine): number {
  return Buffer.byteLength(line.message) + (line.data === undefined ? 0 : Buffer.byteLength(JSON.stringify(line.data) ?? ""));
}

/** One call's log lines, within CALL_LOG_LINES_MAX and CALL_LOG_BYTES_MAX; past them, one note counts what was dropped. */
export class CallLog {
  readonly lines: LogLine[] = [];
  private bytes = 0;
  private dropped = 0;
  private droppedBytes = 0;
  private note: LogLine | undefined;
  private readonly cutPoint: CutPoint;

  /** cutPoint: the call's redactor's, so that no cut leaves part of a secret (redacted only after). */
  constructor(cutPoint: CutPoint = plainCut) {
    this.cutPoint = cutPoint;
  }

  push(raw: LogLine): void {
    const line = boundLine(raw, this.cutPoint);
    const size = lineBytes(line);
    if (this.note === undefined && this.lines.length < CALL_LOG_LINES_MAX && this.bytes + size <= CALL_LOG_BYTES_MAX) {
      this.lines.push(line);
      this.bytes += size;
      return;
    }
    this.dropped += 1;
    this.droppedBytes += size;
    const message = `${this.dropped} log line${this.dropped === 1 ? "" : "s"} (${this.droppedBytes} bytes) dropped: a call keeps at most ${CALL_LOG_LINES_MAX} lines and ${CALL_LOG_BYTES_MAX} bytes of log`;
    if (this.note) this.note.message = message;
    else {
      this.note = { level: "warn", message, at: line.at };
      this.lines.push(this.note);
    }
  }
}
