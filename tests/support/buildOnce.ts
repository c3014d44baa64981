// Browser test files run in parallel and share one build of the widget or the console: the first to find it
// stale builds it (mkdir of a lock folder is atomic) while the others wait for it, then find it fresh.
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import type { DemoError } from "../../server/src/demo/demoOptions.ts";

/** Runs `build` unless `stale()` says the build is current; one test process at a time per `lock` folder. */
export async function buildOnce(lock: string, stale: () => boolean, build: () => Promise<DemoError | undefined>): Promise<void> {
  if (!stale()) return;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (!stale()) return;
      // A lock left by a test process that died mid-build.
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 60_000) rmSync(lock, { recursive: true, force: true });
    }
  }
  try {
    const problem = stale() ? await build() : undefined;
    if (problem) throw new Error(`${problem.code}: ${problem.message}`);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
