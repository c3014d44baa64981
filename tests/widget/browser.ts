// Shared by the browser tests and the widget benchmark: build the widget once, and connect to the run's
// Chromium (or launch the machine's headless with the flags this environment needs).
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Download } from "playwright-core";
import { buildWidget as buildWithVite, widgetBuildStale } from "../../server/src/demo/viteBuilds.ts";
import { buildOnce } from "../support/buildOnce.ts";
import { CHROMIUM_ARGS, CHROMIUM_PATH, CHROMIUM_WS } from "../support/services.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Builds widget/dist with the repository's Vite (the demo's build: `npx vite build -c widget/vite.config.ts`),
 * unless the build is newer than every source file (browser test files share one build).
 */
export const buildWidget = (): Promise<void> => buildOnce(`${ROOT}widget/.build-lock`, () => widgetBuildStale(), () => buildWithVite(() => undefined));

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
