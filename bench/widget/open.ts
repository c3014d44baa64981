// Page-load cost and time to open, interleaved in one run (issue #21): `npx tsx bench/widget/open.ts [rounds] [isolated|shared|both] [--after-load]`;
// --after-load also measures this build embedded with the after-load snippet (docs/site-owners/embedding.md);
// with CAPLO_BENCH_BASELINE=DIR (another widget build, e.g. a copy of widget/dist before a change) that build's
// page is measured in the same rounds too, served by a gateway of its own: before and after from one run.
// The real gateway and engine serve the widget from http://127.0.0.1:PORT; the owner's blank page is on
// http://localhost:PORT, another site, so the app's frame is cross-site as on a real shop (pages.ts). Each
// round runs, for each process model (isolated: the frame in a renderer of its own, as desktop Chrome does;
// shared: in the page's renderer, as Android Chrome does for most sites) and each condition (no throttling;
// 4x CPU; slow 4G + 4x CPU), a blank page and the same page with the script tag, each in a fresh browser
// context (no cache):
//   page load   bytes on the wire until the load event, the host page's blocking time (long tasks over
//               50 ms on its main thread until 2 s after the app's prefetch; in the shared model the app's
//               frame runs on that thread too), the load event's time;
//   open        after the load event and the idle prefetch (the visitor reads the page first), the click on
//               the launcher (the mouse moved onto it, pressed and released at once, sent as raw input so no
//               test-tool script runs in the page meanwhile; timed from its click event) → the input usable:
//               the panel shown, the message box focused and painted (two animation frames after); and →
//               ready: the greeting shown and the connection up (Send works). Unthrottled, also the
//               main-thread CPU time each renderer spent from the click to ready (CDP Performance ThreadTime),
//               which the machine's other load inflates far less than the wall-clock figures.
// Throttling is set through CDP on the page and, in the isolated model, on the app's own frame:
// Emulation.setCPUThrottlingRate 4, Network.emulateNetworkConditions with Lighthouse's slow 4G (150 ms round
// trip, 1.6 Mbit/s down, 750 kbit/s up).
import { cpus, loadavg } from "node:os";
import type { Browser, BrowserContext, CDPSession, Page } from "playwright-core";
import { GREETING, launchBenchChromium, median, startBenchPages, type ProcessModel } from "./pages.ts";

interface Condition {
  name: string;
  cpu: number;
  network?: { latency: number; downloadThroughput: number; uploadThroughput: number };
  /** The issue's aim for time to open (the fastest peer's figure), ms. */
  target: number;
}
const SLOW_4G = { latency: 150, downloadThroughput: (1.6 * 1024 * 1024) / 8, uploadThroughput: (750 * 1024) / 8 };
const CONDITIONS: Condition[] = [
  { name: "no throttling", cpu: 1, target: 60 },
  { name: "4x CPU", cpu: 4, target: 260 },
  { name: "slow 4G + 4x CPU", cpu: 4, network: SLOW_4G, target: 350 },
];
const args = process.argv.slice(2).filter((a) => a !== "--after-load");
/** --after-load: this build embedded with the after-load snippet is measured in the same rounds too. */
const AFTER_LOAD = process.argv.includes("--after-load");
const rounds = Number(args[0] ?? 7);
const modelArg = args[1] ?? "both";
const MODELS: ProcessModel[] = modelArg === "both" ? ["isolated", "shared"] : [modelArg as ProcessModel];
if (!MODELS.every((m) => m === "isolated" || m === "shared")) throw new Error(`process model: isolated, shared or both, not ${modelArg}`);

