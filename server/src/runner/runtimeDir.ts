// The runner's scratch folder for sandbox roots and egress sockets: one per runner process
// (caplo-runner-<pid>-*), so that folders left by a runner that died can be found and removed safely.
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PREFIX = "caplo-runner-";
let dir: string | undefined;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes the scratch folders of runner processes that no longer exist (only root removes another user's). */
export function sweepStaleRuntimeDirs(): void {
  const uid = process.getuid?.();
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(/^caplo-runner-([0-9]+)-/.exec(name)?.[1]);
    if (!pid || pid === process.pid || alive(pid)) continue;
    const path = join(tmpdir(), name);
    try {
      if (uid !== undefined && uid !== 0 && lstatSync(path).uid !== uid) continue;
      rmSync(path, { recursive: true, force: true });
    } catch {
      // Gone meanwhile, or not ours to remove: it is not in the way of this runner's own folder.
    }
  }
}

/** This process's scratch folder, created (after a sweep) on first use. */
export function runtimeDir(): string {
  if (!dir) {
    sweepStaleRuntimeDirs();
    dir = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`));
    mkdirSync(dir, { recursive: true });
    const created = dir;
    // Its sandboxes die with this process (parent-death signal); their folders can go too.
    process.once("exit", () => rmSync(created, { recursive: true, force: true }));
  }
  return dir;
}
