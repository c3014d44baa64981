// Memory and process caps per sandbox, below Node: each package process goes into a control group of
// its own with a memory limit (all of its memory: V8 heap, Buffers and other off-heap allocations,
// code) and a process/thread limit. cgroup v2 (memory.max, pids.max) where its memory controller is
// usable, else cgroup v1 (memory.limit_in_bytes, pids.max) as on hybrid hosts; otherwise none, and the
// runner says so (only the V8 heap cap, --max-old-space-size, applies then).
//
// Where: cgroup v2, under the runner's own group (delegation: whatever limits the runner has still
// cover its packages): <own group>/caplo-runner-<pid>/sandbox-<n>. cgroup v1 has no delegation, and a
// runner's own group may belong to a service manager that removes it when the runner ends (a leftover
// child group would block that), so there: <controller root>/caplo/caplo-runner-<pid>/sandbox-<n>, with
// the runner's own memory limit copied onto caplo-runner-<pid>. A sandbox's group is removed when its
// process has exited; groups of runners that died (their sandboxes die with them) are removed by the
// next runner's start.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export type CgroupVersion = "v1" | "v2";

/** What caps a package process's memory here. */
export type MemoryLimitKind = { kind: "cgroup"; version: CgroupVersion } | { kind: "heap"; reason: string };

type Hierarchy = { controller: "memory" | "pids"; dir: string };

export type CgroupSupport =
  | { available: true; version: CgroupVersion; memory: string; pids?: string }
  | { available: false; reason: string };

const PREFIX = "caplo-runner-";

/** The cgroup mounts of this machine: v2's path, and v1's per controller. */
function mounts(): { v2?: string; v1: Map<string, string> } {
  const v1 = new Map<string, string>();
  let v2: string | undefined;
  let text = "";
  try {
    text = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return { v1 };
  }
  for (const line of text.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const mountPoint = left.split(" ")[4];
    const [fstype, , superOptions = ""] = right.split(" ");
    if (!mountPoint) continue;
    if (fstype === "cgroup2") v2 = mountPoint;
    if (fstype === "cgroup") for (const option of superOptions.split(",")) if (option === "memory" || option === "pids") v1.set(option, mountPoint);
  }
  return { v2, v1 };
}

/** This process's group per hierarchy, from /proc/self/cgroup ("0::/path" for v2, "N:memory:/path" for v1). */
function ownGroups(): { v2?: string; v1: Map<string, string> } {
  const v1 = new Map<string, string>();
  let v2: string | undefined;
  for (const line of readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    if (match[1] === "0" && match[2] === "") v2 = match[3];
    for (const controller of match[2]!.split(",")) if (controller === "memory" || controller === "pids") v1.set(controller, match[3]!);
  }
  return { v2, v1 };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes a group folder and its child groups (empty ones; a group with live processes stays). */
function removeGroup(dir: string): void {
  let children: string[] = [];
  try {
    children = readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  } catch {
    return;
  }
  for (const child of children) removeGroup(join(dir, child));
  try {
    rmdirSync(dir);
  } catch {
    // busy (processes still in it) or gone
  }
}

/** Removes the groups of runners that no longer run, under a parent group folder. */
function sweep(parent: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(name.startsWith(PREFIX) ? name.slice(PREFIX.length) : NaN);
    if (pid && pid !== process.pid && !alive(pid)) removeGroup(join(parent, name));
  }
}

let support: CgroupSupport | undefined;

/**
 * Whether this runner can cap its sandboxes by cgroup; creates its own group folder(s) on success.
 * Checked once per process. CAPLO_CGROUPS=off is the command's: it tells the runner (RunnerOptions.cgroups)
 * and the build's listing (BuildOptions.cgroups), which then create no group (the heap cap remains).
 */
export function cgroupSupport(): CgroupSupport {
  if (support) return support;
  support = probe();
  if (support.available) {
    const made = support;
    process.once("exit", () => {
      removeGroup(made.memory);
      if (made.pids) removeGroup(made.pids);
    });
  }
  return support;
}

