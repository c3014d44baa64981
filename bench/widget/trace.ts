// Where the widget's page-load and open time goes, from a Chromium trace (issue #21):
// `npx tsx bench/widget/trace.ts [isolated|shared] [cpu rate, default 4] [runs, default 1] [--open]`.
// Loads the owner's page with the widget (pages.ts: real gateway, page and widget on different sites) at
// the given CPU throttling, from navigation until 2 s after the app's frame has loaded (the idle prefetch);
// with CAPLO_BENCH_BASELINE=DIR (another widget build), that build's page is traced before this one's in each run;
// with --open, then clicks the launcher and traces until the message box is focused. Prints, for every
// renderer main thread, each task by its CPU (thread) time, which the machine's other load inflates far less
// than its wall time: over 3 ms unthrottled (12 ms at 4x; Lighthouse's simulation multiplies by 4, so a task
// over 12.5 ms unthrottled is a long task for it), with what ran in it (script
// by URL, style, layout, paint, idle callbacks, timers, parsing), by start time from the navigation.
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { launchBenchChromium, median, startBenchPages, type ProcessModel } from "./pages.ts";

const model = (process.argv[2] ?? "isolated") as ProcessModel;
const rate = Number(process.argv[3] ?? 4);
const runs = Number(process.argv[4] ?? 1);
const withOpen = process.argv.includes("--open");
/** --summary: only the medians per page at the end (blocking estimated from CPU time, the longest task). */
const summaryOnly = process.argv.includes("--summary");
const log = (line: string) => {
  if (!summaryOnly) console.log(line);
};
const dump = process.env.CAPLO_TRACE_OUT;
/** Tasks listed: over 3 ms of CPU unthrottled (12 ms at 4x), over 12 ms throttled. */
const MIN_CPU_US = rate === 1 ? 3_000 : 12_000;

interface TraceEvent {
  name: string;
  cat: string;
  ph: string;
  ts: number;
  dur?: number;
  /** Thread (CPU) time, µs: what the machine's other load does not inflate. */
  tdur?: number;
  pid: number;
  tid: number;
  args?: { name?: string; data?: Record<string, unknown>; beginData?: Record<string, unknown> };
}

const CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "toplevel", "blink.user_timing", "loading"].join(",");

/** The work a task did, by kind: `EvaluateScript widget.js`, `UpdateLayoutTree`, `Layout`, ... (ms, own time not split). */
function summarise(task: TraceEvent, inside: TraceEvent[], depth = 0): string {
  const parts = new Map<string, number>();
  const end = task.ts + task.dur!;
  // Only the outermost timeline events inside the task: nested ones are part of them.
  const top: TraceEvent[] = [];
  for (const e of inside) {
    if (e.ts < task.ts || e.ts + (e.dur ?? 0) > end || e === task) continue;
    if (top.some((t) => e.ts >= t.ts && e.ts + (e.dur ?? 0) <= t.ts + t.dur! && t !== e)) continue;
    top.push(e);
  }
  for (const e of top) {
    const d = e.args?.data ?? e.args?.beginData ?? {};
    const url = typeof d.url === "string" ? d.url.replace(/^https?:\/\/[^/]+/, "").replace(/\?.*$/, "") : "";
    const fn = typeof d.functionName === "string" && d.functionName ? ` ${d.functionName}` : "";
    const key = `${e.name}${url ? ` ${url}` : ""}${e.name === "FunctionCall" ? fn : ""}${e.name === "EventDispatch" ? ` ${String(d.type)}` : ""}`;
    parts.set(key, (parts.get(key) ?? 0) + (e.tdur ?? e.dur!) / 1000);
    // What a script or idle callback did in turn (a forced style or layout, a compile), when it is long.
    if ((e.tdur ?? e.dur!) > 2_000 && depth < 1) {
      const nested = summarise(e, inside, depth + 1);
      if (nested) parts.set(`${key} [${nested}]`, parts.get(key)!), parts.delete(key);
    }
  }
  return [...parts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([k, v]) => `${k} ${v.toFixed(0)}`)
    .join("; ");
}

