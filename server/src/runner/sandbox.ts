// The sandbox launcher: starts a Node 24 process with Node's permission model (read only the listed
// folders, write nowhere, no child processes, workers or addons) inside Linux namespaces of its own
// (network: no route anywhere; pid: sees and signals only itself; mount: a read-only root holding only
// what it may load and its egress socket), as an unprivileged user, with an empty environment.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { PRELOAD_MODULE } from "./node24.ts";
import { runtimeDir } from "./runtimeDir.ts";

/** isolated: namespaces + chroot + permission model. weak: permission model only (operator's choice). */
export type SandboxMode = "isolated" | "weak";

export type IsolationProbe = { available: true } | { available: false; reason: string };

/** The unprivileged user the package runs as inside the sandbox (nobody). */
const SANDBOX_UID = 65534;
/**
 * Started as root: namespaces of the machine's root, and the package runs as nobody. Started as another
 * user (a container's non-root user): a user namespace of its own first (--map-root-user: the runner's
 * user is root inside it and may mount there), and as that namespace has no other user to change to, the
 * package keeps the runner's uid with every capability dropped (empty bounding and inheritable sets, no
 * new privileges): it cannot mount, remount or leave the chroot, and what it can reach is the same
 * read-only root. docs/runner.md says what differs (cgroups only where delegated).
 */
const ROOTLESS = process.getuid?.() !== 0;
const UNSHARE_FLAGS = [...(ROOTLESS ? ["--user", "--map-root-user"] : []), "--net", "--mount", "--pid", "--fork", "--ipc", "--uts", "--propagation", "private", "--kill-child=SIGKILL"];
const DROP = ROOTLESS ? "--inh-caps=-all --bounding-set=-all" : `--reuid=${SANDBOX_UID} --regid=${SANDBOX_UID} --clear-groups`;
/** util-linux setpriv, bound into the sandbox's root to drop privileges there. */
const SETPRIV = "/usr/bin/setpriv";
/** The launcher's shell (outside the root; the package never runs it). */
const BASH = "/bin/bash";
// No startup files: bash sources ~/.bashrc when its stdin is a socket (as Node's stdio pipes are), as if
// run by rshd; the launcher must run exactly its script.
const BASH_FLAGS = ["--norc", "--noprofile"];

/** Where the package's egress socket folder appears inside the sandbox's root (no host path, no pid). */
export const SANDBOX_EGRESS_DIR = "/egress";