function probe(): CgroupSupport {
  if (process.platform !== "linux") return { available: false, reason: `cgroups need Linux (this is ${process.platform})` };
  const mounted = mounts();
  let own: ReturnType<typeof ownGroups>;
  try {
    own = ownGroups();
  } catch (error) {
    return { available: false, reason: `cannot read /proc/self/cgroup: ${(error as Error).message}` };
  }
  const reasons: string[] = [];
  // cgroup v2, when its memory controller is there.
  if (mounted.v2 && own.v2 !== undefined) {
    const base = join(mounted.v2, own.v2);
    const controllers = existsSync(join(base, "cgroup.controllers")) ? readFileSync(join(base, "cgroup.controllers"), "utf8") : "";
    if (/\bmemory\b/.test(controllers)) {
      try {
        const wanted = /\bpids\b/.test(controllers) ? "+memory +pids" : "+memory";
        // Child groups get the controllers only if this group hands them down (fails if this group is
        // not the root and holds processes itself: "no internal processes").
        writeFileSync(join(base, "cgroup.subtree_control"), wanted);
        sweep(base);
        const mine = join(base, `${PREFIX}${process.pid}`);
        mkdirSync(mine, { recursive: true });
        writeFileSync(join(mine, "cgroup.subtree_control"), wanted);
        return { available: true, version: "v2", memory: mine };
      } catch (error) {
        reasons.push(`cgroup v2 at ${base}: ${(error as Error).message}`);
      }
    } else reasons.push(`cgroup v2 at ${mounted.v2} has no memory controller for this group`);
  }
  // cgroup v1 (hybrid hosts): the memory and pids hierarchies.
  const memoryMount = mounted.v1.get("memory");
  const memoryGroup = own.v1.get("memory");
  if (memoryMount && memoryGroup !== undefined) {
    try {
      const base = join(memoryMount, "caplo");
      mkdirSync(base, { recursive: true });
      sweep(base);
      const mine = join(base, `${PREFIX}${process.pid}`);
      mkdirSync(mine, { recursive: true });
      // Outside its own group, the runner's packages stay within the runner's own memory limit.
      const ownLimit = readFileSync(join(memoryMount, memoryGroup, "memory.limit_in_bytes"), "utf8").trim();
      writeFileSync(join(mine, "memory.limit_in_bytes"), ownLimit);
      let pids: string | undefined;
      const pidsMount = mounted.v1.get("pids");
      if (pidsMount) {
        try {
          const pidsBase = join(pidsMount, "caplo");
          mkdirSync(pidsBase, { recursive: true });
          sweep(pidsBase);
          pids = join(pidsBase, `${PREFIX}${process.pid}`);
          mkdirSync(pids, { recursive: true });
        } catch {
          pids = undefined;
        }
      }
      return { available: true, version: "v1", memory: mine, ...(pids && { pids }) };
    } catch (error) {
      reasons.push(`cgroup v1 memory at ${memoryMount}: ${(error as Error).message}`);
    }
  } else if (!reasons.length) reasons.push("no cgroup memory controller is mounted");
  return { available: false, reason: reasons.join("; ") };
}

export type SandboxGroup = {
  /** The files the sandbox's launcher writes its own pid to ("0": itself) before it runs anything. */
  procsFiles: string[];
  memoryBytes: number;
  pidsMax: number;
  /** Whether the memory limit killed a process in this group. */
  memoryExceeded(): boolean;
  /** Removes the group (after its processes have exited; retried for a while as they go). */
  remove(): Promise<void>;
};

let counter = 0;

/** A group for one sandbox, with its limits written; undefined where cgroups are unavailable. */
export function createSandboxGroup(memoryBytes: number, pidsMax: number): SandboxGroup | undefined {
  const found = cgroupSupport();
  if (!found.available) return undefined;
  counter += 1;
  // The random part keeps names apart when two copies of this module share a process (a benchmark
  // comparing two checkouts), or a folder of a killed sandbox is still being removed.
  const name = `sandbox-${counter}-${randomBytes(4).toString("hex")}`;
  const memoryDir = join(found.memory, name);
  const pidsDir = found.version === "v1" && found.pids ? join(found.pids, name) : undefined;
  mkdirSync(memoryDir);
  if (pidsDir) mkdirSync(pidsDir);
  const write = (file: string, value: string | number) => writeFileSync(file, String(value));
  try {
    if (found.version === "v2") {
      write(join(memoryDir, "memory.max"), memoryBytes);
      if (existsSync(join(memoryDir, "memory.swap.max"))) write(join(memoryDir, "memory.swap.max"), 0);
      if (existsSync(join(memoryDir, "pids.max"))) write(join(memoryDir, "pids.max"), pidsMax);
    } else {
      write(join(memoryDir, "memory.limit_in_bytes"), memoryBytes);
      // No swapping around the limit where swap accounting exists (memsw ≥ limit, so set after it).
      if (existsSync(join(memoryDir, "memory.memsw.limit_in_bytes"))) {
        try {
          write(join(memoryDir, "memory.memsw.limit_in_bytes"), memoryBytes);
        } catch {
          // swap accounting present but not settable: the memory limit still applies
        }
      }
      if (pidsDir) write(join(pidsDir, "pids.max"), pidsMax);
    }
  } catch (error) {
    removeGroup(memoryDir);
    if (pidsDir) removeGroup(pidsDir);
    throw error;
  }
  const oomKills = (): number => {
    try {
      const text = readFileSync(join(memoryDir, found.version === "v2" ? "memory.events" : "memory.oom_control"), "utf8");
      return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
    } catch {
      return 0;
    }
  };
  return {
    procsFiles: [join(memoryDir, "cgroup.procs"), ...(pidsDir ? [join(pidsDir, "cgroup.procs")] : [])],
    memoryBytes,
    pidsMax,
    memoryExceeded: () => oomKills() > 0,
    remove: async () => {
      // A killed sandbox's last process may still be on its way out for a moment after the launcher.
      for (let attempt = 0; attempt < 30; attempt += 1) {
        removeGroup(memoryDir);
        if (pidsDir) removeGroup(pidsDir);
        if (!existsSync(memoryDir) && !(pidsDir && existsSync(pidsDir))) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

/** For the runner's note: which limit applies. */
export function memoryLimitKind(): MemoryLimitKind {
  const found = cgroupSupport();
  return found.available ? { kind: "cgroup", version: found.version } : { kind: "heap", reason: found.reason };
}