const pages = await startBenchPages();
const browser = await launchBenchChromium(model);
try {
  const targets = [
    { name: "blank page", url: pages.blankUrl },
    ...(pages.baselineUrl ? [{ name: "baseline build", url: pages.baselineUrl }] : []),
    { name: "this build", url: pages.widgetUrl },
  ];
  /** Per page: each run's blocking estimate and longest task on the page's main thread, and the app renderer's (isolated). */
  const summary = new Map(targets.map((t) => [t.name, { page: [] as number[], pageLongest: [] as number[], app: [] as number[], appLongest: [] as number[] }]));
  for (let run = 0; run < runs; run++) for (const target of targets) {
    const context = await browser.newContext({ viewport: { width: 412, height: 823 } });
    const page = await context.newPage();
    const session = await context.newCDPSession(page);
    await session.send("Emulation.setCPUThrottlingRate", { rate });
    await browser.startTracing(page, { categories: CATEGORIES.split(",") });
    await page.goto(target.url, { waitUntil: "load" });
    const frame = target.url === pages.blankUrl ? undefined : await (async () => {
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; await page.waitForTimeout(100)) {
        const f = page.frames().find((x) => x.url().includes("/widget/app.html"));
        if (f) return f;
      }
      throw new Error("no app frame within 30 s");
    })();
    await frame?.waitForLoadState("load");
    if (frame && model === "isolated") await (await context.newCDPSession(frame)).send("Emulation.setCPUThrottlingRate", { rate });
    await page.waitForTimeout(2000);
    if (withOpen && frame) {
      const box = (await page.locator("[data-caplo] button").boundingBox())!;
      const at = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
      await session.send("Input.dispatchMouseEvent", { type: "mouseMoved", ...at });
      await session.send("Input.dispatchMouseEvent", { type: "mousePressed", ...at, button: "left", clickCount: 1 });
      await session.send("Input.dispatchMouseEvent", { type: "mouseReleased", ...at, button: "left", clickCount: 1 });
      await frame.waitForFunction(() => document.activeElement?.id === "caplo-input", undefined, { timeout: 30_000, polling: 100 });
      await page.waitForTimeout(1000);
    }
    const buffer = await browser.stopTracing();
    if (dump) writeFileSync(`${dump}-${model}-${run}-${target.name.replace(/ /g, "-")}.json`, buffer);
    const events = (JSON.parse(buffer.toString()) as { traceEvents: TraceEvent[] }).traceEvents;
    const mains = events.filter((e) => e.name === "thread_name" && e.args?.name === "CrRendererMain").map((e) => `${e.pid}:${e.tid}`);
    const nav = events.find((e) => e.name === "navigationStart" || e.name === "TracingStartedInBrowser")?.ts ?? events[0]!.ts;
    log(`run ${run + 1}, ${target.name}, ${model}, ${rate}x CPU${withOpen ? ", with an open" : ""}: tasks over 20 ms on each renderer main thread (ms from the trace start)`);
    for (const main of mains) {
      const own = events.filter((e) => `${e.pid}:${e.tid}` === main && e.ph === "X" && e.dur !== undefined);
      const all = own.filter((e) => (e.name === "RunTask" || e.name === "ThreadControllerImpl::RunTask") && (e.tdur ?? 0) > MIN_CPU_US);
      // The outermost task only (a RunTask inside a ThreadControllerImpl::RunTask is the same task).
      const tasks = all.filter((t) => !all.some((o) => o !== t && o.ts <= t.ts && o.ts + o.dur! >= t.ts + t.dur! && (o.dur! > t.dur! || o.ts < t.ts || o.name === "ThreadControllerImpl::RunTask")));
      const inside = own.filter((e) => e.name !== "RunTask" && e.name !== "ThreadControllerImpl::RunTask" && e.cat.includes("devtools.timeline"));
      const urls = new Set(inside.map((e) => e.args?.data?.url ?? e.args?.data?.frame).filter((u) => typeof u === "string" && u.startsWith("http")) as string[]);
      const isPage = [...urls].some((u) => new URL(u).hostname === "localhost");
      if (!isPage && ![...urls].some((u) => u.includes("/widget/app.html"))) continue; // a spare renderer
      log(`  renderer ${main} (${[...urls].slice(0, 2).map((u) => u.replace(/\?.*$/, "")).join(", ")})`);
      let total = 0;
      let longest = 0;
      for (const task of tasks) {
        const cpu = (task.tdur ?? task.dur!) / 1000;
        total += Math.max(0, cpu * (rate === 1 ? 4 : 1) - 50);
        longest = Math.max(longest, cpu);
        log(`    at ${((task.ts - nav) / 1000).toFixed(0).padStart(6)}  wall ${(task.dur! / 1000).toFixed(0).padStart(4)} ms, cpu ${cpu.toFixed(1).padStart(5)} ms  ${summarise(task, inside)}`);
      }
      const s = summary.get(target.name)!;
      (isPage ? s.page : s.app).push(total);
      (isPage ? s.pageLongest : s.appLongest).push(longest);
      log(`    blocking from cpu time (sum over 50 ms${rate === 1 ? " of 4 x cpu, as Lighthouse's simulation counts it" : ""}): ${total.toFixed(0)} ms`);
    }
    await context.close();
  }
  const med = (xs: number[]) => (xs.length ? median(xs).toFixed(0) : "-");
  console.log(`${model}, ${rate}x CPU, ${runs} runs${withOpen ? " with an open" : ""}; medians; blocking = sum over tasks of (${rate === 1 ? "4 x " : ""}CPU time − 50 ms), longest = the longest task's CPU time`);
  for (const [name, s] of summary) {
    console.log(
      `  ${name.padEnd(15)} page's main thread: blocking ${med(s.page)} ms (${s.page.map((x) => x.toFixed(0)).join(", ")}), longest task ${med(s.pageLongest)} ms` +
        (model === "isolated" && s.app.length ? `; app's renderer: blocking ${med(s.app)} ms, longest task ${med(s.appLongest)} ms` : ""),
    );
  }
  console.log(`  machine load average: ${loadavg().map((l) => l.toFixed(1)).join(" ")} on ${cpus().length} cores`);
} finally {
  await browser.close();
  await pages.close();
}
