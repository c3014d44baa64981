// Shared by the browser tests and the widget benchmark: build the widget once, and connect to the run's
// Chromium (or launch the machine's headless with the flags this environment needs).
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { chromium, type Browser, type Download } from "playwright-core";
import { CHROMIUM_ARGS, CHROMIUM_PATH, CHROMIUM_WS } from "../support/services.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The newest modification time of the widget's sources and build config. */
function newestSource(dir = `${ROOT}widget/src`): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name);
    return Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }, statSync(`${ROOT}widget/vite.config.ts`).mtimeMs);
}

/**
 * Builds widget/dist with the repository's Vite (the same command as `npx vite build -c widget/vite.config.ts`),
 * unless the build is newer than every source file (browser test files share one build).
 */
export async function buildWidget(): Promise<void> {
  const built = `${ROOT}widget/dist/widget.js`;
  const fresh = () => existsSync(built) && existsSync(`${ROOT}widget/dist/app.html`) && statSync(built).mtimeMs > newestSource();
  if (fresh()) return;
  // Browser test files run in parallel: one builds (mkdir is atomic), the others wait for it.
  const lock = `${ROOT}widget/.build-lock`;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (fresh()) return;
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 60_000) rmSync(lock, { recursive: true, force: true });
    }
  }
  try {
    if (!fresh()) await build();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

async function build(): Promise<void> {
  await promisify(execFile)(process.execPath, [`${ROOT}node_modules/vite/bin/vite.js`, "build", "-c", "widget/vite.config.ts"], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: "production" },
  });
  if (!existsSync(`${ROOT}widget/dist/widget.js`) || !existsSync(`${ROOT}widget/dist/app.html`)) throw new Error("widget build produced no files");
}

/**
 * A browser for a test file: a connection to the run's shared Chromium when the global setup started one
 * (closing it closes this connection's contexts and pages, not the browser), else a Chromium of its own
 * (a test file run without the global setup, the widget benchmark).
 */
export function launchChromium(): Promise<Browser> {
  if (CHROMIUM_WS) return chromium.connect(CHROMIUM_WS);
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

/** A download's bytes (download.path() exists only for a browser this process launched, not a connected one). */
export async function downloadedBytes(download: Download): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await download.createReadStream()) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export const ARTIFACTS = fileURLToPath(new URL("../artifacts/widget/", import.meta.url));
