// The loader fetches the app ahead of the click without costing the host page (issue #21), in real
// Chromium: nothing of the app before the page's load event, the app fetched once the browser is idle
// after it (or at once when the visitor points at the launcher), no socket before the visitor points at
// the launcher and no hello (no conversation) before the visitor presses it; and the gateway's compressed responses decode to the built files' bytes.
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
      expect.arrayContaining(["/widget/app.html", expect.stringMatching(/^\/widget\/assets\/app-.*\.js$/), expect.stringMatching(/^\/widget\/assets\/app-.*\.css$/)]),
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
    expect(await page.locator("[data-caplo] div[role=dialog]").isVisible()).toBe(false);

    const fetched = appRequests.length;
    await launcher.click();
    await app.getByText("Hi! I can look up your orders").waitFor();
    expect(hellos()).toBe(hellosBefore + 1);
    expect(server.connections).toBe(connectionsBefore + 1); // the hello went on the socket the hover opened
    expect(appRequests.length).toBe(fetched); // the click fetched nothing more
    await expect(app.locator("#caplo-input").evaluate((el) => el === document.activeElement)).resolves.toBe(true);
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
    await expect.poll(() => [...responses.keys()].filter((p) => p.startsWith("/widget/assets/")).length).toBe(2);
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
