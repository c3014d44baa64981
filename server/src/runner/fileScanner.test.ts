// The operator's file scanners against real counterparts: a fake clamd on a Unix socket that speaks
// INSTREAM exactly (it parses "zINSTREAM\0", the 4-byte big-endian chunk lengths and the zero-length end,
// and checks it received the file's bytes), and a real shell script as the command.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClamdScanner, CommandScanner, clamdVerdict, readFileScanner } from "./fileScanner.ts";

const EICAR = "X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*";
const dir = mkdtempSync(join(tmpdir(), "caplo-scan-"));
const socketPath = join(dir, "clamd.sock");
const received: { command: string; chunks: number[]; bytes: Buffer }[] = [];
let server: Server;

/** Parses one INSTREAM session; undefined until the zero-length chunk arrived. */
function parseInstream(data: Buffer): { command: string; chunks: number[]; bytes: Buffer } | undefined {
  const command = "zINSTREAM\0";
  if (data.length < command.length) return undefined;
  const chunks: number[] = [];
  const parts: Buffer[] = [];
  let offset = command.length;
  for (;;) {
    if (data.length < offset + 4) return undefined;
    const length = data.readUInt32BE(offset);
    offset += 4;
    if (length === 0) return { command: data.toString("latin1", 0, command.length), chunks, bytes: Buffer.concat(parts) };
    if (data.length < offset + length) return undefined;
    chunks.push(length);
    parts.push(data.subarray(offset, offset + length));
    offset += length;
  }
}

beforeAll(async () => {
  server = createServer((socket) => {
    let data = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const session = parseInstream(data);
      if (!session) return;
      received.push(session);
      if (session.command !== "zINSTREAM\0") socket.end("UNKNOWN COMMAND\0");
      else if (session.bytes.toString("latin1").includes("EICAR-STANDARD-ANTIVIRUS-TEST-FILE")) socket.end("stream: Eicar-Signature FOUND\0");
      else if (session.bytes.toString("latin1").includes("make-clamd-fail")) socket.end("INSTREAM size limit exceeded. ERROR\0");
      else socket.end("stream: OK\0");
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const file = (text: string | Buffer, name = "a.pdf") => ({ name, mimeType: "application/pdf", bytes: new Uint8Array(typeof text === "string" ? Buffer.from(text, "latin1") : text) });

describe("clamd scanner (INSTREAM over a Unix socket)", () => {
  it("sends the file in length-prefixed chunks with a zero-length end; OK is clean, FOUND is a threat", async () => {
    const big = Buffer.alloc(150 * 1024, 7);
    const scanner = new ClamdScanner(socketPath);
    expect(await scanner.scan(file(big))).toEqual({ clean: true });
    expect(received.at(-1)).toEqual({ command: "zINSTREAM\0", chunks: [65536, 65536, 22528], bytes: big });
    expect(await scanner.scan(file(`%PDF-1.4\n${EICAR}\n`))).toEqual({ clean: false, code: "file_threat", message: "the file scanner found Eicar-Signature" });
  });

  it("an error answer, no answer in time, or no clamd at all refuses the file (fail closed)", async () => {
    expect(await new ClamdScanner(socketPath).scan(file("make-clamd-fail"))).toMatchObject({ clean: false, code: "file_scan_failed", message: expect.stringContaining("size limit exceeded") });
    expect(await new ClamdScanner(join(dir, "nowhere.sock")).scan(file("x"))).toMatchObject({ clean: false, code: "file_scan_failed" });
    const silent = createServer(() => undefined);
    const silentPath = join(dir, "silent.sock");
    await new Promise<void>((resolve) => silent.listen(silentPath, resolve));
    try {
      expect(await new ClamdScanner(silentPath, { timeoutMs: 200 }).scan(file("x"))).toEqual({ clean: false, code: "file_scan_failed", message: "the file scanner could not check it (no answer in time)" });
    } finally {
      silent.close();
    }
    expect(clamdVerdict("stream: OK\0")).toEqual({ clean: true });
    expect(clamdVerdict("")).toMatchObject({ clean: false, code: "file_scan_failed" });
  });
});

describe("command scanner", () => {
  const script = join(dir, "scan.sh");
  beforeAll(() => {
    writeFileSync(script, `#!/bin/sh\n# exit 0 clean, 1 threat, 2 error (clamscan's convention)\ncontent=$(cat)\ncase "$content" in\n  *EICAR-STANDARD*) echo "Eicar-Test-Signature in $CAPLO_FILE_NAME"; exit 1;;\n  *break-me*) echo "cannot read database" >&2; exit 2;;\nesac\nexit 0\n`);
    chmodSync(script, 0o755);
  });

  it("gives the file on stdin: exit 0 is clean, 1 a threat (its first line said), anything else an error", async () => {
    const scanner = new CommandScanner(script);
    expect(await scanner.scan(file("%PDF-1.4 plain"))).toEqual({ clean: true });
    expect(await scanner.scan(file(EICAR, "bad.pdf"))).toEqual({ clean: false, code: "file_threat", message: "the file scanner refused it (Eicar-Test-Signature in bad.pdf)" });
    expect(await scanner.scan(file("break-me"))).toEqual({ clean: false, code: "file_scan_failed", message: "the file scanner could not check it (exit 2: cannot read database)" });
  });

  it("is read from CAPLO_FILE_SCAN_CLAMD or CAPLO_FILE_SCAN_COMMAND, each refused by name when wrong", () => {
    expect(readFileScanner({})).toEqual({ ok: true });
    expect(readFileScanner({ CAPLO_FILE_SCAN_CLAMD: socketPath })).toMatchObject({ ok: true, scanner: { description: `clamd at ${socketPath}` } });
    expect(readFileScanner({ CAPLO_FILE_SCAN_COMMAND: script })).toMatchObject({ ok: true, scanner: { description: `command ${script}` } });
    expect(readFileScanner({ CAPLO_FILE_SCAN_CLAMD: "clamd.sock" })).toMatchObject({ ok: false, error: { code: "setting_invalid", path: "CAPLO_FILE_SCAN_CLAMD" } });
    expect(readFileScanner({ CAPLO_FILE_SCAN_COMMAND: join(dir, "missing.sh") })).toMatchObject({ ok: false, error: { code: "setting_invalid", path: "CAPLO_FILE_SCAN_COMMAND" } });
    expect(readFileScanner({ CAPLO_FILE_SCAN_CLAMD: socketPath, CAPLO_FILE_SCAN_COMMAND: script })).toMatchObject({ ok: false, error: { code: "setting_invalid" } });
  });
});
