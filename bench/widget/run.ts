// Widget benchmark: `npx tsx bench/widget/run.ts [runs]`. Builds the widget, prints the gzip sizes of
// the loader and the app (budget: loader < 5 KB, app < 40 KB with every layout) and checks that no zod
// code reached the bundle; then, in Chromium, times opening the launcher to the first painted message
// (cold: a fresh browser profile each run; warm: the same profile after a reload, assets cached).
// The server is tests/widget/protocolTestServer.ts on loopback, answering at once.
import { readdirSync, readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import type { Browser, Page } from "playwright-core";
import { buildWidget, launchChromium } from "../../tests/widget/browser.ts";
import { DIST, startWidgetTestServer } from "../../tests/widget/protocolTestServer.ts";

const LOADER_BUDGET = 5 * 1024;
const APP_BUDGET = 40 * 1024;
const runs = Number(process.argv[2] ?? 10);

const gz = (file: string) => gzipSync(readFileSync(file), { level: 9 }).length;
const kb = (n: number) => `${(n / 1024).toFixed(2)} KB`;

await buildWidget();
const assets = readdirSync(`${DIST}assets`);
const appFiles = [`${DIST}app.html`, ...assets.map((a) => `${DIST}assets/${a}`)];
const loader = gz(`${DIST}widget.js`);
const app = appFiles.reduce((sum, f) => sum + gz(f), 0);
console.log("widget bundle (gzip -9)");
console.log(`  loader  widget.js                 ${kb(loader).padStart(10)}   budget ${kb(LOADER_BUDGET)}  ${loader < LOADER_BUDGET ? "ok" : "OVER"}`);
for (const f of appFiles) console.log(`  app     ${f.slice(DIST.length).padEnd(26)}${kb(gz(f)).padStart(10)}`);
console.log(`  app     total                     ${kb(app).padStart(10)}   budget ${kb(APP_BUDGET)}  ${app < APP_BUDGET ? "ok" : "OVER"}`);
const js = assets.filter((a) => a.endsWith(".js")).map((a) => readFileSync(`${DIST}assets/${a}`, "utf8")).join("\n") + readFileSync(`${DIST}widget.js`, "utf8");
const zodMarks = ["ZodError", "$ZodType", "zod", "safeParse"].filter((m) => js.includes(m));
console.log(`  zod in the bundle: ${zodMarks.length === 0 ? "none" : `FOUND (${zodMarks.join(", ")})`}`);

/** Marks, inside the app frame, when the first message is in the DOM and two frames later (painted). */
const PAINT_PROBE = `(() => {
  if (!location.pathname.endsWith("/widget/app.html")) return;
  const now = () => performance.timeOrigin + performance.now();
  const mark = () => requestAnimationFrame(() => requestAnimationFrame(() => { window.__firstPaint = now(); }));
  const observer = new MutationObserver(() => {
    if (document.querySelector(".bubble")) { observer.disconnect(); mark(); }
  });
  document.addEventListener("DOMContentLoaded", () => observer.observe(document.body, { childList: true, subtree: true }));
})();`;

async function openToFirstPaint(page: Page): Promise<number> {
  const t0 = await page.evaluate(() => {
    const t = performance.timeOrigin + performance.now();
    (document.querySelector("[data-caplo]")!.shadowRoot!.querySelector("button") as HTMLButtonElement).click();
    return t;
  });
  const frame = await (await page.waitForSelector("[data-caplo] iframe")).contentFrame();
  const handle = await frame!.waitForFunction(() => (window as unknown as { __firstPaint?: number }).__firstPaint, undefined, { timeout: 15_000 });
  return Number(await handle.jsonValue()) - t0;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return `median ${at(0.5).toFixed(0)} ms, p90 ${at(0.9).toFixed(0)} ms, min ${s[0]!.toFixed(0)} ms, max ${s.at(-1)!.toFixed(0)} ms (n=${s.length})`;
};

const server = await startWidgetTestServer({ delayMs: 0 });
let browser: Browser | undefined;
try {
  browser = await launchChromium();
  const cold: number[] = [];
  const warm: number[] = [];
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    await context.addInitScript(PAINT_PROBE);
    const page = await context.newPage();
    await page.goto(server.siteUrl);
    await page.waitForFunction(() => document.querySelector("[data-caplo]"));
    cold.push(await openToFirstPaint(page));
    await page.reload();
    await page.waitForFunction(() => document.querySelector("[data-caplo]"));
    warm.push(await openToFirstPaint(page));
    await context.close();
  }
  console.log("launcher click → first painted message (Chromium headless, loopback)");
  console.log(`  cold (no cache, new conversation): ${stats(cold)}`);
  console.log(`  warm (cached assets, resumed):     ${stats(warm)}`);
} finally {
  await browser?.close();
  await server.close();
}
