// The widget end to end in real Chromium: the owner's page with the script tag, the loader's launcher,
// the app in its iframe from another origin, and a WebSocket server speaking the shared protocol
// (tests/widget/protocolTestServer.ts — a protocol test server, not the product gateway). Look up an
// order, cancel it through the review card with an edited field, see the receipt, decline another,
// reload and see the history. Screenshots go to tests/artifacts/widget/.
import { mkdirSync } from "node:fs";
import type { Browser, BrowserContext, FrameLocator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ARTIFACTS, buildWidget, launchChromium } from "./browser.ts";
import { startWidgetTestServer, type WidgetTestServer } from "./protocolTestServer.ts";

let browser: Browser;
let server: WidgetTestServer;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await buildWidget();
  [browser, server] = await Promise.all([launchChromium(), startWidgetTestServer({ delayMs: 400 })]);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const shot = (page: Page, name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png` });

async function openWidget(page: Page, label = "Open chat"): Promise<FrameLocator> {
  await page.goto(server.siteUrl);
  await page.getByRole("button", { name: label }).click();
  const app = page.frameLocator("iframe").first();
  await app.getByText("Hi! I can look up your orders").waitFor();
  return app;
}

async function say(app: FrameLocator, text: string) {
  const box = app.locator("#caplo-input");
  await box.fill(text);
  await box.press("Enter");
}

describe("website widget in Chromium", () => {
  let context: BrowserContext;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    context = await browser.newContext({ viewport: { width: 1100, height: 800 }, locale: "en-US" });
    page = await context.newPage();
    page.setDefaultTimeout(8000);
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  });
  afterAll(() => context?.close());

  test("the script tag adds a launcher, and the first open shows the app from the widget host", async () => {
    await page.goto(server.siteUrl);
    const launcher = page.getByRole("button", { name: "Open chat" });
    await expect(launcher.getAttribute("aria-expanded")).resolves.toBe("false");
    // The app may be fetched ahead (tests/widget/preload.e2e.test.ts); nothing connects before the visitor asks.
    expect(server.frames.some((f) => f.t === "hello")).toBe(false);
    await shot(page, "01-launcher");
    await launcher.click();
    const frame = page.locator("iframe[title='Chat']");
    expect(await frame.getAttribute("src")).toMatch(new RegExp(`^${server.gatewayUrl}/widget/app.html\\?agent=shop&`));
    const app = page.frameLocator("iframe[title='Chat']");
    await app.getByText("Hi! I can look up your orders").waitFor();
    expect(await page.getByRole("button", { name: "Close chat" }).getAttribute("aria-expanded")).toBe("true");
    const hello = server.frames.find((f) => f.t === "hello");
    expect(hello).toMatchObject({ agent: "shop", capabilities: { forms: true, files: true, pages: true, questions: true } });
  });

  test("looking up an order shows the tool's progress label, then the result layout", async () => {
    const app = page.frameLocator("iframe[title='Chat']");
    // The lookup "runs" long enough that a loaded machine cannot miss the label between start and end.
    server.delayMs = 2500;
    await say(app, "Where is my order SO-1002?");
    await app.getByRole("status").getByText("Looking up your order").waitFor();
    server.delayMs = 400;
    await shot(page, "02a-progress-label");
    const card = app.getByRole("region", { name: "Order SO-1002", exact: true });
    await card.waitFor();
    expect(await card.getByRole("heading", { name: "Trail boots Alpina 42" }).count()).toBe(1);
    expect(await card.getByText("€49.90").count()).toBe(1);
    expect(await card.getByText("Shipped").count()).toBe(1);
    await app.getByText("should arrive tomorrow").waitFor();
    expect(await app.locator(".bubble.from-agent strong", { hasText: "SO-1002" }).count()).toBe(1);
    await shot(page, "02-order-result");
  });

  test("cancelling shows a review card that takes the focus; an edited field and a double click send one confirm; the receipt follows", async () => {
    const app = page.frameLocator("iframe[title='Chat']");
    await say(app, "Please cancel SO-1002");
    const card = app.getByRole("region", { name: "Cancel order SO-1002" });
    await card.waitFor();
    await expect
      .poll(() => app.locator(":focus").textContent(), { timeout: 5000 })
      .toBe("Cancel order SO-1002");
    expect(await card.getByText("ending in 4242", { exact: true }).count()).toBe(1);
    await card.getByLabel("Reason").selectOption("ordered_twice");
    await card.getByLabel("Note for the shop").fill("Bought the same pair twice");
    await shot(page, "03-review-card");
    const before = server.frames.length;
    await card.getByRole("button", { name: "Confirm" }).dblclick();
    await card.getByText("Done", { exact: true }).waitFor();
    // One success line: the state and the receipt (the server's own "is cancelled" sentence is not repeated).
    expect(await card.getByText("Order SO-1002 is cancelled.").count()).toBe(0);
    // The focus moved to the outcome, not to the page's body.
    await expect.poll(() => app.locator(":focus").textContent(), { timeout: 5000 }).toContain("Done");
    const confirms = server.frames.slice(before).filter((f) => f.t === "in" && f.event.type === "confirm");
    expect(confirms).toHaveLength(1);
    expect(confirms[0]).toMatchObject({ event: { edits: { "/reason": "ordered_twice", "/note": "Bought the same pair twice" } } });
    const receipt = card.getByLabel("Receipt");
    expect(await receipt.textContent()).toContain("Ordered twice");
    expect(await receipt.textContent()).toContain("Bought the same pair twice");
    expect(await card.getByRole("button", { name: "Confirm" }).count()).toBe(0);
    await app.getByText("refund is on its way").waitFor();
    await shot(page, "04-receipt");
  });

  test("declining another proposal runs nothing and says so", async () => {
    const app = page.frameLocator("iframe[title='Chat']");
    await say(app, "Cancel SO-1003 too");
    const card = app.getByRole("region", { name: "Cancel order SO-1003" });
    await card.getByRole("button", { name: "Don't do it" }).click();
    await card.getByText("Not done", { exact: true }).waitFor();
    await card.getByText("You chose not to go ahead. Nothing was changed.").waitFor();
    expect(await card.textContent()).not.toMatch(/Cancelled by you|declined it/);
    await app.getByText("I left SO-1003 as it is").waitFor();
    await shot(page, "05-declined");
  });

  test("after a reload the whole history is back, once", async () => {
    await page.reload();
    await page.getByRole("button", { name: "Open chat" }).click();
    const app = page.frameLocator("iframe[title='Chat']");
    await app.getByText("I left SO-1003 as it is").waitFor();
    expect(await app.getByRole("region", { name: "Order SO-1002", exact: true }).count()).toBe(1);
    expect(await app.getByRole("region", { name: "Cancel order SO-1002" }).getByText("Done", { exact: true }).count()).toBe(1);
    expect(await app.getByRole("region", { name: "Cancel order SO-1003" }).getByText("Not done", { exact: true }).count()).toBe(1);
    expect(await app.getByText("Hi! I can look up your orders").count()).toBe(1);
    // A decided card stays decided after the reload.
    expect(await app.getByRole("button", { name: "Confirm" }).count()).toBe(0);
    const resumed = server.frames.filter((f) => f.t === "hello").at(-1);
    expect(resumed).toMatchObject({ resume: { after: expect.any(Number) } });
    await shot(page, "06-after-reload");
  });

  test("Escape closes the widget and gives the focus back to the launcher", async () => {
    const app = page.frameLocator("iframe[title='Chat']");
    await app.getByLabel("Your message").focus();
    await app.getByLabel("Your message").press("Escape");
    const launcher = page.getByRole("button", { name: "Open chat" });
    await launcher.waitFor();
    expect(await launcher.evaluate((el) => (el.getRootNode() as ShadowRoot).activeElement === el)).toBe(true);
  });

  test("Caplo.identify hands the token to the app, which sends it to the server once; other frames cannot", async () => {
    await page.evaluate(() => {
      // A frame that is not the host page tries to identify through the app's iframe.
      const evil = document.createElement("iframe");
      evil.srcdoc = "<script>setTimeout(() => parent.frames[0].postMessage({ caplo: 1, type: 'identify', token: 'forged' }, '*'), 50)</script>";
      document.body.appendChild(evil);
    });
    await page.evaluate(() => (window as unknown as { Caplo: { identify(t: string): void; open(): void } }).Caplo.identify("signed.jwt.token"));
    await page.evaluate(() => (window as unknown as { Caplo: { open(): void } }).Caplo.open());
    await expect.poll(() => server.frames.filter((f) => f.t === "identify").map((f) => (f as { token: string }).token), { timeout: 5000 }).toEqual([
      "signed.jwt.token",
    ]);
    await page.waitForTimeout(300);
    expect(server.frames.some((f) => f.t === "identify" && f.token === "forged")).toBe(false);
    await page.frameLocator("iframe[title='Chat']").getByText("Verified").waitFor();
  });

  test("nothing in the run logged an error, and the server refused no frame", () => {
    expect(errors).toEqual([]);
    expect(server.refused).toEqual([]);
  });
});

describe("more layouts and a phone", () => {
  test("map, choices, timeline, comparison, form, file and a page panel render on a phone screen", async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 760 }, locale: "sl-SI", isMobile: true, hasTouch: true });
    const page = await context.newPage();
    page.setDefaultTimeout(8000);
    try {
      // The visitor's browser speaks Slovenian, so the launcher and the app do too.
      const app = await openWidget(page, "Odpri klepet");
      await say(app, "Which stores are near?");
      // No tile source in this agent: no map box, each of the 4 places has a directions link.
      const directions = app.getByRole("link", { name: /^Pot do: / });
      await directions.first().waitFor();
      expect(await directions.count()).toBe(4);
      expect(await directions.first().getAttribute("href")).toMatch(/^https:\/\/www\.google\.com\/maps\/dir\/\?api=1&destination=-?\d+\.\d{6},-?\d+\.\d{6}$/);
      expect(await app.getByRole("img", { name: /Zemljevid/ }).count()).toBe(0);
      await shot(page, "07-phone-map");
      await say(app, "Book a fitting");
      await app.getByRole("group", { name: "Free fitting times" }).waitFor();
      await app.getByRole("button", { name: /Tue 09:00/ }).tap();
      await app.getByText("Noted: a fitting on Tue 09:00 at BTC City").waitFor();
      await say(app, "Track SO-1002");
      await app.getByRole("region", { name: "Delivery of SO-1002" }).waitFor();
      await shot(page, "08-phone-choices-timeline");
      await say(app, "Compare plans");
      await app.getByRole("region", { name: "Care plans" }).waitFor();
      await say(app, "Invoice for SO-1002");
      await app.getByText("invoice-SO-1002.pdf").waitFor();
      await shot(page, "09-phone-comparison-file");
      // Screen-reader-only text deep in the conversation stays inside the log's scrolling: the app's page
      // never scrolls, so bringing an early result into view (as focus does) keeps the header in place.
      const layout = await app.locator("body").evaluate(() => {
        document.querySelector(".layout-map")!.scrollIntoView({ block: "start" });
        return { overflow: document.scrollingElement!.scrollHeight - document.scrollingElement!.clientHeight, barTop: document.querySelector("header.bar")!.getBoundingClientRect().top };
      });
      expect(layout).toEqual({ overflow: 0, barTop: 0 });
      await say(app, "My size details");
      const form = app.locator("form.question");
      await form.getByRole("button", { name: "Pošlji" }).click();
      await form.getByText("Obvezno").first().waitFor();
      await shot(page, "10-phone-form-errors");
      await form.getByLabel(/EU size/).fill("43");
      await form.getByLabel(/Email/).fill("ana@example.com");
      await form.getByRole("button", { name: "Pošlji" }).click();
      await app.getByText("Thanks, I have what I need.").waitFor();
      await say(app, "I want to pay");
      await app.getByRole("button", { name: /Pay now/ }).click();
      const panel = app.getByRole("dialog");
      await panel.waitFor();
      await app.frameLocator("iframe[title='Pay for your order']").getByText("Payment").waitFor();
      await shot(page, "11-phone-page-panel");
      await app.frameLocator("iframe[title='Pay for your order']").getByRole("button", { name: "Finish" }).click();
      await app.getByText("Na strani sem končal.").waitFor();
      expect(await panel.count()).toBe(0);
    } finally {
      await context.close();
    }
  });
});

describe("loader options from data attributes", () => {
  test("data-position, data-color, data-locale and data-open shape the launcher and the app", async () => {
    const custom = await startWidgetTestServer({ site: { position: "left", color: "#c2410c", locale: "de", open: true } });
    const context = await browser.newContext({ viewport: { width: 1000, height: 760 }, locale: "en-US" });
    const page = await context.newPage();
    page.setDefaultTimeout(8000);
    try {
      await page.goto(custom.siteUrl);
      // Open on load: the app is there without a click, in German, and the page keeps its focus.
      const app = page.frameLocator("iframe");
      await app.getByPlaceholder("Nachricht schreiben…").waitFor();
      expect(await page.evaluate(() => document.activeElement === document.body)).toBe(true);
      const launcher = page.getByRole("button", { name: "Chat schließen" });
      const box = (await launcher.boundingBox())!;
      expect(box.x).toBeLessThan(100);
      expect(await launcher.evaluate((el) => getComputedStyle(el).backgroundColor)).toBe("rgb(194, 65, 12)");
      expect(await app.locator("header.bar").evaluate((el) => getComputedStyle(el).backgroundColor)).toBe("rgb(194, 65, 12)");
      await page.screenshot({ path: `${ARTIFACTS}12-options-left-de.png` });
      await launcher.click();
      await page.getByRole("button", { name: "Chat öffnen" }).waitFor();
    } finally {
      await context.close();
      await custom.close();
    }
  });
});