// The sandbox's root is a folder of the runner's scratch space holding only empty mount points (made by
// the runner before the launch: sandboxRoot), and an fstab listing every mount the namespace needs: the
// folder itself bound read-only over itself, read-only binds of the listed paths, the egress socket folder
// (at /egress), a private /proc (pid namespace: only the sandbox's own processes) and a few device nodes.
// One mount(8) run mounts them all (mount -a -T): each command the launcher runs is a process start, and
// on a virtual machine those were most of a package's cold start (one mount per path measured about 6 ms
// of CPU each). The launcher then drops to the unprivileged user inside the root. First, before anything
// runs, it closes every file descriptor but 0, 1 and 2 (what the operator's shell or a supervisor left
// open would otherwise reach the package: a root-only file, a folder outside the root), and joins the
// sandbox's control groups (memory and process caps; "-" for none) by writing its own pid ("0").
// bash, not sh: dash cannot name a descriptor above 9.
// Arguments: ROOT FSTAB CGROUP_PROCS_FILES(colon-separated or -) READ_ONLY_PATH... -- CMD...
const CLOSE_INHERITED_FDS = `for fd in /proc/self/fd/*; do
  fd=\${fd##*/}
  case $fd in 0|1|2) ;; *) eval "exec $fd>&-" ;; esac
done`;
const ROOT_SCRIPT = `set -eu
${CLOSE_INHERITED_FDS}
R="$1"; FSTAB="$2"; CG="$3"; shift 3
if [ "$CG" != "-" ]; then
  IFS=:; for f in $CG; do echo 0 > "$f"; done; unset IFS
fi
mount -a -T "$FSTAB"
# A mount(8) older than util-linux 2.27 ignores ro on a bind: remount then, and stop if still writable.
ro() {
  if [ -w "$1" ]; then mount -o remount,bind,ro,nosuid,nodev "$1"; fi
  if [ -w "$1" ]; then echo "sandbox: $1 is still writable after a read-only bind" >&2; exit 1; fi
}
ro "$R"
while [ "$1" != "--" ]; do ro "$R$1"; shift; done; shift
# The UTS namespace starts with the host's name: the package sees its own (hostname(1) where /proc/sys
# is read-only, as in some containers).
if ! { echo caplo-sandbox > /proc/sys/kernel/hostname; } 2>/dev/null; then
  if command -v hostname >/dev/null; then hostname caplo-sandbox; fi
fi
# The shell exports variables of its own (PWD: the runner's folder, PATH, SHLVL): the package gets
# exactly the environment the runner gave (spawnSandboxed).
for v in $(compgen -e); do
  case $v in TZ|LANG|NODE_ENV|CAPLO_EGRESS_SOCKET|NODE_EXTRA_CA_CERTS) ;; *) export -n "$v" ;; esac
done
# setpriv drops to the unprivileged user (real, effective and saved ids, no groups, no new privileges)
# and only then sets the parent-death signal, which a change of user would clear: if the runner's
# launcher dies, the package dies with it.
exec chroot "$R" ${SETPRIV} ${DROP} --no-new-privs --pdeathsig=KILL "$@"`;