/** In every frame: long tasks and the load event in the host page; in the app, when the input is usable and when it is ready. */
const PROBE = `(() => {
  const now = () => performance.timeOrigin + performance.now();
  if (location.pathname.endsWith("/widget/app.html")) {
    const painted = (key) => requestAnimationFrame(() => requestAnimationFrame(() => { window[key] = now(); }));
    const check = () => {
      const input = document.getElementById("caplo-input");
      const shown = input && input.getBoundingClientRect().height > 0;
      if (!window.__usableSeen && shown && document.hasFocus() && document.activeElement === input) { window.__usableSeen = 1; painted("__usable"); }
      const greeted = [...document.querySelectorAll(".bubble")].some((b) => b.textContent.includes(${JSON.stringify(GREETING.slice(0, 20))}));
      if (!window.__readySeen && shown && greeted && !document.querySelector(".conn")) { window.__readySeen = 1; painted("__ready"); }
    };
    // Checked on every change of the page, focus, size or message; no polling loop (it would force a layout
    // in the app every frame and slow what it measures).
    document.addEventListener("DOMContentLoaded", () => {
      new MutationObserver(check).observe(document.body, { childList: true, subtree: true, attributes: true, characterData: true });
      for (const e of ["focus", "focusin", "resize", "message"]) window.addEventListener(e, () => setTimeout(check), true);
      check();
    });
    return;
  }
  window.__long = [];
  new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push(e.duration); }).observe({ type: "longtask", buffered: true });
  // The app's frame has loaded (its script ran and rendered the app): its navigation's entry reaches this page at its load event.
  new PerformanceObserver((list) => { if (list.getEntries().some((e) => e.initiatorType === "iframe" && e.name.includes("/widget/app.html"))) window.__appLoaded = now(); }).observe({ type: "resource", buffered: true });
  document.addEventListener("click", (e) => { window.__click = performance.timeOrigin + e.timeStamp; }, true);
})();`;

interface Load {
  bytes: number;
  blocking: number;
  loadMs: number;
  /** Bytes after the load event (the widget's idle prefetch). */
  after: number;
}
interface Open {
  usable: number;
  ready: number;
  /** Main-thread CPU time from the click to ready: the host page's renderer, the app's (0 when shared). */
  hostCpu: number;
  appCpu: number;
}

/** Sets the condition's throttling on a page's or frame's CDP session. */
async function throttle(session: CDPSession, condition: Condition): Promise<void> {
  await session.send("Emulation.setCPUThrottlingRate", { rate: condition.cpu });
  if (condition.network) {
    await session.send("Network.enable");
    await session.send("Network.emulateNetworkConditions", { offline: false, ...condition.network });
  }
}

/** A value of the page's main world read over CDP: no test-tool script is put in the page, so the page's
 * main thread (the frame's too, when shared) does only what a visitor's browser does. */
async function read<T>(session: CDPSession, expression: string): Promise<T> {
  const { result } = (await session.send("Runtime.evaluate", { expression, returnByValue: true })) as { result: { value: T } };
  return result.value;
}

