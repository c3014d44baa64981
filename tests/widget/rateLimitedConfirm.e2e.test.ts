// A rate-limited confirm in Chromium through the REAL gateway (issue #14, item 3): the gateway answers the
// dropped confirm with rate_limited and the confirm's ref, so the widget's review card becomes usable again
// and says why instead of waiting forever; confirmed again once the rate allows, the write runs once.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync } from "node:fs";
import type { Browser, FrameLocator, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { releaseFromVersions } from "../../server/src/engine/release.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { SHOP_RULES, startStack, type Stack } from "../gateway/support/stack.ts";
import { ARTIFACTS, buildWidget, launchChromium } from "./browser.ts";

let browser: Browser;
let stack: Stack;
let site: Server;
let siteUrl: string;
let page: Page;
/** The rate limit's clock, held still: a connection's frames do not refill until the test moves it. */
let clock = Date.now();

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await buildWidget();
  site = createServer((req, res) => {
    if (req.url !== "/") return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>Shop</title><h1>Shop</h1><script src="${stack.base}/widget.js" data-agent="shop-agent" async></script>`);
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
  stack = await startStack({
    rules: SHOP_RULES,
    // Two frames, then one per second of the held clock: the hello and the message use them up.
    gateway: { limits: { burst: 2, framesPerSecond: 1 }, now: () => clock },
    releases: (version) => [releaseFromVersions({ agent: "shop-agent", instructions: "Help shop customers.", origins: [siteUrl], versions: [version] })],
  });
  browser = await launchChromium();
  page = await (await browser.newContext({ locale: "en-US", viewport: { width: 1000, height: 800 } })).newPage();
  page.setDefaultTimeout(10_000);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
  await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
});

const app = (): FrameLocator => page.frameLocator("iframe[title='Chat']");

test("a rate-limited confirm comes back with its ref: the card is usable again and says why; confirmed later, the write runs once", async () => {
  await page.goto(siteUrl);
  await page.getByRole("button", { name: "Open chat" }).click();
  await app().locator("#caplo-input").fill(`Please cancel ${ORDERS.applied}`);
  await app().locator("#caplo-input").press("Enter");
  const card = app().locator("section.review").first();
  const confirm = card.getByRole("button", { name: "Confirm" });
  await confirm.waitFor();

  await confirm.click();
  const why = card.getByRole("alert");
  await why.waitFor();
  expect(await why.textContent()).toMatch(/^Too many actions at once/);
  // Not stuck: the card can be confirmed again, and nothing ran.
  await confirm.waitFor();
  expect(await confirm.isEnabled()).toBe(true);
  expect(stack.backend.applications.filter((a) => a.args.orderId === ORDERS.applied)).toHaveLength(0);
  await page.screenshot({ path: `${ARTIFACTS}rate-limited-confirm-01.png` });

  clock += 60_000;
  await confirm.click();
  await card.getByText("Done", { exact: true }).waitFor();
  await card.getByLabel("Receipt").waitFor();
  expect(stack.backend.applications.filter((a) => a.args.orderId === ORDERS.applied)).toHaveLength(1);
  await page.screenshot({ path: `${ARTIFACTS}rate-limited-confirm-02.png` });
});
