// The walkthrough through the running demo (`caplo demo`, as `npm start` runs it: the real gateway, the
// sandboxed demo packages against the demo shop, the offline demo model): every state issue #17 names,
// from the closed launcher to a new conversation, with a shot of each. One fresh demo per variant, so
// every order's cancel answers as docs/demo-shop.md says.
import { writeFileSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { downloadedBytes } from "../browser.ts";
import { chat, contextOptions, say, scrollChat, type Shooter, WALK_ARTIFACTS } from "./shooter.ts";

const LONG = 20_000;
const reviews = (page: Page) => chat(page).locator("section.review");

/** One step of the tour: a failure is shot and reported, and the tour goes on with the next step. */
export async function step(shooter: Shooter, page: Page, name: string, run: () => Promise<void>, failures: string[]): Promise<void> {
  try {
    await run();
  } catch (error) {
    failures.push(`${shooter.variant.name} ${name}: ${String(error).split("\n")[0]}`);
    console.log(`  FAILED ${name}: ${String(error).split("\n")[0]}`);
    await shooter.snap(page, `FAILED-${name}`, { axe: false }).catch(() => undefined);
  }
}

/** Declines every card still waiting for a decision (a write the tour did not mean to leave open blocks the next). */
async function declineOpen(page: Page): Promise<void> {
  const open = chat(page).getByRole("button", { name: "Don't do it" });
  while ((await open.count()) > 0) {
    const card = reviews(page).filter({ has: open }).first();
    await open.first().click();
    await card.getByText("Nothing was changed", { exact: false }).waitFor();
  }
}

/** Asks to cancel an order and answers its card; returns the card. */
async function cancel(page: Page, order: string, answer: "Confirm" | "Don't do it") {
  await say(page, `cancel order ${order}`);
  const card = reviews(page).last();
  await card.filter({ hasText: order }).getByRole("button", { name: answer }).waitFor();
  return card;
}

export async function demoTour(browser: Browser, url: string, shooter: Shooter, failures: string[]): Promise<void> {
  const context = await browser.newContext(contextOptions(shooter.variant));
  const page = await context.newPage();
  page.setDefaultTimeout(LONG);
  const s = (name: string, run: () => Promise<void>) => step(shooter, page, name, run, failures);
  const app = chat(page);
  const open = () => page.getByRole("button", { name: /^Open chat/ }).click();

  await s("closed", async () => {
    await page.goto(url);
    await page.getByRole("button", { name: "Open chat" }).waitFor();
    await shooter.snap(page, "closed-launcher");
  });

  await s("open", async () => {
    await open();
    await app.getByText("offline demo", { exact: false }).first().waitFor();
    await app.getByRole("group", { name: "Suggestions" }).waitFor();
    await shooter.snap(page, "open-header-greeting-starters");
  });

  await s("bad-token", async () => {
    await page.evaluate(() => (window as unknown as { Caplo: { identify(token: string): void } }).Caplo.identify("not.a-real.token"));
    await app.getByRole("alert").waitFor();
    await shooter.snap(page, "bad-token");
  });

  await s("starter-read", async () => {
    await app.getByRole("button", { name: "Where is my order SO-1002?" }).click();
    await app.getByRole("region", { name: "Your order", exact: true }).waitFor();
    await shooter.snap(page, "starter-tapped-order-detail");
  });

  await s("sign-in-asked", async () => {
    await say(page, "change my address to Slovenska cesta 1, 1000 Ljubljana");
    await app.locator("section.step-up").last().waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "anonymous-asked-to-sign-in");
  });

  await s("identify-while-closed", async () => {
    await page.keyboard.press("Escape");
    await page.getByRole("button", { name: "Sign in as demo customer" }).click();
    await page.getByText("Signed in as Ana Novak").waitFor();
    await shooter.snap(page, "signed-in-while-closed");
    await open();
    await app.locator("header .badge.verified").waitFor();
    // The write that asked for the sign-in goes on by itself: its card, without retyping.
    await reviews(page).last().getByRole("button", { name: "Confirm" }).waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "verified-write-went-on-card");
  });

  await s("step-up", async () => {
    const address = reviews(page).last();
    await address.getByRole("button", { name: "Confirm" }).click();
    const verify = app.locator("section.step-up").last();
    await verify.getByRole("button", { name: "Verify" }).waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "step-up-verify-again");
    await verify.getByRole("button", { name: "Verify" }).click();
    await address.getByText("Done", { exact: true }).waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "step-up-done-address-applied");
  });

  await s("proposed-confirmed-applied", async () => {
    const card = await cancel(page, "SO-1001", "Confirm");
    await scrollChat(page, { selector: "section.review" });
    await shooter.snap(page, "write-proposed");
    await card.getByRole("button", { name: "Confirm" }).click();
    await shooter.snap(page, "write-confirmed", { axe: false });
    await card.getByText("Done", { exact: true }).waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "write-applied");
  });

  await s("declined", async () => {
    const card = await cancel(page, "SO-1005", "Don't do it");
    await card.getByRole("button", { name: "Don't do it" }).click();
    await card.getByText("Nothing was changed", { exact: false }).waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "write-declined");
  });

  await s("not-applied", async () => {
    const card = await cancel(page, "SO-1003", "Confirm");
    await card.getByRole("button", { name: "Confirm" }).click();
    await card.getByText("Not done", { exact: true }).waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "write-not-applied");
  });

  await s("pending-blocked-resolved", async () => {
    const card = await cancel(page, "SO-1002", "Confirm");
    await card.getByRole("button", { name: "Confirm" }).click();
    await card.getByText("Not confirmed yet", { exact: true }).waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "write-pending");
    await say(page, "cancel order SO-1008");
    await app.getByText(/must finish first/).last().waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "write-refused-earlier-unresolved");
    await app.locator(".log > .row").last().locator("section.update").waitFor({ timeout: 40_000 });
    await scrollChat(page, "end");
    await shooter.snap(page, "pending-resolved-later-at-bottom");
    await declineOpen(page);
  });

  await s("unknown-resolved", async () => {
    const card = await cancel(page, "SO-1009", "Confirm");
    await card.getByRole("button", { name: "Confirm" }).click();
    await card.locator(".state").filter({ hasText: /./ }).first().waitFor();
    await app.getByText(/checking with the shop/).last().waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "write-unknown");
    await app.locator(".log > .row").last().locator("section.update").waitFor({ timeout: 40_000 });
    await scrollChat(page, "end");
    await shooter.snap(page, "unknown-resolved-later-at-bottom");
    await declineOpen(page);
  });

  await s("pending-not-applied", async () => {
    const card = await cancel(page, "SO-1007", "Confirm");
    await card.getByRole("button", { name: "Confirm" }).click();
    await card.getByText("Not confirmed yet", { exact: true }).waitFor();
    await app.locator(".log > .row").last().locator("section.update").waitFor({ timeout: 40_000 });
    await scrollChat(page, "end");
    await shooter.snap(page, "pending-then-not-applied-at-bottom");
    await declineOpen(page);
  });

  await s("choices-display-values", async () => {
    await say(page, "book an appointment");
    for (let question = 0; question < 2; question++) {
      const asked = app.locator("section.question").last();
      await asked.getByRole("button").first().waitFor();
      if (question === 0) {
        await scrollChat(page, "end");
        await shooter.snap(page, "question-choices");
      }
      await asked.getByRole("button").first().click();
      await app.locator("section.question").nth(question + 1).or(app.getByRole("region", { name: "Pick a time" })).first().waitFor();
    }
    const slots = app.getByRole("region", { name: "Pick a time" }).last();
    await slots.getByRole("button").first().waitFor();
    await scrollChat(page, { selector: ".layout-choices" });
    await shooter.snap(page, "choices-slots");
    await slots.getByRole("button").first().click();
    const booking = reviews(page).last();
    await booking.getByRole("button", { name: "Confirm" }).waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "choice-reply-label-and-review-display-values");
    await booking.getByRole("button", { name: "Confirm" }).click();
    await booking.getByLabel("Receipt").waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "booking-receipt");
  });

  const layouts: [string, string, string][] = [
    ["stores near me", "Our stores", "map-without-tiles"],
    ["show products", "Products", "product-carousel"],
    ["compare plans", "Compare plans", "comparison"],
    ["my orders", "Your orders", "table"],
    ["track my order SO-1003", "Where your order is", "timeline"],
    ["my returns", "Returns for this order", "list"],
    ["my invoice", "Invoice", "detail-and-file"],
  ];
  for (const [text, title, state] of layouts) {
    await s(state, async () => {
      await say(page, text);
      await app.getByRole("region", { name: title, exact: true }).last().waitFor();
      await scrollChat(page, { selector: `[aria-label="${title}"], section:has(> h2:text-is("${title}")), section:has(> h3:text-is("${title}"))` }).catch(() => scrollChat(page, "end"));
      // Pictures in view are shown in the shot (they load lazily).
      await app.locator(".log img").evaluateAll((images) =>
        Promise.race([Promise.all(images.map((img) => (img as HTMLImageElement).decode().catch(() => undefined))), new Promise((resolve) => setTimeout(resolve, 3000))]),
      );
      await shooter.snap(page, state);
      if (state === "product-carousel") {
        const next = app.getByRole("button", { name: "Next: Products" }).last();
        for (let i = 0; i < 3; i++) await next.click();
        await page.waitForTimeout(600);
        await shooter.snap(page, "product-carousel-next-pressed");
      }
    });
  }

  await s("page-panel", async () => {
    await say(page, "how do refunds work");
    await app.getByRole("button", { name: /Read the article/ }).last().click();
    const panel = app.getByRole("dialog", { name: "Help article" });
    await panel.frameLocator("iframe").getByRole("heading", { name: "Returns and refunds" }).waitFor();
    await shooter.snap(page, "page-panel");
    await panel.getByRole("button").first().click();
    await panel.waitFor({ state: "detached" });
  });

  await s("thumbs", async () => {
    const reply = app.locator(".row.side-agent").filter({ has: app.getByRole("button", { name: "Helpful answer" }) }).last();
    await reply.getByRole("button", { name: "Helpful answer", exact: true }).click();
    await reply.locator("button[aria-pressed='true']").waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "thumbs-up-pressed");
  });

  await s("composer", async () => {
    const input = app.locator("#caplo-input");
    await input.fill("First line of a longer question\nsecond line\nthird line\nfourth line\nfifth line");
    await shooter.snap(page, "composer-grown");
    await input.fill("x".repeat(3700));
    await app.locator("#caplo-counter").waitFor();
    await shooter.snap(page, "composer-near-limit");
    await input.fill("y".repeat(4100));
    await app.locator("#caplo-counter.over").waitFor();
    await shooter.snap(page, "composer-over-limit");
    await input.fill("");
  });

  await s("talk-to-person", async () => {
    await app.getByRole("button", { name: /talk to a person/i }).click();
    await app.locator(".notice.handoff").last().waitFor();
    await scrollChat(page, "end");
    await shooter.snap(page, "talk-to-a-person");
  });

  await s("transcript", async () => {
    const [download] = await Promise.all([page.waitForEvent("download"), app.getByRole("button", { name: "Download the transcript" }).click()]);
    writeFileSync(`${WALK_ARTIFACTS}${shooter.variant.name}/transcript.txt`, await downloadedBytes(download));
    console.log(`  ${shooter.variant.name}/transcript.txt (${download.suggestedFilename()})`);
  });

  await s("new-conversation", async () => {
    await app.getByRole("button", { name: "Start a new conversation" }).click();
    await app.getByRole("group", { name: "Suggestions" }).waitFor();
    await shooter.snap(page, "new-conversation");
  });

  await context.close();
}
