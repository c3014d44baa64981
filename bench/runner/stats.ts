/** Helpers the runner benchmarks share: percentiles of samples and CPU time of a process group from /proc. */
import { readdirSync, readFileSync } from "node:fs";

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const TICK_MS = 1000 / 100; // USER_HZ

/** CPU time (user + system, ms) of the processes in a process group, and of their reaped children, from /proc. */
export function groupCpuMs(pgid: number): number {
  let ticks = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // utime, stime, and the same of reaped children (the mount helpers of the sandbox script).
      if (Number(fields[2]) === pgid) ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks * TICK_MS;
}
