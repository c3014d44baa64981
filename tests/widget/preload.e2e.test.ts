// The loader fetches the app ahead of the click without costing the host page (issue #21), in real
// Chromium: nothing of the app before the page's load event, the app fetched once the browser is idle
// after it (or at once when the visitor points at the launcher), no socket before the visitor points at
// the launcher and no hello (no conversation) before the visitor presses it; the gateway's compressed
// responses decode to the built files' bytes; and the app's style, inline in its page, is the only style
// its CSP lets it apply.
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { buildWidget, launchChromium } from "./browser.ts";
import { DIST, startWidgetTestServer, type WidgetTestServer } from "./protocolTestServer.ts";

let browser: Browser;
let server: WidgetTestServer;

beforeAll(async () => {
  await buildWidget();
  // The owner's page holds an image whose answer each test holds back or gives at once (page.route).
  [browser, server] = await Promise.all([launchChromium(), startWidgetTestServer({ delayMs: 0, site: { bodyHtml: `<img src="/held.png" alt="">` } })]);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/**
 * The owner's page with its image held back, so the page's load event waits for the test. Returns the
 * page, the app requests seen, and the release.
 */
async function pageWithHeldLoad(context: BrowserContext): Promise<{ page: Page; appRequests: Request[]; release: () => void }> {
  const page = await context.newPage();
  page.setDefaultTimeout(8000);
  const appRequests: Request[] = [];
  page.on("request", (r) => {
    if (r.url().startsWith(`${server.gatewayUrl}/widget/`)) appRequests.push(r);
  });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route(`${server.siteUrl}/held.png`, async (route) => {
    await held;
    await route.fulfill({ status: 204 });
  });
  await page.goto(server.siteUrl, { waitUntil: "commit" });
  return { page, appRequests, release };
}

/** Resolves after the page has had an idle period (a requestIdleCallback ran). */
const idlePassed = (page: Page) => page.evaluate(() => new Promise<void>((resolve) => requestIdleCallback(() => resolve())));

describe("the loader fetches the app ahead of the click", () => {
  let context: BrowserContext;
  beforeAll(async () => {
    context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  });
  afterAll(() => context?.close());

  test("not before the page's load event; after it, when idle: the app renders hidden, opens its socket on hover and says hello on the click", async () => {
    const { page, appRequests, release } = await pageWithHeldLoad(context);
    const launcher = page.getByRole("button", { name: "Open chat" });
    await launcher.waitFor();
    await idlePassed(page);
    expect(await page.evaluate(() => document.readyState)).not.toBe("complete");
    expect(appRequests).toEqual([]);

    const connectionsBefore = server.connections;
    release();
    await page.waitForFunction(() => document.readyState === "complete");
    const app = page.frameLocator("iframe[title='Chat']");
    await app.locator("#caplo-input").waitFor({ state: "attached" });
    expect(await page.locator("iframe[title='Chat']").getAttribute("src")).toContain("preload=1");
    expect(appRequests.map((r) => new URL(r.url()).pathname)).toEqual(
      // The page (with its style inline) and its script: nothing else.
      ["/widget/app.html", expect.stringMatching(/^\/widget\/assets\/app-.*\.js$/)],
    );
    // The rendered app waits with no socket; pointing at the launcher opens one but says no hello (no conversation).
    await idlePassed(page);
    expect(server.connections).toBe(connectionsBefore);
    const hellos = () => server.frames.filter((f) => f.t === "hello").length;
    const hellosBefore = hellos();
    await launcher.hover();
    await expect.poll(() => server.connections).toBe(connectionsBefore + 1);
    await idlePassed(page);
    expect(hellos()).toBe(hellosBefore);
    // Made ahead and painted, but not seen, clicked or reached: opacity 0, no pointer events, inert (the
    // keyboard cannot tab into it and assistive technology does not list it).
    const dialog = page.locator("[data-caplo] div[role=dialog]");
    expect(await dialog.evaluate((el) => [getComputedStyle(el).opacity, getComputedStyle(el).pointerEvents, (el as HTMLElement).inert])).toEqual(["0", "none", true]);
    expect(await page.getByRole("dialog", { name: "Chat" }).count()).toBe(0);
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    expect(await app.locator("#caplo-input").evaluate((el) => document.hasFocus() && el === document.activeElement)).toBe(false);

    const fetched = appRequests.length;
    await launcher.click();
    await app.getByText("Hi! I can look up your orders").waitFor();
    expect(hellos()).toBe(hellosBefore + 1);
    expect(server.connections).toBe(connectionsBefore + 1); // the hello went on the socket the hover opened
    expect(appRequests.length).toBe(fetched); // the click fetched nothing more
    await expect(app.locator("#caplo-input").evaluate((el) => el === document.activeElement)).resolves.toBe(true);
    await page.close();
  });

  test("the launcher is in the browser's top layer from the start, before the page's load and the app's frame, and drawing it throws nothing", async () => {
    // Every showPopover/hidePopover the page makes is recorded with what it threw, if anything.
    const watched = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    await watched.addInitScript(() => {
      const w = window as unknown as { __popoverThrows: string[] };
      w.__popoverThrows = [];
      for (const name of ["showPopover", "hidePopover"] as const) {
        const native = HTMLElement.prototype[name];
        HTMLElement.prototype[name] = function (this: HTMLElement, ...args: []) {
          try {
            return native.apply(this, args);
          } catch (error) {
            w.__popoverThrows.push(`${name}: ${String(error)}`);
            throw error;
          }
        };
      }
    });
    const { page, appRequests, release } = await pageWithHeldLoad(watched);
    const launcher = page.getByRole("button", { name: "Open chat" });
    await launcher.waitFor();
    // The page covers everything with its own highest overlay: the launcher, in the top layer, is still on top.
    await page.evaluate(() => {
      const cover = document.createElement("div");
      cover.id = "cover";
      cover.style.cssText = "position:fixed;inset:0;z-index:2147483647;background:rgba(0,0,0,.1)";
      document.body.appendChild(cover);
    });
    await idlePassed(page);
    expect(await page.evaluate(() => document.readyState)).not.toBe("complete");
    expect(appRequests).toEqual([]);
    expect(await launcher.evaluate((el) => el.matches(":popover-open"))).toBe(true);
    const topmost = () =>
      launcher.evaluate((el) => {
        const box = el.getBoundingClientRect();
        const root = el.getRootNode() as ShadowRoot;
        return root.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2) === el;
      });
    expect(await topmost()).toBe(true);
    await launcher.click();
    await page.frameLocator("iframe[title='Chat']").getByText("Hi! I can look up your orders").waitFor();
    expect(await page.locator("[data-caplo] div[role=dialog]").evaluate((el) => el.matches(":popover-open"))).toBe(true);
    await page.keyboard.press("Escape");
    await expect.poll(() => page.getByRole("button", { name: "Open chat" }).getAttribute("aria-expanded")).toBe("false");
    expect(await topmost()).toBe(true);
    release();
    await page.waitForFunction(() => document.readyState === "complete");
    expect(await page.evaluate(() => (window as unknown as { __popoverThrows: string[] }).__popoverThrows)).toEqual([]);
    await watched.close();
  });

  test("a press on the launcher opens the chat even when the greeting's unread count arrives before the release", async () => {
    const page = await context.newPage();
    page.setDefaultTimeout(8000);
    await page.route(`${server.siteUrl}/held.png`, (route) => route.fulfill({ status: 204 }));
    await page.goto(server.siteUrl);
    const launcher = page.getByRole("button", { name: "Open chat" });
    await page.frameLocator("iframe[title='Chat']").locator("#caplo-input").waitFor({ state: "attached" });
    await launcher.hover();
    // The press says hello; the welcome's greeting counts as unread on the launcher before the release.
    await page.mouse.down();
    await expect.poll(() => launcher.getAttribute("aria-label")).toBe("Open chat, 1 unread");
    await page.mouse.up();
    await expect.poll(() => page.getByRole("button", { name: "Close chat" }).getAttribute("aria-expanded")).toBe("true");
    await expect.poll(() => page.frameLocator("iframe[title='Chat']").locator("#caplo-input").evaluate((el) => el === document.activeElement)).toBe(true);
    await page.close();
  });

  test("at once when the visitor points at the launcher, even before the page has loaded", async () => {
    const { page, appRequests, release } = await pageWithHeldLoad(context);
    const launcher = page.getByRole("button", { name: "Open chat" });
    await launcher.waitFor();
    await idlePassed(page);
    expect(appRequests).toEqual([]);
    const appPage = page.waitForRequest(`${server.gatewayUrl}/widget/app.html?**`);
    await launcher.hover();
    await appPage;
    expect(await page.evaluate(() => document.readyState)).not.toBe("complete");
    release();
    await page.close();
  });

  test("added by the after-load snippet, the loader costs the page's load event nothing, and the chat works", async () => {
    const page = await context.newPage();
    page.setDefaultTimeout(8000);
    await page.route(`${server.siteUrl}/held.png`, (route) => route.fulfill({ status: 204 }));
    await page.goto(`${server.siteUrl}/after-load`, { waitUntil: "load" });
    const launcher = page.getByRole("button", { name: "Open chat" });
    await launcher.waitFor();
    // The loader's file was asked for only once the load event had begun: the event did not wait for it.
    const [loadEventStart, loaderStart] = await page.evaluate(() => [
      (performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming).loadEventStart,
      performance.getEntriesByType("resource").find((e) => e.name.endsWith("/widget.js"))!.startTime,
    ]);
    expect(loaderStart).toBeGreaterThanOrEqual(loadEventStart);
    // The page had already loaded, so the app's frame is made when idle, and the click only shows it.
    const app = page.frameLocator("iframe[title='Chat']");
    await app.locator("#caplo-input").waitFor({ state: "attached" });
    expect(await page.locator("iframe[title='Chat']").getAttribute("src")).toContain("preload=1");
    expect(await launcher.evaluate((el) => el.matches(":popover-open"))).toBe(true);
    await launcher.click();
    await app.getByText("Hi! I can look up your orders").waitFor();
    await expect.poll(() => app.locator("#caplo-input").evaluate((el) => el === document.activeElement)).toBe(true);
    await page.close();
  });
});

describe("compressed widget files", () => {
  test("Chromium gets each file compressed, and it decodes to the built file's bytes", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.route(`${server.siteUrl}/held.png`, (route) => route.fulfill({ status: 204 }));
    const responses = new Map<string, { encoding: string | undefined; vary: string | undefined; body: Buffer; encodedSize: number }>();
    page.on("requestfinished", async (r) => {
      const path = new URL(r.url()).pathname;
      if (!path.startsWith("/widget")) return;
      const response = (await r.response())!;
      const headers = await response.allHeaders();
      responses.set(path, { encoding: headers["content-encoding"], vary: headers.vary, body: await response.body(), encodedSize: (await r.sizes()).responseBodySize });
    });
    await page.goto(server.siteUrl);
    await page.getByRole("button", { name: "Open chat" }).click();
    await page.frameLocator("iframe[title='Chat']").getByText("Hi! I can look up your orders").waitFor();
    // The app's script; its style is inline in app.html.
    await expect.poll(() => [...responses.keys()].filter((p) => p.startsWith("/widget/assets/")).length).toBe(1);
    const files = ["/widget.js", "/widget/app.html", ...[...responses.keys()].filter((p) => p.startsWith("/widget/assets/"))];
    for (const path of files) {
      const file = path === "/widget.js" ? "widget.js" : path.slice("/widget/".length);
      const got = responses.get(path)!;
      // Chromium takes brotli over HTTPS only; on this plain-HTTP loopback it asks for gzip (and deflate).
      expect(got.encoding, path).toMatch(/^(?:br|gzip)$/);
      expect(got.vary, path).toBe("Accept-Encoding");
      expect(got.body.equals(readFileSync(`${DIST}${file}`)), path).toBe(true);
      expect(got.encodedSize, path).toBe(statSync(`${DIST}${file}${got.encoding === "br" ? ".br" : ".gz"}`).size);
    }
    await context.close();
  });
});

