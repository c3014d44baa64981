/** Helpers the runner benchmarks share: percentiles of samples and CPU time of a process group from /proc. */
import { readdirSync, readFileSync } from "node:fs";

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const TICK_MS = 1000 / 100; // USER_HZ

/** CPU time (user + system, ms) of the processes in a process group, and of their reaped children, from /proc. */
export function groupCpuMs(pgid: number): number {
  // utime, stime, and the same of reaped children (the mount helpers of the sandbox script).
  return procCpuMs((fields) => Number(fields[2]) === pgid, true);
}

/** CPU time (user + system, ms) of every process whose command name is `comm` (PostgreSQL's backends, redis-server). */
export function commandCpuMs(comm: string): number {
  return procCpuMs((_fields, name) => name === comm, false);
}

/** CPU time (ms) of the processes `pick` chooses by their /proc stat fields (after the name) and name. */
function procCpuMs(pick: (fields: string[], name: string) => boolean, withChildren: boolean): number {
  let ticks = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (!pick(fields, stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")))) continue;
      ticks += Number(fields[11]) + Number(fields[12]) + (withChildren ? Number(fields[13]) + Number(fields[14]) : 0);
    } catch {
      // gone meanwhile
    }
  }
  return ticks * TICK_MS;
}

/**
 * CPU time (user + system, ms) of every process on the machine, summed by the kind `kindOf` gives its
 * command name and command line (processes it gives no kind are summed as "other").
 */
export function cpuByKind(kindOf: (name: string, commandLine: string, pid: number) => string | undefined): Map<string, number> {
  const totals = new Map<string, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      const kind = kindOf(stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), commandLine, Number(entry)) ?? "other";
      totals.set(kind, (totals.get(kind) ?? 0) + (Number(fields[11]) + Number(fields[12])) * TICK_MS);
    } catch {
      // gone meanwhile
    }
  }
  return totals;
}
