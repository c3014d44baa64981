// Page-load cost and time to open, interleaved in one run (issue #21): `npx tsx bench/widget/open.ts [rounds]`.
// The real gateway and engine (tests/gateway/support's stack: compression, caching, the greeting from the
// welcome) serve the widget from http://127.0.0.1:PORT; the owner's blank page is on http://localhost:PORT,
// another site, so the app's frame is cross-site as on a real shop. Each round runs, for each condition
// (no throttling; 4x CPU; slow 4G + 4x CPU), a blank page and the same page with the script tag, each in a
// fresh browser context (no cache):
//   page load   bytes on the wire until the load event, the host page's blocking time (long tasks over
//               50 ms on its main thread until 2 s after the app's prefetch), the load event's time;
//   open        after the load event and the idle prefetch (the visitor reads the page first), the click on
//               the launcher (its click event; Playwright's click moves the mouse onto it, presses and
//               releases at once) → the input usable: the panel shown, the message box focused and painted
//               (two animation frames after); and → ready: the greeting shown and the connection up (Send works).
// Throttling is set through CDP on the page and, once it exists, on the app's own frame (a separate
// renderer: site isolation): Emulation.setCPUThrottlingRate 4, Network.emulateNetworkConditions with
// Lighthouse's slow 4G (150 ms round trip, 1.6 Mbit/s down, 750 kbit/s up).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg } from "node:os";
import type { Browser, BrowserContext, CDPSession, Page } from "playwright-core";
import { releaseFromVersions } from "../../server/src/engine/release.ts";
import { startStack } from "../../tests/gateway/support/stack.ts";
import { buildWidget, launchChromium } from "../../tests/widget/browser.ts";

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
const rounds = Number(process.argv[2] ?? 7);
const GREETING = "Hi! I can look up your orders and answer questions about the shop.";

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
    const loop = () => { check(); if (!window.__readySeen) requestAnimationFrame(loop); };
    document.addEventListener("DOMContentLoaded", () => {
      new MutationObserver(check).observe(document.body, { childList: true, subtree: true, attributes: true });
      for (const e of ["focusin", "resize", "message"]) window.addEventListener(e, () => setTimeout(check));
      loop();
    });
    return;
  }
  window.__long = [];
  new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push(e.duration); }).observe({ type: "longtask", buffered: true });
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
}

/** Sets the condition's throttling on a page's or frame's CDP session. */
async function throttle(session: CDPSession, condition: Condition): Promise<void> {
  await session.send("Emulation.setCPUThrottlingRate", { rate: condition.cpu });
  if (condition.network) {
    await session.send("Network.enable");
    await session.send("Network.emulateNetworkConditions", { offline: false, ...condition.network });
  }
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
  const loadMs = await page.evaluate(() => performance.getEntriesByType("navigation")[0]!.duration);
  if (widget) {
    // The idle prefetch: the app's frame rendered (its message box exists, hidden).
    await page.frameLocator("iframe[title='Chat']").locator("#caplo-input").waitFor({ state: "attached", timeout: 30_000 });
  }
  await page.waitForTimeout(2000); // a quiet window after it, as blocking time counts long tasks until the page is quiet
  const long = await page.evaluate(() => (window as unknown as { __long: number[] }).__long);
  await Promise.all(counted);
  return { page, load: { bytes, blocking: long.reduce((sum, d) => sum + Math.max(0, d - 50), 0), loadMs, after } };
}

async function open(context: BrowserContext, page: Page, condition: Condition): Promise<Open> {
  const frame = page.frames().find((f) => f.url().includes("/widget/app.html"))!;
  await throttle(await context.newCDPSession(frame), condition);
  await page.locator("[data-caplo] button").click();
  await frame.waitForFunction(() => (window as unknown as { __ready?: number }).__ready, undefined, { timeout: 30_000 });
  // From the click event (the button released), as a visitor's click is timed; the press came before it.
  const click = await page.evaluate(() => (window as unknown as { __click: number }).__click);
  const { usable, ready } = await frame.evaluate(() => {
    const w = window as unknown as { __usable: number; __ready: number };
    return { usable: w.__usable, ready: w.__ready };
  });
  return { usable: usable - click, ready: ready - click };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${median(s).toFixed(0)} ms (min ${s[0]!.toFixed(0)}, max ${s.at(-1)!.toFixed(0)}, n=${s.length})`;
};
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

await buildWidget();
const site = createServer((req, res) => {
  const withWidget = req.url === "/widget";
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title></head>` +
      `<body><h1>Shop</h1><p>Boots and tents.</p>${withWidget ? `<script src="${stack.base}/widget.js" data-agent="bench-agent" async></script>` : ""}</body></html>`,
  );
});
await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
const siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
const stack = await startStack({
  releases: (version) => [releaseFromVersions({ agent: "bench-agent", instructions: "x", origins: [siteUrl], versions: [version], greeting: GREETING })],
});
let browser: Browser | undefined;
try {
  browser = await launchChromium();
  const results = CONDITIONS.map(() => ({ blank: [] as Load[], widget: [] as Load[], open: [] as Open[] }));
  for (let round = -1; round < rounds; round++) {
    for (const [i, condition] of CONDITIONS.entries()) {
      for (const withWidget of [false, true]) {
        const context = await browser.newContext({ viewport: { width: 412, height: 823 }, isMobile: false });
        await context.addInitScript(PROBE);
        const { page, load } = await pageLoad(context, withWidget ? `${siteUrl}/widget` : `${siteUrl}/`, condition, withWidget);
        const opened = withWidget ? await open(context, page, condition) : undefined;
        await context.close();
        if (round < 0) continue; // the first round warms up
        results[i]![withWidget ? "widget" : "blank"].push(load);
        if (opened) results[i]!.open.push(opened);
      }
    }
  }
  console.log(`widget page load and open (Chromium headless; real gateway on loopback, page and widget on different sites; ${rounds} interleaved rounds after a warm-up)`);
  for (const [i, condition] of CONDITIONS.entries()) {
    const r = results[i]!;
    const usable = median(r.open.map((o) => o.usable));
    console.log(`  ${condition.name}`);
    console.log(`    page load, blank page:   ${kb(median(r.blank.map((l) => l.bytes)))} before load, blocking ${median(r.blank.map((l) => l.blocking)).toFixed(0)} ms, load event ${median(r.blank.map((l) => l.loadMs)).toFixed(0)} ms`);
    console.log(
      `    page load, with widget:  ${kb(median(r.widget.map((l) => l.bytes)))} before load, blocking ${median(r.widget.map((l) => l.blocking)).toFixed(0)} ms, load event ${median(r.widget.map((l) => l.loadMs)).toFixed(0)} ms; then ${kb(median(r.widget.map((l) => l.after)))} prefetched when idle after load`,
    );
    console.log(`    click → input usable:    ${spread(r.open.map((o) => o.usable))}   aim ≤ ${condition.target} ms  ${usable <= condition.target ? "ok" : "OVER"}`);
    console.log(`    click → greeting, Send works: ${spread(r.open.map((o) => o.ready))}`);
  }
  console.log(`  machine load average: ${loadavg().map((l) => l.toFixed(1)).join(" ")} on ${cpus().length} cores`);
} finally {
  await browser?.close();
  await stack.close();
  await new Promise<void>((resolve) => site.close(() => resolve()));
}
