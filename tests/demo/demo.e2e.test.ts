// What a newcomer does after `npm install && npm start`: the real `caplo demo` command as a child process
// (free port, temporary data folder, a short pending delay), the printed page in real Chromium, and a walk
// through the examples: every result layout, an appointment booked through its review card (an edited
// select), a write confirmed (receipt), a write declined, a pending write resolved by its status check, a
// file downloaded, the demo customer signed in and verified again for a write that needs it. Then Ctrl-C
// (SIGINT to its process group) stops it cleanly. Screenshots of each step, and the downloaded PDF, go to tests/artifacts/demo/.
import { mkdirSync, rmSync } from "node:fs";
import type { Browser, FrameLocator, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { downloadedBytes, launchChromium } from "../widget/browser.ts";
import { freePort, ROOT, spawnDemo, waitForUrl, type DemoProcess } from "./demoProcess.ts";
import { DEFAULT_API_KEY } from "../../examples/shop-api/src/index.ts";
import { spellingsIn } from "../attacks/support/secretSpellings.ts";

const ARTIFACTS = `${ROOT}tests/artifacts/demo/`;
let demo: DemoProcess;
let url: string;
let browser: Browser;
let page: Page;
let shot = 0;

beforeAll(async () => {
  // Only this run's screenshots: a step renamed or removed leaves no stale picture behind.
  rmSync(ARTIFACTS, { recursive: true, force: true });
  mkdirSync(ARTIFACTS, { recursive: true });
  demo = spawnDemo(["--port", String(await freePort()), "--shop-port", "0", "--pending-ms", "300", "--status-check-ms", "500"]);
  url = await waitForUrl(demo);
  // The start shows its progress: every package, built or taken from the cache, counted.
  expect(demo.output()).toMatch(/\[11\/11\] tool package \w+: (built|up to date)/);
  browser = await launchChromium();
  const context = await browser.newContext({ locale: "en-US", viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await demo?.stop();
});

const app = (): FrameLocator => page.frameLocator("iframe[title='Chat']");
/** Waits for the chat's finite animations (a panel fading in, the chat opening) so a screenshot shows where they end. */
async function settled() {
  const finished = () =>
    Promise.all(document.getAnimations().filter((a) => a.effect?.getComputedTiming().iterations !== Infinity).map((a) => a.finished.catch(() => undefined))).then(() => undefined);
  await page.evaluate(finished);
  if (await page.locator("iframe[title='Chat']").isVisible()) await app().locator("body").evaluate(finished);
}
async function snap(name: string, fullPage = false) {
  await settled();
  await page.screenshot({ path: `${ARTIFACTS}${String(++shot).padStart(2, "0")}-${name}.png`, fullPage });
}
async function say(text: string) {
  await app().locator("#caplo-input").fill(text);
  await app().locator("#caplo-input").press("Enter");
}
/** The latest result region with this title, once it is shown. */
async function result(title: string, layout: string): Promise<Locator> {
  const region = app().getByRole("region", { name: title, exact: true }).last();
  await region.waitFor();
  expect(await region.getAttribute("class")).toContain(`layout-${layout}`);
  // Its top at the top of the chat, so the screenshot shows the layout itself (the map, not only its list).
  await region.evaluate((element) => element.scrollIntoView({ block: "start" }));
  return region;
}
const reviews = () => app().locator("section.review");

describe("npm start: the demo shop as a newcomer sees it", () => {
  test("the printed page is a shop with the widget, and the offline agent walks through every example", async () => {
    await page.goto(url);
    await page.getByRole("heading", { name: "Warm layers for grey days" }).waitFor();
    expect(await page.getByRole("button", { name: "Sign in as demo customer" }).isVisible()).toBe(true);
    await snap("shop-page", true);

    await page.getByRole("button", { name: "Open chat" }).click();
    await app().locator("#caplo-input").waitFor();
    await app().getByText("offline demo", { exact: false }).first().waitFor();
    await snap("chat-open");

    await say("help");
    await app().getByText("where is my order SO-1002").first().waitFor();

    await say("where is my order SO-1002");
    const order = await result("Your order", "detail");
    expect(await order.textContent()).toContain("SO-1002");
    await snap("detail-order");

    // Without an order number, the tracking tool asks for it in a form (form elicitation).
    await say("track my order");
    const form = app().locator("form.question").last();
    await form.getByLabel("Order number").fill("SO-1003");
    await snap("form-question");
    await form.getByRole("button", { name: "Send" }).click();
    const timeline = await result("Where your order is", "timeline");
    expect(await timeline.textContent()).toContain("Out for delivery In progress");
    expect(await timeline.textContent()).not.toContain("in_progress");
    await snap("timeline-tracking");

    await say("my orders");
    expect(await (await result("Your orders", "table")).textContent()).toContain("SO-1004");
    await snap("table-orders");

    await say("stores near me");
    const stores = await result("Our stores", "map");
    expect(await stores.textContent()).toContain("Caplo Shop BTC");
    // The demo's agent names no tile source: no map box with pins on grey, a directions link for each place.
    expect(await stores.getByRole("img", { name: /^Map of/ }).count()).toBe(0);
    const directions = stores.getByRole("link", { name: /^Directions to / });
    expect(await directions.count()).toBeGreaterThan(1);
    for (const href of await directions.evaluateAll((links) => links.map((a) => a.getAttribute("href")))) {
      expect(href).toMatch(/^https:\/\/www\.google\.com\/maps\/dir\/\?api=1&destination=-?\d+\.\d{6},-?\d+\.\d{6}$/);
    }
    await snap("map-stores");

    await say("compare plans");
    expect(await (await result("Compare plans", "comparison")).textContent()).toContain("Premium");
    await snap("comparison-plans");

    await say("show products");
    const products = await result("Products", "cards");
    expect(await products.textContent()).toContain("Merino hoodie");
    // A carousel: one row that scrolls sideways, named with its count; Next and Previous for a mouse (Previous
    // disabled at the start), the arrow keys once the row has the focus.
    const row = products.getByRole("list", { name: /^Products: \d+ cards, scroll sideways$/ });
    const scrolled = () => row.evaluate((el) => el.scrollLeft);
    expect(await products.getByRole("button", { name: "Previous: Products" }).isDisabled()).toBe(true);
    await products.getByRole("button", { name: "Next: Products" }).click();
    await expect.poll(scrolled).toBeGreaterThan(100);
    await products.getByRole("button", { name: "Previous: Products" }).waitFor({ state: "visible" });
    await expect.poll(() => products.getByRole("button", { name: "Previous: Products" }).isEnabled()).toBe(true);
    const before = await scrolled();
    await row.focus();
    await page.keyboard.press("ArrowRight");
    await expect.poll(scrolled).toBeGreaterThan(before);
    await snap("cards-products");

    await say("my returns");
    expect(await (await result("Returns for this order", "list")).textContent()).toContain("RT-2001");
    await snap("list-returns");

    await say("how do refunds work");
    const help = await result("Help article", "page");
    // The article's page is on the shop's port, whichever the demo chose (here a free one): its origin
    // is allowed, so the button is there and the panel shows the shop's page.
    await help.getByRole("button", { name: /Read the article/ }).click();
    const panel = app().getByRole("dialog", { name: "Help article" });
    await panel.frameLocator("iframe").getByRole("heading", { name: "Returns and refunds" }).waitFor();
    await snap("page-help");
    await panel.getByRole("button").first().click();
    await panel.waitFor({ state: "detached" });

    await say("my invoice");
    expect(await (await result("Invoice", "detail")).textContent()).toContain("INV-1004");
    const link = app().getByRole("link", { name: /Download INV-1004\.pdf/ });
    await link.waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
    expect((await downloadedBytes(download)).subarray(0, 5).toString("latin1")).toBe("%PDF-");
    expect(download.suggestedFilename()).toBe("INV-1004.pdf");
    await download.saveAs(`${ARTIFACTS}${download.suggestedFilename()}`);
    await snap("file-invoice");

    await say("book an appointment");
    const service = app().locator("section.question").last();
    await service.getByRole("button").first().waitFor();
    await snap("choices-question");
    await service.getByRole("button").first().click();
    const store = app().locator("section.question").nth(1);
    await store.getByRole("button").first().waitFor();
    await store.getByRole("button").first().click();
    const slots = await result("Pick a time", "choices");
    await snap("choices-slots");
    expect(await slots.getByRole("button").count()).toBeGreaterThan(0);
    // In the stores' own time, as the customer will walk in: "Sat 5 Dec, 15:00, fitting".
    expect(await slots.getByRole("button").first().textContent()).toMatch(/^\w{3} \d{1,2} \w{3}, \d{2}:\d{2}, fitting/);

    // A slot picked: the visitor's message shows the slot as it was offered, not the id the message carries;
    // book_slot's review card, its reminder an editable select, changed before confirming.
    const slotLabel = (await slots.getByRole("button").first().locator("span").first().textContent())!;
    await slots.getByRole("button").first().click();
    const customerSaid = () => app().locator(".bubble.from-customer");
    await customerSaid().filter({ hasText: slotLabel }).waitFor();
    expect(await customerSaid().last().textContent()).not.toMatch(/SL-|book slot/i);
    const booking = reviews().last();
    await booking.getByRole("button", { name: "Confirm" }).waitFor();
    expect(await booking.getByRole("heading").textContent()).toBe("Book this appointment");
    await booking.getByLabel("Reminder").selectOption("sms");
    await snap("review-booking");
    await booking.getByRole("button", { name: "Confirm" }).click();
    await booking.getByText("Done", { exact: true }).waitFor();
    await booking.getByLabel("Receipt").waitFor();
    const booked = await booking.getByLabel("Receipt").textContent();
    expect(booked).toMatch(/Time\w{3} \d{1,2} \w{3}, \d{2}:\d{2}/);
    expect(booked).toContain("ReminderBy text message");
    await snap("receipt-booking");

    // A write that needs no confirmation (a delivery note) runs at once; its outcome is told all the same.
    await say("add a note to order SO-1003: please leave it with the neighbour");
    const note = app().getByRole("region", { name: "Delivery note: Done", exact: true });
    await note.getByText("Done", { exact: true }).waitFor();
    // It says what was done (no card showed it), and the agent goes on after it rather than falling silent.
    expect(await note.textContent()).toBe("Delivery noteDoneOrderSO-1003Noteplease leave it with the neighbour");
    await app().locator(".row:has(section.outcome) + .row .bubble.from-agent").getByText("Anything else?").waitFor();
    await snap("note-applied");

    // A write confirmed: the review card, then the receipt.
    await say("cancel order SO-1001");
    const applied = reviews().last();
    await applied.getByRole("button", { name: "Confirm" }).waitFor();
    expect(await applied.textContent()).toContain("SO-1001");
    await snap("review-cancel");
    await applied.getByRole("button", { name: "Confirm" }).click();
    await applied.getByText("Done", { exact: true }).waitFor();
    await applied.getByLabel("Receipt").waitFor();
    expect(await applied.getByLabel("Receipt").textContent()).toContain("Refund€39.80");
    await snap("receipt-cancel");

    // A write declined: nothing runs.
    await say("cancel order SO-1005");
    const declined = reviews().last();
    await declined.getByRole("button", { name: "Don't do it" }).waitFor();
    await declined.getByRole("button", { name: "Don't do it" }).click();
    await declined.getByText("You chose not to go ahead. Nothing was changed.").waitFor();
    await snap("declined-cancel");

    // A pending write: the shop answers 202; the status check later records the real outcome.
    await say("cancel order SO-1002");
    const pending = reviews().last();
    await pending.getByRole("button", { name: "Confirm" }).waitFor();
    await pending.getByRole("button", { name: "Confirm" }).click();
    await pending.getByText("Not confirmed yet", { exact: true }).waitFor();
    await snap("pending-cancel");
    await pending.getByText("Done", { exact: true }).waitFor({ timeout: 30_000 });
    // Resolved, the card says only where the write stands now: done, with the receipt, not "not confirmed yet".
    await pending.getByLabel("Receipt").waitFor();
    expect(await pending.getByLabel("Receipt").textContent()).toContain("Refund€89.00");
    expect(await pending.textContent()).not.toMatch(/not confirmed yet|don't send it again/i);
    // And the news is said where the conversation is now, since the card may have scrolled away.
    const update = app().locator("section.update").last();
    await update.getByText("Update: Cancel this order").waitFor();
    await snap("pending-resolved");

    // The demo customer signs in through the page's own sign-in (an identity token from the demo backend).
    await page.getByRole("button", { name: "Sign in as demo customer" }).click();
    await page.getByText("Signed in as Ana Novak").waitFor();
    await say("change my address to Slovenska cesta 1, 1000 Ljubljana");
    const address = reviews().last();
    await address.getByRole("button", { name: "Confirm" }).waitFor();
    await snap("review-address");
    await address.getByRole("button", { name: "Confirm" }).click();
    // The shop wants a strong, recent sign-in: the chat asks to verify again, the page signs Ana in at level high.
    await app().locator("section.step-up").last().waitFor().catch(async (error: unknown) => {
      await snap("step-up-missing");
      throw error;
    });
    const verify = app().locator("section.step-up").last();
    await snap("step-up-asked");
    await verify.getByRole("button", { name: "Verify" }).click();
    await page.getByText("Verified again as Ana Novak").waitFor();
    // Once verified, the same confirmed call runs again by itself: no second request, no second card.
    await verify.getByText("Verified. Thank you.").waitFor();
    const cards = await reviews().count();
    await address.getByText("Done", { exact: true }).waitFor();
    await address.getByLabel("Receipt").waitFor();
    expect(await address.getByLabel("Receipt").textContent()).toContain("Slovenska cesta 1");
    expect(await address.textContent()).not.toContain("verify your identity again");
    expect(await reviews().count()).toBe(cards);
    await snap("receipt-address");

    // The same visitor in a new tab: the history comes from the server, where the tapped slot is only the
    // message it sent; it still reads as the slot's label, and no message of the visitor shows an id.
    const later = await page.context().newPage();
    later.setDefaultTimeout(15_000);
    await later.goto(url);
    await later.getByRole("button", { name: "Open chat" }).click();
    const laterSaid = later.frameLocator("iframe[title='Chat']").locator(".bubble.from-customer");
    await laterSaid.filter({ hasText: slotLabel }).waitFor();
    expect((await laterSaid.allTextContents()).filter((text) => /SL-|book slot/i.test(text))).toEqual([]);
    await later.close();
  }, 180_000);

  test("the printed team console address and token sign the demo member in, and the walk's conversation is in the inbox with its writes", async () => {
    const consoleUrl = /The team console:\s+(http:\/\/\S+)/.exec(demo.output())?.[1];
    const token = /sign in as demo with the token\s+(\S+)/.exec(demo.output())?.[1];
    expect(consoleUrl).toMatch(/\/console$/);
    expect(token).toMatch(/^demo-[A-Za-z0-9_-]{24}$/);
    const team = await (await browser.newContext({ locale: "en-US", viewport: { width: 1280, height: 900 } })).newPage();
    await team.goto(consoleUrl!);
    await team.getByLabel("Your team token").fill(token!);
    await team.getByRole("button", { name: "Sign in" }).click();
    await team.getByText("Signed in as").waitFor();
    const conversation = team.locator("a.conversation").first();
    await conversation.click();
    await team.getByRole("tab", { name: /Writes \(\d+\)/ }).click();
    await team.locator(".ledger").first().waitFor();
    expect(await team.locator(".ledger").count()).toBeGreaterThan(1);
    await team.screenshot({ path: `${ARTIFACTS}${String(++shot).padStart(2, "0")}-team-console.png` });
    await team.context().close();
  });

  test("the shop's API key, which every tool call sent, is in no spelling in what the demo printed or in any file of its data folder", async () => {
    // The packages sent it on every call of the walk (authorization: Bearer <key>); the shop refuses a call without it.
    const { readdirSync, readFileSync, statSync } = await import("node:fs");
    const { join } = await import("node:path");
    const files = (folder: string): string[] => readdirSync(folder).flatMap((name) => (statSync(join(folder, name)).isDirectory() ? files(join(folder, name)) : [join(folder, name)]));
    const all = files(demo.dataDir);
    expect(all.some((file) => file.endsWith("caplo.db"))).toBe(true);
    expect(spellingsIn(demo.output(), DEFAULT_API_KEY)).toEqual([]);
    for (const file of all) expect(spellingsIn(readFileSync(file).toString("latin1"), DEFAULT_API_KEY), file).toEqual([]);
  });

  test("Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops the demo and its tool processes, with exit code 0", async () => {
    const pid = demo.child.pid!;
    const code = await demo.stop();
    expect(code).toBe(0);
    expect(demo.output()).toContain("Stopped.");
    expect(demo.output()).not.toMatch(/\n\s+at .+\(.+:\d+:\d+\)/);
    // No process of the demo is left: none has the demo's process as parent, none is in its group.
    const { execFileSync } = await import("node:child_process");
    const rows = execFileSync("ps", ["-eo", "ppid=,pgid="]).toString().split("\n").map((line) => line.trim().split(/\s+/).map(Number));
    expect(rows.filter(([ppid, pgid]) => ppid === pid || pgid === pid)).toHaveLength(0);
    // And the page no longer answers: its port is closed.
    await expect(fetch(url)).rejects.toThrow();
  }, 60_000);
});
