// Builds console/dist with the repository's Vite (`npx vite build -c console/vite.config.ts`) unless the build
// is newer than every source it uses (console/src, the widget's components it reuses, its config). Browser
// test files and the bench share one build; a lock lets one build while the others wait.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { consoleBuildStale } from "../../server/src/demo/demo.ts";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));


export async function buildConsole(): Promise<void> {
  if (!consoleBuildStale()) return;
  const lock = `${ROOT}console/.build-lock`;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (!consoleBuildStale()) return;
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 60_000) rmSync(lock, { recursive: true, force: true });
    }
  }
  try {
    if (consoleBuildStale()) {
      await promisify(execFile)(process.execPath, [`${ROOT}node_modules/vite/bin/vite.js`, "build", "-c", "console/vite.config.ts"], { cwd: ROOT, env: { ...process.env, NODE_ENV: "production" } });
      if (!existsSync(`${ROOT}console/dist/index.html`)) throw new Error("console build produced no index.html");
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
