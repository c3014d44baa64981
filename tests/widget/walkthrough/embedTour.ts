// The walkthrough's embedding states on the running demo: the demo page with data-open, with an agent the
// gateway does not serve, and from an origin the agent does not list (the same page under another host
// name); on a phone the page behind the open panel does not scroll; on a desktop the panel leaves the
// page's sign-in control free.
import type { Browser, Page } from "playwright-core";
import { chat, contextOptions, type Shooter } from "./shooter.ts";
import { step } from "./demoTour.ts";

/**
 * Opens `at` (the demo page, or the same page under another host name the browser maps to it) with its
 * widget script tag's attributes changed before the loader reads them (a routed copy of the page would
 * be a public document to Chromium, which then refuses the loopback gateway's script).
 */
async function openEdited(page: Page, at: string, attributes: Record<string, string>): Promise<void> {
  await page.addInitScript((set: Record<string, string>) => {
    new MutationObserver((_records, observer) => {
      const tag = document.querySelector("script[data-agent]");
      if (!tag) return;
      for (const [name, value] of Object.entries(set)) tag.setAttribute(name, value);
      observer.disconnect();
    }).observe(document, { childList: true, subtree: true });
  }, attributes);
  await page.goto(at);
}

/** The host name the walkthrough's browser resolves to 127.0.0.1 (run.ts): a page origin no agent lists. */
export const ELSEWHERE = "shop-elsewhere.test";

export async function embedTour(browser: Browser, url: string, shooter: Shooter, failures: string[]): Promise<void> {
  const context = await browser.newContext(contextOptions(shooter.variant));
  const fresh = async () => {
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    return page;
  };
  const phone = shooter.variant.phone;

  let page = await fresh();
  await step(shooter, page, "data-open", async () => {
    await openEdited(page, url, { "data-open": "true" });
    if (phone) {
      // On a phone data-open does not take over the screen: the launcher waits for a tap.
      await page.getByRole("button", { name: "Open chat" }).waitFor();
      await page.waitForTimeout(1500);
      if (await page.locator("iframe[title='Chat']").isVisible()) throw new Error("data-open opened the panel on a phone");
    } else {
      await chat(page).locator("#caplo-input").waitFor();
    }
    await shooter.snap(page, phone ? "data-open-phone-stays-closed" : "data-open-desktop-opens");
  }, failures);

  await step(shooter, page, "panel-over-page", async () => {
    if (!(await page.locator("iframe[title='Chat']").isVisible())) await page.getByRole("button", { name: "Open chat" }).click();
    await chat(page).locator("#caplo-input").waitFor();
    if (phone) {
      // The page behind the full-screen panel does not scroll: a swipe and a wheel leave it where it was.
      const before = await page.evaluate(() => window.scrollY);
      await page.mouse.move(200, 400);
      await page.mouse.wheel(0, 600);
      await page.evaluate(() => window.scrollBy(0, 0));
      const after = await page.evaluate(() => ({ y: window.scrollY, overflow: getComputedStyle(document.documentElement).overflow }));
      console.log(`  phone: page scroll ${before} -> ${after.y}, html overflow ${after.overflow}`);
      if (after.y !== before || after.overflow !== "hidden") throw new Error(`the page behind the panel scrolled (${before} -> ${after.y}, overflow ${after.overflow})`);
      await shooter.snap(page, "phone-full-screen-no-scroll-behind");
    } else {
      const signIn = (await page.getByRole("button", { name: "Sign in as demo customer" }).boundingBox())!;
      const panel = (await page.locator("iframe[title='Chat']").boundingBox())!;
      const clear = signIn.y + signIn.height <= panel.y || signIn.x + signIn.width <= panel.x;
      console.log(`  desktop: sign-in control ${JSON.stringify(signIn)}, panel ${JSON.stringify(panel)}: ${clear ? "not covered" : "COVERED"}`);
      if (!clear) throw new Error("the open panel covers the page's sign-in control");
      await shooter.snap(page, "desktop-panel-clear-of-sign-in");
    }
  }, failures);
  await page.close();

  for (const [state, at, attributes] of [
    ["unknown-agent", url, { "data-agent": "no-such-agent" }],
    ["origin-not-allowed", url.replace("127.0.0.1", ELSEWHERE), {}],
  ] as const) {
    page = await fresh();
    const errors: string[] = [];
    page.on("console", (message) => message.type() === "error" && errors.push(message.text()));
    await step(shooter, page, state, async () => {
      await openEdited(page, at, attributes);
      await page.getByRole("button", { name: "Open chat" }).click();
      await page.getByRole("alert").filter({ hasText: "This chat is not available on this page." }).waitFor();
      await shooter.snap(page, state);
      console.log(`  console: ${errors.find((line) => line.startsWith("Caplo:")) ?? "(no Caplo error)"}`);
    }, failures);
    await page.close();
  }
  await context.close();
}
