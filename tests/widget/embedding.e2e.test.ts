// Issue #17 section 6, the widget on the owner's page, in Chromium against the REAL gateway: the page's own
// CSS cannot hide, fade or cover the launcher or the open panel; on a phone data-open does not take over the
// screen on load, and the page behind the full-screen panel does not scroll (it does again once closed).
// The launcher's shadow root is open, as the docs say and why; the chat itself is a cross-origin frame the
// page cannot read; on a desktop the open panel leaves the page's header band free at common window sizes.
// (A disallowed origin and an unknown agent: gateway.e2e; the panel clear of a page's sign-in control:
// visitor.e2e.)
import { readFileSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { buildWidget, launchChromium } from "./browser.ts";
import { startVisitorStack, widgetTag, type VisitorStack } from "./visitorStack.ts";

/** CSS a careless or hostile page could ship: everything hidden, faded, blurred or shrunk, and a cover on top. */
const HOSTILE = `<style>
  [data-caplo], [data-caplo] * { opacity: 0 !important; visibility: hidden !important; filter: blur(8px) !important; transform: scale(0) !important; display: none !important; }
  iframe { display: none !important; }
  .cover { position: fixed; inset: 0; z-index: 2147483647; background: #fff; }
</style>`;

let browser: Browser;
let visitorStack: VisitorStack;

beforeAll(async () => {
  await buildWidget();
  visitorStack = await startVisitorStack({
    widget: { name: "Shop helper" },
    page: (url, started) => {
      const tall = `<main style="height:3000px"><h1>Shop</h1><p>Welcome.</p></main>`;
      if (url.pathname === "/hostile") return `<!doctype html><html lang="en"><title>Shop</title>${HOSTILE}${tall}${widgetTag(started.base)}<div class="cover"></div></html>`;
      if (url.pathname === "/plain") return `<!doctype html><html lang="en"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title>${tall}${widgetTag(started.base)}</html>`;
      if (url.pathname === "/open") return `<!doctype html><html lang="en"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title>${tall}${widgetTag(started.base, ' data-open="true"')}</html>`;
      return undefined;
    },
  });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await visitorStack?.close();
});

/** What the page shows at the centre of the launcher and of the open panel: the widget's host element, or the page's. */
const topmostAt = (page: Page, selector: "button" | "div[role=dialog]") =>
  page.evaluate((inner) => {
    const host = document.querySelector("[data-caplo]")!;
    const box = host.shadowRoot!.querySelector(inner)!.getBoundingClientRect();
    const found = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
    return { onTop: found === host, size: [Math.round(box.width), Math.round(box.height)] };
  }, selector);

describe("the widget on the owner's page (#17 section 6)", () => {
  test("page CSS that hides, fades, blurs or shrinks everything, and a cover over the page, leave the launcher and the panel usable", async () => {
    const page = await (await browser.newContext({ locale: "en-US", viewport: { width: 1100, height: 800 } })).newPage();
    page.setDefaultTimeout(15_000);
    try {
      await page.goto(`${visitorStack.siteUrl}/hostile`);
      const launcher = page.getByRole("button", { name: "Open chat" });
      await launcher.waitFor();
      expect(await topmostAt(page, "button")).toEqual({ onTop: true, size: [60, 60] });
      expect(await launcher.evaluate((el) => [getComputedStyle(el).opacity, getComputedStyle(el).visibility, getComputedStyle(el.getRootNode() instanceof ShadowRoot ? (el.getRootNode() as ShadowRoot).host : el).opacity])).toEqual(["1", "visible", "1"]);
      await launcher.click();
      await page.frameLocator("iframe[title='Chat']").locator("#caplo-input").waitFor();
      expect((await topmostAt(page, "div[role=dialog]")).onTop).toBe(true);
      await page.frameLocator("iframe[title='Chat']").locator("#caplo-input").fill("hello");
      await page.frameLocator("iframe[title='Chat']").locator("#caplo-input").press("Enter");
      await page.frameLocator("iframe[title='Chat']").getByText("Hi! How can I help?").waitFor();
    } finally {
      await page.context().close();
    }
  });

  test("the launcher's shadow root is open, as the docs say, and the conversation is in a frame the page cannot read; the open panel leaves the top 108 px free on a desktop", async () => {
    // The docs give the choice and its reason; none says the root is closed.
    expect(readFileSync("docs/site-owners/embedding.md", "utf8")).toMatch(/the root is open on purpose: what protects the conversation is the chat's\s+cross-origin iframe/);
    expect(readFileSync("docs/operators/security.md", "utf8")).toMatch(/open shadow root/);
    for (const doc of ["docs/site-owners/embedding.md", "docs/operators/security.md", "widget/README.md"]) expect(readFileSync(doc, "utf8"), doc).not.toMatch(/closed shadow root/i);
    for (const [width, height] of [[1100, 800], [1280, 720], [1440, 900], [1920, 1080]] as const) {
      const page = await (await browser.newContext({ locale: "en-US", viewport: { width, height } })).newPage();
      page.setDefaultTimeout(15_000);
      try {
        await page.goto(`${visitorStack.siteUrl}/plain`);
        await page.getByRole("button", { name: "Open chat" }).click();
        await page.frameLocator("iframe[title='Chat']").locator("#caplo-input").waitFor();
        const seen = await page.evaluate(() => {
          const host = document.querySelector("[data-caplo]")!;
          const frame = host.shadowRoot?.querySelector("iframe");
          let readable = true;
          try {
            readable = frame?.contentDocument != null;
          } catch {
            readable = false;
          }
          return { mode: host.shadowRoot?.mode, readable, top: Math.round(frame!.getBoundingClientRect().top) };
        });
        expect(seen.mode).toBe("open");
        expect(seen.readable).toBe(false);
        expect(seen.top, `${width}x${height}`).toBeGreaterThanOrEqual(108);
      } finally {
        await page.context().close();
      }
    }
  });

  test("on a phone data-open leaves the chat closed on load (on a desktop it opens); opened, the panel fills the screen and the page behind does not scroll until it is closed", async () => {
    const desktop = await (await browser.newContext({ locale: "en-US", viewport: { width: 1100, height: 800 } })).newPage();
    const phone = await (await browser.newContext({ locale: "en-US", viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true })).newPage();
    try {
      for (const page of [desktop, phone]) {
        page.setDefaultTimeout(15_000);
        await page.goto(`${visitorStack.siteUrl}/open`);
      }
      // The desktop opens on load (data-open is read); the phone, loaded as long, stays closed.
      await desktop.frameLocator("iframe[title='Chat']").locator("#caplo-input").waitFor();
      await phone.evaluate(() => new Promise((resolve) => requestIdleCallback(() => resolve(null), { timeout: 3000 })));
      expect(await phone.getByRole("button", { name: "Open chat" }).getAttribute("aria-expanded")).toBe("false");
      // The panel is not shown (a frame made ahead may be laid out, transparent).
      const shown = () =>
        phone.evaluate(() => {
          const style = getComputedStyle(document.querySelector("[data-caplo]")!.shadowRoot!.querySelector("[role=dialog]")!);
          return style.display !== "none" && style.visibility !== "hidden" && style.opacity !== "0";
        });
      expect(await shown()).toBe(false);

      await phone.getByRole("button", { name: "Open chat" }).tap();
      const input = phone.frameLocator("iframe[title='Chat']").locator("#caplo-input");
      await input.waitFor();
      expect(await shown()).toBe(true);
      expect(await phone.locator("iframe[title='Chat']").boundingBox()).toEqual({ x: 0, y: 0, width: 390, height: 844 });
      const page = () => phone.evaluate(() => ({ y: window.scrollY, overflow: getComputedStyle(document.documentElement).overflow }));
      await phone.mouse.move(195, 300);
      await phone.mouse.wheel(0, 900);
      expect(await page()).toEqual({ y: 0, overflow: "hidden" });
      // Closed (Escape in the chat), the page is the page again: it scrolls.
      await input.press("Escape");
      await phone.getByRole("button", { name: "Open chat" }).waitFor();
      expect((await page()).overflow).not.toBe("hidden");
      await phone.mouse.wheel(0, 900);
      await expect.poll(async () => (await page()).y).toBeGreaterThan(0);
    } finally {
      await desktop.context().close();
      await phone.context().close();
    }
  });
});