describe("the app page's inline style and its CSP", () => {
  test("the app renders with its inline style and no CSP violation; a style it does not hold, inline, in an attribute or from a file, is refused", async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    // Every frame records the CSP violations it sees.
    await context.addInitScript(() => {
      const w = window as unknown as { __violations: string[] };
      w.__violations = [];
      document.addEventListener("securitypolicyviolation", (e) => w.__violations.push(`${e.effectiveDirective} ${e.blockedURI}`));
    });
    const page = await context.newPage();
    await page.route(`${server.siteUrl}/held.png`, (route) => route.fulfill({ status: 204 }));
    const stylesheets: string[] = [];
    page.on("request", (r) => {
      if (r.resourceType() === "stylesheet") stylesheets.push(r.url());
    });
    const appPage = page.waitForResponse((r) => new URL(r.url()).pathname === "/widget/app.html");
    await page.goto(server.siteUrl);
    await page.getByRole("button", { name: "Open chat" }).click();
    await page.frameLocator("iframe[title='Chat']").getByText("Hi! I can look up your orders").waitFor();
    const frame = page.frames().find((f) => f.url().includes("/widget/app.html"))!;

    // The header's policy is the page's meta policy plus frame-ancestors, and allows exactly its one style.
    const header = (await (await appPage).allHeaders())["content-security-policy"]!;
    const meta = await frame.evaluate(() => document.querySelector("meta[http-equiv=Content-Security-Policy]")!.getAttribute("content"));
    expect(header).toBe(`${meta}; frame-ancestors ${server.siteUrl}`);
    const style = await frame.evaluate(() => [...document.querySelectorAll("style")].map((s) => s.textContent!));
    expect(style).toHaveLength(1);
    expect(header).toContain(`style-src 'sha256-${createHash("sha256").update(style[0]!).digest("base64")}';`);
    expect(stylesheets).toEqual([]);
    // The style is applied: its rules are in force (the message box is laid out by them, not by the browser's defaults).
    expect(await frame.evaluate(() => document.styleSheets[0]!.cssRules.length)).toBeGreaterThan(50);
    expect(await frame.evaluate(() => getComputedStyle(document.getElementById("caplo-input")!).resize)).toBe("none");
    expect(await frame.evaluate(() => (window as unknown as { __violations: string[] }).__violations)).toEqual([]);

    // What an injection could add is refused: another inline style, a style attribute, a style file from this host.
    const before = await frame.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const violations = await frame.evaluate(async () => {
      const injected = document.createElement("style");
      injected.textContent = "body{background:rgb(1, 2, 3)!important}";
      document.head.appendChild(injected);
      const div = document.createElement("div");
      div.innerHTML = '<p style="color:rgb(1, 2, 3)">x</p>';
      document.body.appendChild(div);
      const link = document.createElement("link");
      link.rel = "stylesheet";
      link.href = "/widget/app.html";
      document.head.appendChild(link);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const color = getComputedStyle(div.firstElementChild!).color;
      div.remove();
      return { color, list: (window as unknown as { __violations: string[] }).__violations };
    });
    expect(await frame.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe(before);
    expect(violations.color).not.toBe("rgb(1, 2, 3)");
    expect(violations.list).toEqual(expect.arrayContaining([expect.stringMatching(/^style-src-elem inline/), expect.stringMatching(/^style-src-attr inline/), expect.stringMatching(/^style-src-elem http:.*\/widget\/app\.html/)]));
    await context.close();
  });
});