async function pageLoad(context: BrowserContext, url: string, condition: Condition, widget: boolean): Promise<{ page: Page; load: Load }> {
  const page = await context.newPage();
  const session = await context.newCDPSession(page);
  let loaded = false;
  let bytes = 0;
  let after = 0;
  // Every frame's requests (the app's frame is a renderer of its own): headers and body as on the wire.
  const counted: Promise<void>[] = [];
  page.on("requestfinished", (request) => {
    const before = !loaded;
    counted.push(
      request.sizes().then((sizes) => {
        const wire = sizes.responseHeadersSize + sizes.responseBodySize + sizes.requestHeadersSize;
        if (before) bytes += wire;
        else after += wire;
      }),
    );
  });
  await throttle(session, condition);
  await page.goto(url, { waitUntil: "load" });
  loaded = true;
  const loadMs = await read<number>(session, `performance.getEntriesByType("navigation")[0].duration`);
  if (widget) {
    // The idle prefetch: the app's frame loaded and rendered (hidden).
    const deadline = Date.now() + 30_000;
    while (!(await read<number | undefined>(session, "window.__appLoaded"))) {
      if (Date.now() > deadline) throw new Error("the app's frame did not load within 30 s of the load event");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  await page.waitForTimeout(2000); // a quiet window after it, as blocking time counts long tasks until the page is quiet
  const long = await read<number[]>(session, "window.__long");
  await Promise.all(counted);
  return { page, load: { bytes, blocking: long.reduce((sum, d) => sum + Math.max(0, d - 50), 0), loadMs, after } };
}

/** The renderer main thread's CPU time so far, ms (CDP Performance ThreadTime). */
async function threadTime(session: CDPSession): Promise<number> {
  const { metrics } = (await session.send("Performance.getMetrics")) as { metrics: { name: string; value: number }[] };
  return metrics.find((m) => m.name === "ThreadTime")!.value * 1000;
}

async function open(context: BrowserContext, page: Page, condition: Condition, model: ProcessModel): Promise<Open> {
  const frame = page.frames().find((f) => f.url().includes("/widget/app.html"))!;
  const pageSession = await context.newCDPSession(page);
  const appSession = model === "isolated" ? await context.newCDPSession(frame) : undefined;
  if (appSession) await throttle(appSession, condition);
  // The test tool's own scripts are put in both frames now, not while the open is timed.
  await frame.waitForFunction(() => true);
  const box = (await page.locator("[data-caplo] button").boundingBox())!;
  const at = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  for (const s of [pageSession, appSession]) await s?.send("Performance.enable");
  const hostBefore = await threadTime(pageSession);
  const appBefore = appSession ? await threadTime(appSession) : 0;
  await pageSession.send("Input.dispatchMouseEvent", { type: "mouseMoved", ...at });
  await pageSession.send("Input.dispatchMouseEvent", { type: "mousePressed", ...at, button: "left", clickCount: 1 });
  await pageSession.send("Input.dispatchMouseEvent", { type: "mouseReleased", ...at, button: "left", clickCount: 1 });
  await frame.waitForFunction(() => (window as unknown as { __ready?: number }).__ready, undefined, { timeout: 30_000, polling: 100 });
  // Usable comes before ready, unless the message box never got the keyboard focus: counted as a miss, not a time.
  await frame.waitForFunction(() => (window as unknown as { __usable?: number }).__usable, undefined, { timeout: 5_000, polling: 100 }).catch(() => undefined);
  const hostCpu = (await threadTime(pageSession)) - hostBefore;
  const appCpu = appSession ? (await threadTime(appSession)) - appBefore : 0;
  // From the click event (the button released), as a visitor's click is timed; the press came before it.
  const click = await page.evaluate(() => (window as unknown as { __click: number }).__click);
  const { usable, ready } = await frame.evaluate(() => {
    const w = window as unknown as { __usable: number; __ready: number };
    return { usable: w.__usable, ready: w.__ready };
  });
  // The greeting can be in the app before the click event (the press said hello), but the visitor sees it
  // only once the panel is shown: ready is never before usable.
  return { usable: usable === undefined ? NaN : usable - click, ready: Math.max(ready, usable ?? ready) - click, hostCpu, appCpu };
}

const spread = (all: number[]) => {
  const s = all.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return `no figure (n=0 of ${all.length})`;
  return `median ${median(s).toFixed(0)} ms (min ${s[0]!.toFixed(0)}, max ${s.at(-1)!.toFixed(0)}, n=${s.length})`;
};
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

const pages = await startBenchPages();
/** The pages of one round, interleaved: blank, the baseline build's (CAPLO_BENCH_BASELINE) when set, this build's. */
const VARIANTS = [
  { name: "blank page", url: pages.blankUrl, widget: false },
  ...(pages.baselineUrl ? [{ name: "baseline widget", url: pages.baselineUrl, widget: true }] : []),
  { name: pages.baselineUrl ? "this widget" : "with widget", url: pages.widgetUrl, widget: true },
  ...(AFTER_LOAD ? [{ name: "after-load snippet", url: pages.afterLoadUrl, widget: true }] : []),
];
const browsers = new Map<ProcessModel, Browser>();
try {
  for (const model of MODELS) browsers.set(model, await launchBenchChromium(model));
  const results = MODELS.map(() => CONDITIONS.map(() => VARIANTS.map(() => ({ load: [] as Load[], open: [] as Open[] }))));
  for (let round = -1; round < rounds; round++) {
    for (const [m, model] of MODELS.entries()) {
      for (const [i, condition] of CONDITIONS.entries()) {
        for (const [v, variant] of VARIANTS.entries()) {
          const context = await browsers.get(model)!.newContext({ viewport: { width: 412, height: 823 }, isMobile: false });
          await context.addInitScript(PROBE);
          const { page, load } = await pageLoad(context, variant.url, condition, variant.widget);
          // An open that fails (the frame said it was unavailable, the browser lost the target) is counted and
          // printed, not fatal to the run.
          const opened = variant.widget
            ? await open(context, page, condition, model).catch((error: unknown) => {
                console.error(`round ${round}, ${model}, ${condition.name}, ${variant.name}: the open failed: ${String(error).split("\n")[0]}`);
                return undefined;
              })
            : undefined;
          await context.close();
          if (round < 0) continue; // the first round warms up
          results[m]![i]![v]!.load.push(load);
          if (opened) results[m]![i]![v]!.open.push(opened);
        }
      }
    }
  }
  console.log(`widget page load and open (Chromium headless; real gateway on loopback, page and widget on different sites; ${rounds} interleaved rounds after a warm-up${pages.baselineUrl ? `; baseline build from ${process.env.CAPLO_BENCH_BASELINE}` : ""})`);
  for (const [m, model] of MODELS.entries()) {
    console.log(`${model === "isolated" ? "frame in a renderer of its own (site isolation, as desktop Chrome)" : "frame in the page's renderer (no site isolation, as Android Chrome for most sites)"}`);
    for (const [i, condition] of CONDITIONS.entries()) {
      console.log(`  ${condition.name}`);
      for (const [v, variant] of VARIANTS.entries()) {
        const r = results[m]![i]![v]!;
        const label = `${variant.name}:`.padEnd(17);
        console.log(
          `    page load, ${label} ${kb(median(r.load.map((l) => l.bytes)))} before load, blocking ${median(r.load.map((l) => l.blocking)).toFixed(0)} ms (${r.load.map((l) => l.blocking.toFixed(0)).join(", ")}), load event ${median(r.load.map((l) => l.loadMs)).toFixed(0)} ms` +
            (variant.widget ? `; then ${kb(median(r.load.map((l) => l.after)))} prefetched when idle after load` : ""),
        );
      }
      for (const [v, variant] of VARIANTS.entries()) {
        if (!variant.widget) continue;
        const r = results[m]![i]![v]!;
        const usable = median(r.open.map((o) => o.usable).filter(Number.isFinite));
        const missed = r.open.filter((o) => !Number.isFinite(o.usable)).length;
        const label = pages.baselineUrl ? ` (${variant.name})` : "";
        console.log(`    click → input usable${label}:    ${spread(r.open.map((o) => o.usable))}   aim ≤ ${condition.target} ms  ${usable <= condition.target ? "ok" : "OVER"}${missed ? `; in ${missed} open(s) the message box never got the focus` : ""}`);
        console.log(`    click → greeting, Send works${label}: ${spread(r.open.map((o) => o.ready))}`);
        // Under CPU throttling Chromium's ThreadTime grows with the throttling rate too: printed unthrottled only.
        if (condition.cpu === 1) console.log(`    main-thread CPU click → ready${label}: page's renderer ${median(r.open.map((o) => o.hostCpu)).toFixed(0)} ms${model === "isolated" ? `, app's renderer ${median(r.open.map((o) => o.appCpu)).toFixed(0)} ms` : " (the app's frame included)"}`);
      }
    }
  }
  console.log(`  machine load average: ${loadavg().map((l) => l.toFixed(1)).join(" ")} on ${cpus().length} cores`);
} finally {
  for (const browser of browsers.values()) await browser.close();
  await pages.close();
}