/** A path as an fstab field: space, tab, newline and backslash as octal escapes (fstab(5)). */
function fstabField(path: string): string {
  return path.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`);
}

const DEVICES = ["null", "zero", "random", "urandom"];

/**
 * Makes the sandbox's root at `root` (an empty folder of the runner's): a mount point for each path that
 * exists (a folder, or an empty file for a file), /proc, /dev and its nodes, /tmp and /egress, and the
 * fstab beside it that mounts them. Returns the fstab's path and the paths bound read-only.
 */
function sandboxRoot(root: string, readOnly: string[], egressDir: string | undefined): { fstab: string; bound: string[] } {
  chmodSync(root, 0o755);
  for (const dir of ["proc", "dev", "tmp"]) mkdirSync(join(root, dir));
  const lines = [`${fstabField(root)} ${fstabField(root)} none bind,ro,nosuid,nodev,noexec 0 0`];
  const bound: string[] = [];
  for (const listed of readOnly) {
    // As the kernel would resolve it: a `..` in a listed path never makes a mount point outside the root.
    const path = resolve("/", listed);
    let folder: boolean;
    try {
      folder = statSync(path).isDirectory();
    } catch {
      continue;
    }
    const target = join(root, path);
    if (folder) mkdirSync(target, { recursive: true });
    else {
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, "");
    }
    lines.push(`${fstabField(path)} ${fstabField(target)} none bind,ro,nosuid,nodev 0 0`);
    bound.push(path);
  }
  if (egressDir) {
    mkdirSync(join(root, SANDBOX_EGRESS_DIR));
    lines.push(`${fstabField(egressDir)} ${fstabField(join(root, SANDBOX_EGRESS_DIR))} none bind 0 0`);
  }
  lines.push(`proc ${fstabField(join(root, "proc"))} proc nosuid,nodev,noexec 0 0`);
  for (const device of DEVICES) {
    writeFileSync(join(root, "dev", device), "");
    lines.push(`/dev/${device} ${fstabField(join(root, "dev", device))} none bind 0 0`);
  }
  const fstab = `${root}.fstab`;
  writeFileSync(fstab, `${lines.join("\n")}\n`, { mode: 0o600 });
  return { fstab, bound };
}

/** Removes a root made by sandboxRoot and its fstab (the mounts were the namespace's, never the host's). */
function removeRoot(root: string): void {
  rmSync(root, { recursive: true, force: true });
  rmSync(`${root}.fstab`, { force: true });
}

let probed: IsolationProbe | undefined;

/** Whether namespaces and mounts work here (root, unshare present). Checked once per process. */
export function probeIsolation(): IsolationProbe {
  if (probed) return probed;
  if (process.platform !== "linux") return (probed = { available: false, reason: `namespaces need Linux (this is ${process.platform})` });
  const root = mkdtempSync(join(tmpdir(), "caplo-probe-"));
  try {
    const { fstab, bound } = sandboxRoot(root, ["/lib", "/lib64", "/usr/lib", "/usr/bin", "/bin"], undefined);
    const result = spawnSync("unshare", [...UNSHARE_FLAGS, "--", BASH, ...BASH_FLAGS, "-c", ROOT_SCRIPT, "sandbox", root, fstab, "-", ...bound, "--", "/bin/true"], {
      encoding: "utf8",
      timeout: 10_000,
    });
    if (result.error) probed = { available: false, reason: `unshare could not start: ${result.error.message}` };
    else if (result.status !== 0) probed = { available: false, reason: `unshare failed (${result.status}): ${result.stderr.trim().split("\n")[0] ?? ""}` };
    else probed = { available: true };
  } finally {
    removeRoot(root);
  }
  return probed;
}

export type SandboxChoice = { mode: SandboxMode | "unavailable"; note: string };

/**
 * The sandbox packages run in: isolated where namespaces work; the weak mode only where the caller allows
 * it (caplo tool test with CAPLO_SANDBOX=weak: serve, build and publish never do); else none at all.
 */
export function chooseSandbox(allowWeak: boolean): SandboxChoice {
  const isolation = probeIsolation();
  if (isolation.available) return { mode: "isolated", note: "sandbox: network, pid and mount namespaces + Node permission model" };
  if (allowWeak) {
    return {
      mode: "weak",
      note:
        `sandbox: WEAK MODE (CAPLO_SANDBOX=weak, for caplo tool test only): namespaces unavailable (${isolation.reason}); ` +
        "packages run as an unprivileged user with Node's permission model only: NOT network-isolated, and symbolic links under the readable folders are followed. Never serve customers this way.",
    };
  }
  return { mode: "unavailable", note: `sandbox unavailable: ${isolation.reason}. Untrusted packages are refused (CAPLO_SANDBOX=weak allows a weaker mode in caplo tool test only)` };
}

export type SandboxSpec = {
  node: string;
  mode: SandboxMode;
  /** Folders and files the process may read (its package, the SDK, shared, node_modules). */
  readPaths: string[];
  /** The egress socket's folder (bound writable so the socket can be connected to), if any. */
  egressDir?: string;
  egressSocket?: string;
  /** V8 old-space cap in MiB. */
  memoryMb: number;
  /** The egress preload Node loads first (`--import`); default sandboxPreload.ts. */
  preload?: string;
  /**
   * Operator-only: a PEM file of certificate authorities the package's TLS trusts besides Node's own
   * (NODE_EXTRA_CA_CERTS), for a local test API with its own certificate. Bound read-only into the
   * root; Node reads it itself, so the package is not given --allow-fs-read for it.
   */
  extraCaCerts?: string;
  /** cgroup.procs files of the sandbox's control groups (isolated mode), joined before anything runs. */
  cgroupProcs?: string[];
  /** Module and arguments Node runs, e.g. [host.ts, packageDir]. */
  script: string[];
};

export type SandboxProcess = { child: ChildProcess; cleanup: () => void };

/** Kills the sandbox: its whole process group where it has one, else the process. */
export function killSandbox(sandbox: SandboxProcess): void {
  const pid = sandbox.child.pid;
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    sandbox.child.kill("SIGKILL");
  }
}

/** Node's flags: the permission model with exactly these reads, the egress preload, a heap cap. */
export function nodeArgs(spec: SandboxSpec): string[] {
  const preload = spec.preload ?? PRELOAD_MODULE;
  const reads = [...spec.readPaths, preload];
  return [
    "--permission",
    ...reads.map((path) => `--allow-fs-read=${path}`),
    `--max-old-space-size=${spec.memoryMb}`,
    "--disable-proto=delete",
    // node:sqlite opens and creates files without asking the permission model: it does not exist here.
    "--no-experimental-sqlite",
    "--disable-warning=ExperimentalWarning",
    "--import",
    preload,
    ...spec.script,
  ];
}

/** The paths without those inside another listed folder (bound already, and read-only there). */
function outermost(paths: string[]): string[] {
  const unique = [...new Set(paths.map((path) => resolve("/", path)))];
  return unique.filter((path) => !unique.some((other) => other !== path && path.startsWith(other.endsWith("/") ? other : `${other}/`)));
}

/** Starts the process; stdio is piped (stdin/stdout carry MCP, stderr is diagnostics). */
export function spawnSandboxed(spec: SandboxSpec): SandboxProcess {
  const env: Record<string, string> = { TZ: "UTC", LANG: "C.UTF-8", NODE_ENV: "production" };
  if (spec.extraCaCerts) env.NODE_EXTRA_CA_CERTS = spec.extraCaCerts;
  if (spec.mode === "weak") {
    if (spec.egressSocket) env.CAPLO_EGRESS_SOCKET = spec.egressSocket;
    // No namespaces here, but never root (as root the permission model would be all that stands between
    // the package and the machine), and no inherited descriptors either.
    const asRoot = process.getuid?.() === 0;
    const drop = asRoot ? [SETPRIV, `--reuid=${SANDBOX_UID}`, `--regid=${SANDBOX_UID}`, "--clear-groups", "--no-new-privs", "--pdeathsig=KILL", "--"] : [];
    if (spec.egressDir) chmodSync(spec.egressDir, 0o711);
    const child = spawn(BASH, [...BASH_FLAGS, "-c", `${CLOSE_INHERITED_FDS}\nexec "$@"`, "sandbox", ...drop, spec.node, ...nodeArgs(spec)], { env, stdio: ["pipe", "pipe", "pipe"], detached: true });
    return { child, cleanup: () => undefined };
  }
  // Inside the root the socket's folder is /egress: the runner's scratch path (and its pid) stay outside.
  if (spec.egressSocket) env.CAPLO_EGRESS_SOCKET = `${SANDBOX_EGRESS_DIR}/${basename(spec.egressSocket)}`;
  const root = mkdtempSync(join(runtimeDir(), "root-"));
  const readOnly = outermost(["/lib", "/lib64", "/usr/lib", SETPRIV, dirname(dirname(spec.node)), ...spec.readPaths, spec.preload ?? PRELOAD_MODULE, ...(spec.extraCaCerts ? [spec.extraCaCerts] : [])]);
  if (spec.egressDir) chmodSync(spec.egressDir, 0o711);
  const { fstab, bound } = sandboxRoot(root, readOnly, spec.egressDir);
  const args = [...UNSHARE_FLAGS, "--", BASH, ...BASH_FLAGS, "-c", ROOT_SCRIPT, "sandbox", root, fstab, spec.cgroupProcs?.length ? spec.cgroupProcs.join(":") : "-", ...bound, "--", spec.node, ...nodeArgs(spec)];
  // A process group of its own, so that stopping the sandbox can signal every process in it.
  // setpriv --pdeathsig: if the runner dies, the launcher dies, and with it the package (see ROOT_SCRIPT).
  const child = spawn(SETPRIV, ["--pdeathsig=KILL", "--", "unshare", ...args], { env, stdio: ["pipe", "pipe", "pipe"], detached: true });
  return { child, cleanup: () => removeRoot(root) };
}
