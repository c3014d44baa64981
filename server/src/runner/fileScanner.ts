// The operator's file scanner, asked about every file a tool returns after the built-in checks pass
// (fileSafety.ts): a ClamAV `clamd` over its Unix socket (INSTREAM), or a command given the file on its
// standard input. A file is delivered only when the scanner says it is clean; a threat, an error, a
// timeout or a scanner that cannot be reached refuses it (fail closed), and the visitor and the model are
// told the file could not be delivered. Settings: CAPLO_FILE_SCAN_CLAMD=/path/to/clamd.sock or
// CAPLO_FILE_SCAN_COMMAND=/path/to/executable (exit 0 clean, 1 threat; anything else is an error).
import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import { connect } from "node:net";
import { isAbsolute } from "node:path";

export type ScannedFile = { name: string; mimeType: string; bytes: Uint8Array };
export type ScanVerdict = { clean: true } | { clean: false; code: "file_threat" | "file_scan_failed"; message: string };
export interface FileScanner {
  /** What it is, for the start-up log. */
  readonly description: string;
  scan(file: ScannedFile): Promise<ScanVerdict>;
}

const SCAN_TIMEOUT_MS = 30_000;
/** clamd's StreamMaxLength defaults to 25 MiB; chunks are sent at most this large. */
const CHUNK_BYTES = 64 * 1024;
const REPLY_MAX_BYTES = 4096;

/** clamd's INSTREAM: "zINSTREAM\0", then 4-byte big-endian length + bytes per chunk, a zero length to end; the reply "stream: OK" or "stream: NAME FOUND". */
export class ClamdScanner implements FileScanner {
  readonly description: string;
  private readonly socketPath: string;
  private readonly timeoutMs: number;
  constructor(socketPath: string, options: { timeoutMs?: number } = {}) {
    this.socketPath = socketPath;
    this.timeoutMs = options.timeoutMs ?? SCAN_TIMEOUT_MS;
    this.description = `clamd at ${socketPath}`;
  }

  scan(file: ScannedFile): Promise<ScanVerdict> {
    return new Promise((resolve) => {
      let reply = "";
      let settled = false;
      const done = (verdict: ScanVerdict) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        resolve(verdict);
      };
      const failed = (why: string): ScanVerdict => ({ clean: false, code: "file_scan_failed", message: `the file scanner could not check it (${why})` });
      const timer = setTimeout(() => done(failed("no answer in time")), this.timeoutMs);
      const socket = connect(this.socketPath);
      socket.on("error", (error) => done(failed(`clamd: ${error.message}`)));
      socket.on("data", (chunk: Buffer) => {
        reply += chunk.toString("utf8");
        if (reply.length > REPLY_MAX_BYTES) done(failed("clamd answered too much"));
        else if (reply.includes("\0")) done(clamdVerdict(reply));
      });
      socket.on("end", () => done(clamdVerdict(reply)));
      socket.on("connect", () => {
        socket.write("zINSTREAM\0");
        for (let offset = 0; offset < file.bytes.length; offset += CHUNK_BYTES) {
          const chunk = file.bytes.subarray(offset, offset + CHUNK_BYTES);
          const length = Buffer.alloc(4);
          length.writeUInt32BE(chunk.length);
          socket.write(length);
          socket.write(chunk);
        }
        socket.write(Buffer.alloc(4));
      });
    });
  }
}

/** clamd's answer to INSTREAM. */
export function clamdVerdict(raw: string): ScanVerdict {
  const reply = raw.replace(/\0[\s\S]*$/, "").trim();
  if (/^stream: OK$/.test(reply)) return { clean: true };
  const found = /^stream: (.+) FOUND$/.exec(reply);
  if (found) return { clean: false, code: "file_threat", message: `the file scanner found ${found[1]!.slice(0, 200)}` };
  return { clean: false, code: "file_scan_failed", message: `the file scanner could not check it (clamd: ${reply.slice(0, 200) || "no answer"})` };
}

/** A command run once per file (no shell), the file on stdin, CAPLO_FILE_NAME and CAPLO_FILE_TYPE set: exit 0 clean, 1 threat. */
export class CommandScanner implements FileScanner {
  readonly description: string;
  private readonly command: string;
  private readonly timeoutMs: number;
  constructor(command: string, options: { timeoutMs?: number } = {}) {
    this.command = command;
    this.timeoutMs = options.timeoutMs ?? SCAN_TIMEOUT_MS;
    this.description = `command ${command}`;
  }

  scan(file: ScannedFile): Promise<ScanVerdict> {
    return new Promise((resolve) => {
      let output = "";
      let settled = false;
      const done = (verdict: ScanVerdict) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(verdict);
      };
      const child = spawn(this.command, [], {
        stdio: ["pipe", "pipe", "pipe"],
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", CAPLO_FILE_NAME: file.name, CAPLO_FILE_TYPE: file.mimeType },
      });
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        done({ clean: false, code: "file_scan_failed", message: "the file scanner could not check it (no answer in time)" });
      }, this.timeoutMs);
      const keep = (chunk: Buffer) => {
        if (output.length < REPLY_MAX_BYTES) output += chunk.toString("utf8");
      };
      child.stdout.on("data", keep);
      child.stderr.on("data", keep);
      child.on("error", (error) => done({ clean: false, code: "file_scan_failed", message: `the file scanner could not check it (${error.message})` }));
      child.on("close", (code) => {
        const said = output.trim().split("\n")[0]?.slice(0, 200) ?? "";
        if (code === 0) done({ clean: true });
        else if (code === 1) done({ clean: false, code: "file_threat", message: `the file scanner refused it${said ? ` (${said})` : ""}` });
        else done({ clean: false, code: "file_scan_failed", message: `the file scanner could not check it (exit ${code ?? "signal"}${said ? `: ${said}` : ""})` });
      });
      // A scanner that stops reading early (it has decided) is not an error of ours.
      child.stdin.on("error", () => undefined);
      child.stdin.end(Buffer.from(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength));
    });
  }
}

export type ScannerSetting = { ok: true; scanner?: FileScanner } | { ok: false; error: { code: "setting_invalid"; path: string; message: string } };

/** The operator's scanner from the environment: at most one of CAPLO_FILE_SCAN_CLAMD and CAPLO_FILE_SCAN_COMMAND. */
export function readFileScanner(env: Record<string, string | undefined>): ScannerSetting {
  const clamd = env.CAPLO_FILE_SCAN_CLAMD || undefined;
  const command = env.CAPLO_FILE_SCAN_COMMAND || undefined;
  const invalid = (path: string, message: string): ScannerSetting => ({ ok: false, error: { code: "setting_invalid", path, message } });
  if (clamd && command) return invalid("CAPLO_FILE_SCAN_CLAMD", "set CAPLO_FILE_SCAN_CLAMD or CAPLO_FILE_SCAN_COMMAND, not both");
  if (clamd) {
    if (!isAbsolute(clamd)) return invalid("CAPLO_FILE_SCAN_CLAMD", `${clamd}: an absolute path to clamd's Unix socket, for example /run/clamav/clamd.ctl`);
    return { ok: true, scanner: new ClamdScanner(clamd) };
  }
  if (command) {
    const stat = statSync(command, { throwIfNoEntry: false });
    if (!isAbsolute(command) || !stat?.isFile() || (stat.mode & 0o111) === 0) {
      return invalid("CAPLO_FILE_SCAN_COMMAND", `${command}: an absolute path to an executable file (run with the file on its standard input; exit 0 clean, 1 threat)`);
    }
    return { ok: true, scanner: new CommandScanner(command) };
  }
  return { ok: true };
}
