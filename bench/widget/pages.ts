// The pages the widget benchmarks load (open.ts, lighthouse.ts): the owner's blank shop page on
// http://localhost:PORT and the same page with the script tag, the widget served by the real gateway and
// engine (tests/gateway/support's stack: compression, caching, the greeting from the welcome) on
// http://127.0.0.1:PORT, another site, so the app's frame is cross-site as on a real shop.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser } from "playwright-core";
import { releaseFromVersions } from "../../server/src/engine/release.ts";
import { startStack, type StackOptions } from "../../tests/gateway/support/stack.ts";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../../tests/support/services.ts";
import { buildWidget } from "../../tests/widget/browser.ts";
import { afterLoadSnippet } from "../../tests/widget/protocolTestServer.ts";

export const GREETING = "Hi! I can look up your orders and answer questions about the shop.";

/**
 * How Chromium puts the widget's cross-site frame in a renderer: `isolated` as desktop Chrome does (a
 * process of its own, `--site-per-process`); `shared` as Android Chrome does for most sites, and as the
 * packaged headless Chromium here does by default (the host page's renderer runs the frame too, so the
 * frame's work is on the page's main thread).
 */
export type ProcessModel = "isolated" | "shared";
export const PROCESS_FLAGS: Record<ProcessModel, string[]> = {
  isolated: ["--site-per-process"],
  shared: ["--disable-site-isolation-trials"],
};

export interface BenchPages {
  blankUrl: string;
  widgetUrl: string;
  /** The same page with the widget served from CAPLO_BENCH_BASELINE (another build, e.g. main's before a
   * change) by a gateway of its own, when that is set: before and after measured in one interleaved run. */
  baselineUrl?: string;
  /** The same page adding this build's loader with the after-load snippet (docs/site-owners/embedding.md). */
  afterLoadUrl: string;
  close(): Promise<void>;
}

/** A folder holding another widget build (widget/dist of an earlier commit) to compare against, or undefined. */
export const BASELINE_DIR = process.env.CAPLO_BENCH_BASELINE || undefined;

/** Builds the widget if needed, starts the gateway stack and the owner's site. */
export async function startBenchPages(): Promise<BenchPages> {
  await buildWidget();
  let gatewayBase = "";
  let baselineBase = "";
  const site = createServer((req, res) => {
    const base = req.url === "/widget" ? gatewayBase : req.url === "/baseline" ? baselineBase : "";
    const embed =
      req.url === "/after-load" ? afterLoadSnippet(`${gatewayBase}/widget.js`, "bench-agent") : base ? `<script src="${base}/widget.js" data-agent="bench-agent" async></script>` : "";
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title></head>` +
        `<body><h1>Shop</h1><p>Boots and tents.</p>${embed}</body></html>`,
    );
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  const siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
  const releases: StackOptions["releases"] = (version) => [
    releaseFromVersions({ agent: "bench-agent", instructions: "x", origins: [siteUrl], versions: [version], greeting: GREETING }),
  ];
  const stack = await startStack({ releases });
  gatewayBase = stack.base;
  const baseline = BASELINE_DIR ? await startStack({ releases, gateway: { widgetDir: BASELINE_DIR } }) : undefined;
  baselineBase = baseline?.base ?? "";
  return {
    blankUrl: `${siteUrl}/`,
    widgetUrl: `${siteUrl}/widget`,
    afterLoadUrl: `${siteUrl}/after-load`,
    ...(baseline && { baselineUrl: `${siteUrl}/baseline` }),
    async close() {
      await stack.close();
      await baseline?.close();
      await new Promise<void>((resolve) => site.close(() => resolve()));
    },
  };
}

/** The machine's Chromium with the test flags and the given process model. */
export function launchBenchChromium(model: ProcessModel): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS, ...PROCESS_FLAGS[model]] });
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
