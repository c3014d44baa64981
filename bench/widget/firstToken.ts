// First token to paint: the time from the model yielding its first text delta to that text painted in the
// widget (Chromium headless, the real gateway and engine on loopback: tests/gateway/support's stack), each
// run interleaved with a minimal reference doing the irreducible work: a bare `ws` server sending the same
// text in one frame to a bare page that puts it in the DOM and paints. Clocks: both sides read
// performance.timeOrigin + performance.now() (wall-clock milliseconds on this one machine).
//
// The reference page has a browser context (a window) of its own. It used to be a second tab of the
// widget's context: the widget's tab was then in the background, where Chromium runs no animation frames
// until it throttles a timer through (about 1.9 s), and that throttling was the 1962 ms once printed here;
// the text was in the DOM within a few milliseconds of the token all along.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { WebSocketServer } from "ws";
import { releaseFromVersions } from "../../server/src/engine/release.ts";
import type { Model, ModelRequest, ModelStreamPart } from "../../server/src/model/model.ts";
import { startStack } from "../../tests/gateway/support/stack.ts";

const now = () => performance.timeOrigin + performance.now();

/** Answers every message with a few words; records when the first one is handed to the engine. */
class TimedModel implements Model {
  readonly id = "bench:timed";
  firstToken = 0;
  turn = 0;
  async *stream(_request: ModelRequest): AsyncIterable<ModelStreamPart> {
    await new Promise((resolve) => setTimeout(resolve, 20));
    this.firstToken = now();
    yield { type: "text-delta", text: `Firsttoken${++this.turn} ` };
    for (const word of ["and", "a", "few", "more", "words."]) yield { type: "text-delta", text: `${word} ` };
    yield { type: "finish", reason: "stop" };
  }
}

/**
 * In a frame: when text containing `text` is first in the DOM under `selector`, and when the browser first
 * painted it. The paint time is the Element Timing API's renderTime: each element holding that text is
 * marked with `elementtiming` as it is inserted, before a frame has drawn it, and Chromium reports when the
 * frame showing it was painted. (An animation frame plus a posted message would also count the work
 * queued behind the paint, such as the reply's later deltas.)
 */
const PAINT_WAIT = `(selector, text) => new Promise((resolve) => {
  let dom = 0;
  const mark = "caplo-bench-" + Math.random().toString(36).slice(2);
  const observer = new MutationObserver(() => check());
  const timing = new PerformanceObserver((list) => {
    const entry = list.getEntries().find((e) => e.identifier === mark);
    if (!entry) return;
    timing.disconnect();
    observer.disconnect();
    resolve({ dom, painted: performance.timeOrigin + entry.renderTime });
  });
  timing.observe({ type: "element" });
  // Every element holding the text node itself (Element Timing reports an element's own text): a streamed
  // reply's markup is replaced as parts arrive, so the element first painted may be a later one.
  const check = () => {
    for (const root of document.querySelectorAll(selector)) {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!node.data.includes(text) || node.parentElement.getAttribute("elementtiming") === mark) continue;
        if (!dom) dom = performance.timeOrigin + performance.now();
        node.parentElement.setAttribute("elementtiming", mark);
      }
    }
  };
  check();
  observer.observe(document.body, { childList: true, subtree: true, characterData: true });
})`;

interface Painted {
  dom: number;
  painted: number;
}

export interface FirstTokenFigures {
  /** The model's first token → the text in the widget's DOM. */
  dom: number[];
  /** The model's first token → that DOM painted. */
  widget: number[];
  /** The bare reference: the text sent → painted. */
  reference: number[];
}

export async function firstTokenToPaint(browser: Browser, runs: number): Promise<FirstTokenFigures> {
  const model = new TimedModel();
  const site = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>Shop</title><script src="${stack.base}/widget.js" data-agent="bench-agent" async></script>`);
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  const siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
  const origins = [siteUrl];
  const stack = await startStack({ model, releases: (version) => [releaseFromVersions({ agent: "bench-agent", instructions: "x", origins, versions: [version] })] });
  origins.push(stack.base);
  // The reference: a bare page and a bare WebSocket server sending the text when asked.
  const refHttp = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>ref</title><div id="out"></div><script>const ws = new WebSocket("ws://" + location.host); ws.onmessage = (e) => { const p = document.createElement("p"); p.className = "bubble"; p.textContent = e.data; document.getElementById("out").append(p); };</script>`);
  });
  const refWs = new WebSocketServer({ server: refHttp });
  await new Promise<void>((resolve) => refHttp.listen(0, "127.0.0.1", resolve));
  const refUrl = `http://127.0.0.1:${(refHttp.address() as AddressInfo).port}`;
  const dom: number[] = [];
  const widget: number[] = [];
  const reference: number[] = [];
  const contexts: import("playwright-core").BrowserContext[] = [];
  try {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(siteUrl);
    await page.getByRole("button", { name: "Open chat" }).click();
    const app = page.frameLocator("iframe[title='Chat']");
    await app.locator("#caplo-input").waitFor();
    const frame = page.frames().find((f) => f.url().includes("/widget/app.html"))!;
    // A window of its own, so that neither page is a background tab of the other.
    const refContext = await browser.newContext();
    contexts.push(refContext);
    const refPage = await refContext.newPage();
    await refPage.goto(refUrl);
    await refPage.waitForFunction(() => document.getElementById("out"));
    const socket = await new Promise<import("ws").WebSocket>((resolve) => (refWs.clients.size > 0 ? resolve([...refWs.clients][0]!) : refWs.once("connection", resolve)));
    for (let i = 0; i < runs + 2; i++) {
      const marker = `Firsttoken${model.turn + 1}`;
      const painted = frame.evaluate(`(${PAINT_WAIT})(".bubble.from-agent", ${JSON.stringify(marker)})`) as Promise<Painted>;
      await app.locator("#caplo-input").fill(`hello ${i}`);
      await app.locator("#caplo-input").press("Enter");
      const at = await painted;
      if (i >= 2) {
        // The first two warm up.
        dom.push(at.dom - model.firstToken);
        widget.push(at.painted - model.firstToken);
      }
      // Wait for the turn to end (the stored reply replaced the streamed one) before the next.
      await app.locator(".streaming").waitFor({ state: "detached" });

      const refText = `ref ${i}`;
      const refPainted = refPage.evaluate(`(${PAINT_WAIT})(".bubble", ${JSON.stringify(refText)})`) as Promise<Painted>;
      await new Promise((resolve) => setTimeout(resolve, 20));
      const sent = now();
      socket.send(refText);
      const refAt = await refPainted;
      if (i >= 2) reference.push(refAt.painted - sent);
    }
  } finally {
    for (const context of contexts) await context.close();
    refWs.close();
    await new Promise<void>((resolve) => refHttp.close(() => resolve()));
    await stack.close();
    await new Promise<void>((resolve) => site.close(() => resolve()));
  }
  return { dom, widget, reference };
}
