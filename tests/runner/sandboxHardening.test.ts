// More escape attempts from the hostile package (packages/escape), each next to its control: the same
// code run with plain Node 24 (control.mjs, no sandbox) gets through, so each refusal here is the
// sandbox's doing. One sandboxed process serves the whole file.
import { spawnSync } from "node:child_process";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createNetServer } from "node:net";
import { chmodSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { findNode24, REPO_ROOT } from "../../server/src/runner/node24.ts";
import { CALL_LOG_BYTES_MAX, CALL_LOG_LINES_MAX, LOG_DATA_BYTES_MAX } from "../../server/src/runner/logBounds.ts";
import { spawnSandboxed } from "../../server/src/runner/sandbox.ts";
import { IDLE_BYTES_MAX, MESSAGE_BYTES_MAX, REQUEST_EXTRA_BYTES } from "../../server/src/runner/childTransport.ts";
import { IDLE_CPU_WINDOW_MS } from "../../server/src/runner/packageProcess.ts";

/** The runner's look at a process's CPU between calls, shortened from IDLE_CPU_WINDOW_MS so the test waits seconds, not tens. */
const IDLE_WINDOW_MS = Math.min(IDLE_CPU_WINDOW_MS, 2000);
import { parseServeArgs } from "../../server/src/cli/serve.ts";
import { PACKAGES_DIR, TEST_HOST, testVersion } from "./testPackages.ts";

type Report = { ok: boolean; value?: unknown; code?: string; message?: string; cause?: string };

const node = (() => {
  const found = findNode24();
  if (!found.ok) throw new Error(found.message);
  return found.path;
})();
const ESCAPE = join(PACKAGES_DIR, "escape");
const scratch = mkdtempSync(join(tmpdir(), "caplo-hardening-"));
chmodSync(scratch, 0o755); // the weak mode's user reads its script here (no bind mounts there)
const rootOnly = join(scratch, "root-only.txt");
// In a folder every package may read (node_modules is bound into each sandbox), not in the escape
// package itself: its files' hash is the version's, shared with sandboxEscape.test.ts.
const hardLink = join(REPO_ROOT, "node_modules", ".cache", `caplo-hardlink-${process.pid}.txt`);
let http: Server;
let port = 0;
let closedPort = 0;
let runner: CaploToolRunner;
const version = testVersion(
  "escape",
  [
    { name: "attempt", policy: { effect: "read", timeoutSeconds: 15 } },
    { name: "hang", policy: { effect: "read", timeoutSeconds: 1 } },
  ],
  { egress: ["allowed.test", "refused.test"] },
);

async function attempt(kind: string, extra: Record<string, unknown> = {}): Promise<Report> {
  const result = await runner.call({ packageVersionId: version.id, tool: "attempt", args: { kind, ...extra }, context: { invocationId: `inv-${kind}`, secrets: {} } });
  expect(result.isError, result.modelText).toBe(false);
  return result.structuredContent as Report;
}

/** The same attacks with plain Node 24, as root, with this process's environment: no sandbox at all. */
function control(attacks: Array<[string, Record<string, unknown>?]>, nodeFlags: string[] = []): Record<string, Report> {
  const run = spawnSync(node, [...nodeFlags, join(ESCAPE, "control.mjs"), JSON.stringify(attacks)], { encoding: "utf8", timeout: 60_000 });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Record<string, Report>;
}
const CONTROL_DB = join(scratch, "control.db");
/** What reached the test's server (allowed.test): each request's Host and path. */
const reached: string[] = [];
/** Every control of this file in one plain Node 24 process (one start), with one flag to show in execArgv. */
let controls: Record<string, Report> = {};

beforeAll(async () => {
  http = createHttpServer((request, response) => {
    reached.push(`${request.headers.host} ${request.url}`);
    response.end(`internal ${request.url}`);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  port = (http.address() as { port: number }).port;
  // A port nothing listens on: the upstream refuses the connection.
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  closedPort = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  writeFileSync(rootOnly, "root-only secret 41c9\n");
  chmodSync(rootOnly, 0o600);
  rmSync(hardLink, { force: true });
  mkdirSync(join(REPO_ROOT, "node_modules", ".cache"), { recursive: true });
  linkSync(rootOnly, hardLink);
  controls = control(
    [["sqlite_import", { path: CONTROL_DB }], ["exec_argv"], ["argv_paths"], ["report"], ["proc_fds"], ["proc1_environ"], ["binding_fs"], ["v8_flags"], ["read_proc_environ"], ["read_runner", { path: hardLink }]],
    ["--max-old-space-size=200"],
  );
  runner = new CaploToolRunner({ hostModule: TEST_HOST, egressResolve: `allowed.test=127.0.0.1:${port},refused.test=127.0.0.1:${closedPort}`, idleCpuWindowMs: IDLE_WINDOW_MS });
  await runner.load(version);
}, 60_000);

afterAll(async () => {
  await runner?.close();
  await new Promise((resolve) => http?.close(resolve));
  rmSync(hardLink, { force: true });
  rmSync(scratch, { recursive: true, force: true });
});

describe("the sandbox closes what plain Node 24 leaves open", () => {
  it("node:sqlite: plain Node creates a database file anywhere; in the sandbox neither import nor getBuiltinModule has it", async () => {
    expect(controls.sqlite_import).toEqual({ ok: true, value: "created" });
    expect(existsSync(CONTROL_DB)).toBe(true);
    const inside = join(scratch, "sandbox.db");
    const imported = await attempt("sqlite_import", { path: inside });
    expect(imported).toMatchObject({ ok: false, code: "ERR_ACCESS_DENIED" });
    expect(imported.message).toContain("node:sqlite");
    expect(await attempt("sqlite_builtin", { path: inside })).toMatchObject({ ok: false, code: "ABSENT" });
    expect(existsSync(inside)).toBe(false);
  });

  it("hides where it runs: Node's flags, the command line, the diagnostic report, the proxy socket's host path, the host name", async () => {
    expect(controls.exec_argv).toEqual({ ok: true, value: ["--max-old-space-size=200"] });
    expect(JSON.stringify(controls.report!.value)).toContain(join(ESCAPE, "control.mjs"));
    expect((controls.argv_paths!.value as string[])[0]).toBe(node);

    expect(await attempt("exec_argv")).toMatchObject({ ok: false, code: "EMPTY" });
    const argv = await attempt("argv_paths");
    expect(argv.value).toEqual(["node", "caplo-host"]);
    expect(await attempt("report")).toMatchObject({ ok: false, code: "ERR_ACCESS_DENIED" });
    // The proxy socket's folder is /egress inside the root: no scratch path, no runner pid.
    expect(await attempt("proxy_path")).toEqual({ ok: true, value: "/egress/proxy.sock" });
    expect(hostname()).not.toBe("caplo-sandbox");
    expect(await attempt("hostname")).toEqual({ ok: true, value: "caplo-sandbox" });
  });

  it("refuses /proc/self/fd, /proc/1/environ, process.binding and V8 flags, which plain Node allows", async () => {
    const kinds = ["proc_fds", "proc1_environ", "binding_fs", "v8_flags", "read_proc_environ"] as const;
    // (pid 1 of this machine may be another user's: its environ is the sandbox's pid 1 inside, itself.)
    for (const kind of kinds) if (kind !== "proc1_environ") expect(controls[kind]!.ok, kind).toBe(true);
    for (const kind of kinds) expect(await attempt(kind), kind).toMatchObject({ ok: false, code: "ERR_ACCESS_DENIED" });
  });

  it("a hard link, in a folder the package may read, to a root-only file of the host: plain Node (root) reads it, the sandbox's user cannot", async () => {
    expect(controls.read_runner).toEqual({ ok: true, value: "root-only secret 41c9\n" });
    expect(await attempt("read_runner", { path: hardLink })).toMatchObject({ ok: false, code: "EACCES" });
  });

  it("the network used after a call has answered is in the invocation log as egress between calls, allowed and refused, at most 20 records a process", async () => {
    const since = new Date().toISOString();
    const urls = ["http://allowed.test/later", "http://elsewhere.test/", ...Array.from({ length: 30 }, (_, n) => `http://nope${n}.test/`)];
    expect(await attempt("fetch_later", { urls, delayMs: 200 })).toEqual({ ok: true, value: "answered" });
    const between = () => runner.logStore.read().filter((record) => record.kind === "between calls" && record.packageVersionId === version.id);
    await expect.poll(() => between().some((record) => record.logs.some((line) => line.message.includes("any more are not recorded"))), { timeout: 20_000 }).toBe(true);
    const mine = between().filter((record) => record.at >= since);
    // allowed.test:80 is resolved here to this test's own server (the runner's resolve overrides).
    expect(mine[0]!.logs[0]).toMatchObject({ level: "warn", message: `egress between calls: connected to allowed.test:${port}`, data: { host: "allowed.test", port } });
    expect(mine[0]).toMatchObject({ tool: "", isError: false, durationMs: 0 });
    expect(mine[1]!.logs[0]!.message).toBe("egress between calls refused: elsewhere.test refused: not in the package's egress list");
    expect(mine[1]).toMatchObject({ isError: true });
    // Bounded per process: the call's own records are not pushed out of the log by a package's timers.
    expect(between()).toHaveLength(20);
    expect(between().at(-1)!.logs.at(-1)!.message).toBe("egress between calls: 20 recorded for this process; any more are not recorded");
    // The call itself saw none of it: its record has no egress line.
    expect(runner.logStore.read("inv-fetch_later")[0]!.logs.filter((line) => line.message.includes("egress"))).toEqual([]);
  });

  it("a request through a listed host's tunnel naming another site in its Host (domain fronting) never reaches the host; its own Host does", async () => {
    const fronted = await attempt("http_fronted", { host: "allowed.test", front: "evil.test", path: "/fronted" });
    expect(fronted.ok).toBe(false);
    expect(reached.filter((line) => line.endsWith("/fronted"))).toEqual([]);
    const lines = runner.logStore.read("inv-http_fronted")[0]!.logs.map((line) => line.message);
    expect(lines).toContainEqual(expect.stringContaining('the tunnel to allowed.test carried an HTTP request for "evil.test"'));
    expect(await attempt("http_fronted", { host: "allowed.test", front: "allowed.test", path: "/own" })).toEqual({ ok: true, value: "internal /own" });
    expect(reached).toContain("allowed.test /own");
  });

  it("a listed host whose upstream refuses the connection is refused at once (502), not left hanging until the timeout", async () => {
    expect(await attempt("fetch_listed")).toEqual({ ok: true, value: "internal /hello" });
    const refused = await attempt("fetch_url", { url: "http://refused.test/" });
    expect(refused.ok).toBe(false);
    expect(refused.cause).toContain(`egress refused: refused.test:${closedPort} unreachable`);
    expect(refused.cause).toContain("ECONNREFUSED");
  });

  it("bounds each log line's data and each call's log, and says what was cut", async () => {
    const result = await runner.call({
      packageVersionId: version.id,
      tool: "attempt",
      args: { kind: "log_flood", bytes: 1024 * 1024, big: 12, small: 1500 },
      context: { invocationId: "inv-flood", secrets: {} },
    });
    expect(result.structuredContent).toEqual({ ok: true, value: "flooded" });
    const big = result.logs.filter((line) => line.message.startsWith("big "));
    expect(big.length).toBe(12);
    for (const line of big) expect((line.data as { cut: string }).cut).toContain(`data of ${1024 * 1024 + 2} bytes, over the ${LOG_DATA_BYTES_MAX}-byte limit`);
    expect(result.logs.length).toBeLessThanOrEqual(CALL_LOG_LINES_MAX + 1);
    const bytes = result.logs.reduce((sum, line) => sum + Buffer.byteLength(line.message) + Buffer.byteLength(JSON.stringify(line.data ?? "")), 0);
    expect(bytes).toBeLessThan(CALL_LOG_BYTES_MAX + 1024);
    const note = result.logs.at(-1)!;
    expect(note.level).toBe("warn");
    expect(note.message).toMatch(/^[0-9]+ log lines \([0-9]+ bytes\) dropped: a call keeps at most 1000 lines and 262144 bytes of log$/);
    expect(runner.logStore.read("inv-flood")[0]!.logs.at(-1)!.message).toBe(note.message);
  });

  it("a result nested deeper than the runner's stack fails the call, which is still recorded, instead of the call throwing", async () => {
    const result = await runner.call({ packageVersionId: version.id, tool: "attempt", args: { kind: "deep_result", bytes: 20_000 }, context: { invocationId: "inv-deep", secrets: {} } });
    expect(result).toMatchObject({ isError: true, modelText: expect.stringContaining("The tool's result could not be checked: ") });
    expect(runner.logStore.read("inv-deep")).toMatchObject([{ invocationId: "inv-deep", isError: true }]);
    expect(await attempt("wasm")).toEqual({ ok: true, value: "compiled" });
  });

  it("a handler that blocks its thread for good (Atomics.wait) times out, and its process is replaced", async () => {
    const starts = runner.starts(version.id);
    const hung = await runner.call({ packageVersionId: version.id, tool: "hang", args: {}, context: { invocationId: "inv-hang", secrets: {} } });
    expect(hung.isError).toBe(true);
    expect(hung.modelText).toContain("timed out after 1 seconds");
    // WebAssembly is allowed (it computes, it reaches nothing); the next call gets a fresh process.
    expect(await attempt("wasm")).toEqual({ ok: true, value: "compiled" });
    expect(runner.starts(version.id)).toBe(starts + 1);
  });
});

describe("writing to the runner after the call has answered", () => {
  it("a late log line is let be; stdout or stderr written for good between calls (8 MiB messages) stops the process, whose next call starts a fresh one", async () => {
    const starts = runner.starts(version.id);
    expect(await attempt("late_log")).toEqual({ ok: true, value: "answered" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await attempt("wasm")).toEqual({ ok: true, value: "compiled" });
    expect(runner.starts(version.id)).toBe(starts);

    // Each byte read is read (stdout: parsed) on the server's thread: the runner stops reading and stops the package.
    for (const [stream, restarts] of [["stdout", 1], ["stderr", 2]] as const) {
      const flooding = (await runner.processOf(version.id))!;
      expect(await attempt("flood_after", { bytes: 8 * 1024 * 1024, path: stream })).toEqual({ ok: true, value: "answered" });
      await new Promise<void>((resolve) => flooding.onExit(resolve));
      expect(flooding.exitReason).toBe(`was stopped: it wrote over ${IDLE_BYTES_MAX} bytes to ${stream} while no call was in flight`);
      expect(await attempt("wasm")).toEqual({ ok: true, value: "compiled" });
      expect(runner.starts(version.id)).toBe(starts + restarts);
    }
  }, 60_000);

  it("log lines written during a call past what a request in flight allows stop the process: the call fails, and the next starts a fresh one", async () => {
    const starts = runner.starts(version.id);
    // 160 MiB of log lines, each parsed on the server's thread; a call allows its answer and 16 MiB more.
    const result = await runner.call({ packageVersionId: version.id, tool: "attempt", args: { kind: "log_flood", bytes: 8 * 1024 * 1024, big: 20, small: 0 }, context: { invocationId: "inv-flood-during", secrets: {} } });
    expect(result.isError).toBe(true);
    expect(result.modelText).toContain(`(its process was stopped: it wrote more to stdout than its requests in flight allow (${MESSAGE_BYTES_MAX + REQUEST_EXTRA_BYTES} bytes each))`);
    expect(await attempt("wasm")).toEqual({ ok: true, value: "compiled" });
    expect(runner.starts(version.id)).toBe(starts + 1);
  }, 60_000);

  it("a process idle between calls is let be; one that computes for good after its call has answered is stopped", async () => {
    const starts = runner.starts(version.id);
    expect(await attempt("wasm")).toEqual({ ok: true, value: "compiled" });
    // Idle over two of the watch's windows: nothing to stop.
    await new Promise((resolve) => setTimeout(resolve, 2 * IDLE_WINDOW_MS + 500));
    expect(await attempt("wasm")).toEqual({ ok: true, value: "compiled" });
    expect(runner.starts(version.id)).toBe(starts);

    const spinning = (await runner.processOf(version.id))!;
    expect(await attempt("spin_after")).toEqual({ ok: true, value: "answered" });
    await new Promise<void>((resolve) => spinning.onExit(resolve));
    expect(spinning.exitReason).toMatch(/^was stopped: it used [0-9]+ ms of CPU in [0-9]+ ms while no call was in flight$/);
    expect(await attempt("wasm")).toEqual({ ok: true, value: "compiled" });
    expect(runner.starts(version.id)).toBe(starts + 1);
  }, 60_000);
});

describe("inherited file descriptors", () => {
  it("descriptors 200-202 left open by the operator's shell: plain Node reads, holds and appends through them; the sandbox has none of them", () => {
    const outsideDir = join(scratch, "outside-folder");
    mkdirSync(outsideDir);
    const appended = join(scratch, "host-file.log");
    writeFileSync(appended, "");
    const withFds = (command: string[]) =>
      spawnSync("bash", ["-c", 'exec 200<"$1" 201<"$2" 202>>"$3"; shift 3; exec "$@"', "fds", rootOnly, outsideDir, appended, ...command], { encoding: "utf8", timeout: 90_000, cwd: REPO_ROOT });
    const plain = withFds([node, join(ESCAPE, "control.mjs"), JSON.stringify([["inherited_fds", { fds: [200, 201, 202] }]])]);
    expect(JSON.parse(plain.stdout).inherited_fds).toEqual({ ok: true, value: { 200: "root-only secret 41c9", 201: "directory held", 202: "appended" } });
    expect(readFileSync(appended, "utf8")).toBe("appended by the package\n");

    const sandboxed = withFds([process.execPath, "--import", "tsx", join(import.meta.dirname, "support", "inheritedFds.ts")]);
    expect(sandboxed.status, sandboxed.stderr).toBe(0);
    expect(JSON.parse(sandboxed.stdout)).toEqual({ mode: "isolated", report: { ok: true, value: { 200: "EBADF", 201: "EBADF", 202: "EBADF" } } });
    expect(readFileSync(appended, "utf8")).toBe("appended by the package\n");
  }, 120_000);
});

describe("the weak mode (CAPLO_SANDBOX=weak)", () => {
  it("runs the package as the unprivileged user, without inherited descriptors or node:sqlite, where plain Node runs it as root", async () => {
    const dir = join(scratch, "weak");
    mkdirSync(dir);
    chmodSync(dir, 0o755);
    const script = join(dir, "probe.mjs");
    writeFileSync(script, 'let sqlite = "absent"; try { await import("node:sqlite"); sqlite = "loaded"; } catch (e) { sqlite = e.code; }\nprocess.stdout.write(JSON.stringify({ uid: process.getuid(), sqlite, execArgv: process.execArgv }));\n');
    chmodSync(script, 0o644);
    const plain = spawnSync(node, [script], { encoding: "utf8" });
    expect(JSON.parse(plain.stdout)).toEqual({ uid: 0, sqlite: "loaded", execArgv: [] });
    const weak = spawnSandboxed({ node, mode: "weak", readPaths: [dir], memoryMb: 64, script: [script] });
    let out = "";
    weak.child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
    await new Promise((resolve) => weak.child.once("close", resolve));
    expect(JSON.parse(out)).toEqual({ uid: 65534, sqlite: "ERR_ACCESS_DENIED", execArgv: [] });
  });

  it("caplo serve refuses it and says why, before anything starts", () => {
    expect(parseServeArgs(["--agent", "shop"], { CAPLO_SANDBOX: "weak" })).toEqual({
      ok: false,
      error: { code: "sandbox_weak_refused", path: "CAPLO_SANDBOX", message: expect.stringContaining("CAPLO_SANDBOX=weak is for caplo tool test only") },
    });
    expect(parseServeArgs(["--agent", "shop"], {}).ok).toBe(true);
  });
});
