// Shared by the widget's browser test and benchmark: build the widget once, and launch the machine's
// Chromium headless with the flags this environment needs.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { chromium, type Browser } from "playwright-core";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Builds widget/dist with the repository's Vite (the same command as `npx vite build -c widget/vite.config.ts`). */
export async function buildWidget(): Promise<void> {
  await promisify(execFile)(process.execPath, [`${ROOT}node_modules/vite/bin/vite.js`, "build", "-c", "widget/vite.config.ts"], { cwd: ROOT });
  if (!existsSync(`${ROOT}widget/dist/widget.js`) || !existsSync(`${ROOT}widget/dist/app.html`)) throw new Error("widget build produced no files");
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
}

export const ARTIFACTS = fileURLToPath(new URL("../artifacts/widget/", import.meta.url));
