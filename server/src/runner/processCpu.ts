// The CPU time a package process has used, read from /proc: the sandbox launcher's process and every
// process under it (the package's Node), all of their threads. For the runner's watch on what a package
// does between calls (packageProcess.ts).
import { readFileSync, readdirSync } from "node:fs";

/** Linux's USER_HZ, the unit of /proc/PID/stat's times (100 on every architecture Node runs on). */
const TICK_MS = 10;

function ownTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  // After the command name (in parentheses, which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

function children(pid: number): number[] {
  const found: number[] = [];
  for (const task of readdirSafe(`/proc/${pid}/task`)) {
    const text = readSafe(`/proc/${pid}/task/${task}/children`);
    for (const child of text.split(" ")) if (/^[0-9]+$/.test(child)) found.push(Number(child));
  }
  return found;
}

function readSafe(path: string): string {
  try {
    return readFileSync(path, "latin1");
  } catch {
    return "";
  }
}

function readdirSafe(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

/** Milliseconds of CPU used by `pid` and its descendants, or undefined where /proc cannot tell (not Linux, gone). */
export function processTreeCpuMs(pid: number): number | undefined {
  try {
    let ticks = 0;
    const pending = [pid];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      ticks += ownTicks(next);
      pending.push(...children(next));
    }
    return ticks * TICK_MS;
  } catch {
    return undefined;
  }
}
