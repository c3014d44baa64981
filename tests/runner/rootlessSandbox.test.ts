// The isolated sandbox started by a runner that is not root (a container's non-root user): the launcher
// makes a user namespace of its own first (unshare --user --map-root-user), mounts the same read-only root
// there, and the package runs with every capability dropped and no new privileges. Run here as root, the
// test starts the runner's side as uid 65534 (setpriv), and checks from outside what the package got:
// pid 1 of its own pid namespace, no network (a loopback server of the host that plain Node 24 reaches is
// unreachable), and in /proc/<pid>/status no capability at all, NoNewPrivs 1, the runner's own uid. A
// scratch folder another user's runner left in /tmp does not stop it (runtimeDir.ts's sweep passes it by).
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { findNode24, REPO_ROOT } from "../../server/src/runner/node24.ts";

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
// Whether this machine lets an unprivileged user make a user namespace at all (a kernel or container setting).
const userNamespaces =
  asRoot && spawnSync("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "unshare", "--user", "--map-root-user", "true"]).status === 0;
const scratch = mkdtempSync(join(tmpdir(), "caplo-rootless-"));
chmodSync(scratch, 0o755);
let server: Server;
let port = 0;

beforeAll(async () => {
  // A root runner's scratch folder left by a runner that died: the unprivileged runner's sweep must pass
  // it by (it cannot remove it), not fail on it.
  const dead = spawnSync(process.execPath, ["-e", ""]).pid;
  mkdirSync(join(tmpdir(), `caplo-runner-${dead}-rootless-test`, "root-only"), { recursive: true, mode: 0o700 });
  server = createServer((socket) => socket.end("hello from the host\n"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
  // The package: tries the host's loopback server, says its pid, and waits to be looked at from outside.
  writeFileSync(
    join(scratch, "package.mjs"),
    `import { connect } from "node:net";
const reached = await new Promise((resolve) => {
  const socket = connect({ host: "127.0.0.1", port: ${port} });
  socket.once("data", () => resolve("reached"));
  socket.once("error", (error) => resolve(error.code));
});
console.log(JSON.stringify({ pid: process.pid, reached }));
process.stdin.resume();
process.stdin.once("end", () => process.exit(0));
`,
  );
  // The runner's side, as the unprivileged user: the real launcher (spawnSandboxed) in isolated mode.
  writeFileSync(
    join(scratch, "runner.mts"),
    `import { probeIsolation, spawnSandboxed } from ${JSON.stringify(join(REPO_ROOT, "server", "src", "runner", "sandbox.ts"))};
const probe = probeIsolation();
if (!probe.available) { console.log(JSON.stringify({ probe })); process.exit(0); }
const sandbox = spawnSandboxed({ node: process.argv[2], mode: "isolated", readPaths: [${JSON.stringify(scratch)}], memoryMb: 64, preload: ${JSON.stringify(join(scratch, "package.mjs"))}, script: [${JSON.stringify(join(scratch, "package.mjs"))}] });
sandbox.child.stdout.once("data", (line) => {
  console.log(JSON.stringify({ probe, launcher: sandbox.child.pid, package: JSON.parse(String(line)) }));
  process.stdin.once("data", () => sandbox.child.stdin.end());
});
sandbox.child.stderr.pipe(process.stderr);
sandbox.child.once("exit", (code) => { sandbox.cleanup(); process.exit(code ?? 1); });
`,
  );
});

afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  rmSync(scratch, { recursive: true, force: true });
  for (const name of readdirSync(tmpdir())) if (name.endsWith("-rootless-test") && name.startsWith("caplo-runner-")) rmSync(join(tmpdir(), name), { recursive: true, force: true });
});

/** The descendants of a process, by /proc (children of children). */
function descendants(pid: number): number[] {
  const children = spawnSync("pgrep", ["-P", String(pid)], { encoding: "utf8" }).stdout.trim().split("\n").filter(Boolean).map(Number);
  return children.flatMap((child) => [child, ...descendants(child)]);
}

describe.skipIf(!userNamespaces)("the isolated sandbox started by a user that is not root", () => {
  it("runs the package in a user namespace: its own pid 1, no network, no capabilities, no new privileges", async () => {
    const node = findNode24();
    if (!node.ok) throw new Error(node.message);
    // Control: plain Node 24 as the same user reaches the host's loopback server.
    // (Not spawnSync: the host's server answers on this process's event loop.)
    const control = spawn("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", node.path, join(scratch, "package.mjs")], { stdio: ["pipe", "pipe", "inherit"] });
    const controlLine = await new Promise<string>((resolve) => control.stdout.once("data", (chunk: Buffer) => resolve(chunk.toString())));
    control.stdin.end();
    expect(JSON.parse(controlLine).reached).toBe("reached");

    const tsx = join(REPO_ROOT, "node_modules", "tsx", "dist", "esm", "index.mjs");
    const runner = spawn("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", process.execPath, "--import", tsx, join(scratch, "runner.mts"), node.path], {
      cwd: scratch,
      env: { PATH: process.env.PATH, HOME: scratch },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const exited = new Promise((resolve) => runner.once("exit", resolve));
    onTestFinished(() => void (runner.exitCode === null && runner.kill("SIGKILL")));
    let stderr = "";
    runner.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const line = await new Promise<string>((resolve, reject) => {
      runner.stdout.once("data", (chunk: Buffer) => resolve(chunk.toString()));
      runner.once("exit", (code) => reject(new Error(`the runner exited (${code}): ${stderr}`)));
    });
    const report = JSON.parse(line) as { probe: { available: boolean; reason?: string }; launcher: number; package: { pid: number; reached: string } };
    expect(report.probe).toEqual({ available: true });
    expect(report.package.pid).toBe(1);
    expect(report.package.reached).not.toBe("reached");
    // The package's Node, seen from the host: the process of the tree that runs package.mjs under node.
    const nodes = descendants(report.launcher).filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(join(scratch, "package.mjs"));
      } catch {
        return false;
      }
    });
    expect(nodes).toHaveLength(1);
    const status = Object.fromEntries(
      readFileSync(`/proc/${nodes[0]}/status`, "utf8")
        .split("\n")
        .map((entry) => entry.split(":\t"))
        .map(([key, value]) => [key, value?.trim()]),
    );
    expect(status.Uid).toBe(`${NOBODY}\t${NOBODY}\t${NOBODY}\t${NOBODY}`);
    for (const set of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) expect(status[set], set).toBe("0000000000000000");
    expect(status.NoNewPrivs).toBe("1");
    runner.stdin.write("done\n");
    expect(await exited).toBe(0);
  }, 60_000);
});
