// Lighthouse on the owner's blank page and the same page with the widget, interleaved (issue #21):
// `npx tsx bench/widget/lighthouse.ts [rounds] [isolated|shared|both] [--after-load]`
// (--after-load: this build embedded with the after-load snippet too); with CAPLO_BENCH_BASELINE=DIR (another
// widget build) that build's page is audited in the same rounds too, for before and after from one run. The real `lighthouse` package (12.2.3,
// the last that installs and runs on Node 20 with this lock) drives the machine's Chromium (CAPLO_TEST_CHROMIUM,
// else /usr/bin/chromium; the packaged @sparticuz one here) through chrome-launcher's debugging port, offline
// (every page is on loopback): the performance category with Lighthouse's defaults (mobile form factor,
// simulated slow 4G and 4x CPU). Printed per page: the performance score, Total Blocking Time, First and
// Largest Contentful Paint, Speed Index, and the bytes transferred, as medians over the rounds. The process
// model (pages.ts) says whether the widget's cross-site frame gets a renderer of its own (desktop Chrome) or
// shares the page's (Android Chrome for most sites), where its work would count in the page's blocking time.
import { cpus, loadavg } from "node:os";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../../tests/support/services.ts";
import { median, PROCESS_FLAGS, startBenchPages, type ProcessModel } from "./pages.ts";

/** What is used of lighthouse's and chrome-launcher's APIs: both are imported at run time, so type-checking the
 * repository does not need the devDependency installed. */
interface Lhr {
  runtimeError?: { code: string; message: string };
  categories: Record<string, { score: number | null } | undefined>;
  audits: Record<string, { numericValue?: number } | undefined>;
}
type Lighthouse = (url: string, flags: Record<string, unknown>) => Promise<{ lhr: Lhr } | undefined>;
type ChromeLauncher = { launch(options: { chromePath: string; chromeFlags: string[] }): Promise<{ port: number; kill(): void }> };
const lighthouse = ((await import("lighthouse" as string)) as { default: Lighthouse }).default;
const chromeLauncher = (await import("chrome-launcher" as string)) as ChromeLauncher;
const { version } = ((await import("lighthouse/package.json" as string, { with: { type: "json" } })) as { default: { version: string } }).default;

const args = process.argv.slice(2).filter((a) => a !== "--after-load");
/** --after-load: this build embedded with the after-load snippet is audited in the same rounds too. */
const AFTER_LOAD = process.argv.includes("--after-load");
const rounds = Number(args[0] ?? 3);
const modelArg = args[1] ?? "both";
const MODELS: ProcessModel[] = modelArg === "both" ? ["isolated", "shared"] : [modelArg as ProcessModel];
if (!MODELS.every((m) => m === "isolated" || m === "shared")) throw new Error(`process model: isolated, shared or both, not ${modelArg}`);

interface Run {
  score: number;
  tbt: number;
  fcp: number;
  lcp: number;
  si: number;
  bytes: number;
}

async function audit(port: number, url: string): Promise<Run> {
  const result = await lighthouse(url, { port, output: "json", logLevel: "error", onlyCategories: ["performance"] });
  const lhr = result?.lhr;
  if (!lhr) throw new Error(`lighthouse gave no result for ${url}`);
  if (lhr.runtimeError) throw new Error(`lighthouse could not audit ${url}: ${lhr.runtimeError.code} ${lhr.runtimeError.message}`);
  const value = (id: string) => lhr.audits[id]?.numericValue ?? NaN;
  return {
    score: Math.round((lhr.categories.performance?.score ?? NaN) * 100),
    tbt: value("total-blocking-time"),
    fcp: value("first-contentful-paint"),
    lcp: value("largest-contentful-paint"),
    si: value("speed-index"),
    bytes: value("total-byte-weight"),
  };
}

const pages = await startBenchPages();
/** The pages of one round, interleaved: blank, the baseline build's (CAPLO_BENCH_BASELINE) when set, this build's. */
const VARIANTS = [
  { name: "blank page ", url: pages.blankUrl },
  ...(pages.baselineUrl ? [{ name: "baseline   ", url: pages.baselineUrl }] : []),
  { name: pages.baselineUrl ? "this widget" : "with widget", url: pages.widgetUrl },
  ...(AFTER_LOAD ? [{ name: "after-load ", url: pages.afterLoadUrl }] : []),
];
const results = new Map<ProcessModel, Run[][]>(MODELS.map((m) => [m, VARIANTS.map(() => [])]));
try {
  for (const model of MODELS) {
    // One Chromium per process model; Lighthouse opens a fresh tab and clears the cache for each audit.
    const chrome = await chromeLauncher.launch({ chromePath: CHROMIUM_PATH, chromeFlags: [...CHROMIUM_ARGS, ...PROCESS_FLAGS[model]] });
    try {
      for (let round = -1; round < rounds; round++) {
        for (const [v, variant] of VARIANTS.entries()) {
          const run = await audit(chrome.port, variant.url);
          if (round >= 0) results.get(model)![v]!.push(run); // the first round warms up
        }
      }
    } finally {
      chrome.kill();
    }
  }
  console.log(`Lighthouse ${version} performance, mobile defaults (simulated slow 4G, 4x CPU), ${rounds} interleaved rounds after a warm-up; medians`);
  for (const model of MODELS) {
    console.log(model === "isolated" ? "frame in a renderer of its own (site isolation, as desktop Chrome)" : "frame in the page's renderer (no site isolation, as Android Chrome for most sites)");
    for (const [v, variant] of VARIANTS.entries()) {
      const runs = results.get(model)![v]!;
      const m = (pick: (r: Run) => number) => median(runs.map(pick));
      console.log(
        `  ${variant.name}  score ${m((r) => r.score)} (${runs.map((r) => r.score).join(", ")}), TBT ${m((r) => r.tbt).toFixed(0)} ms (${runs.map((r) => r.tbt.toFixed(0)).join(", ")}), FCP ${m((r) => r.fcp).toFixed(0)} ms, LCP ${m((r) => r.lcp).toFixed(0)} ms, Speed Index ${m((r) => r.si).toFixed(0)} ms, ${(m((r) => r.bytes) / 1024).toFixed(1)} KB`,
      );
    }
  }
  console.log(`  machine load average: ${loadavg().map((l) => l.toFixed(1)).join(" ")} on ${cpus().length} cores`);
} finally {
  await pages.close();
}
