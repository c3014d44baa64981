// Issue #17 section 5, what visitors expect from the chat widgets they know, in Chromium against the REAL
// gateway, engine and store (tests/gateway/support's stack): the header with the agent's avatar, name and
// AI label; a time on every message and a day separator where the day changes; "talk to a person" where
// the web channel hands off; a new conversation and the transcript in the words shown; a composer that
// grows and shows its limit before cutting a paste; long replies collapsed in the history. (Starter
// prompts: visitor.e2e; thumbs: gateway.e2e; the map on tiles: accessibility.e2e; the cards carousel:
// tests/demo/demo.e2e.test.ts, with the demo's products.)
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { ScriptedRule } from "../../server/src/model/scripted.ts";
import { buildWidget, downloadedBytes, launchChromium } from "./browser.ts";
import { identityToken, startVisitorStack, widgetTag, type VisitorStack } from "./visitorStack.ts";
import { app, identify, openChat, say, Visitors } from "./visitors.ts";

const AVATAR = "https://cdn.caplo.test/avatar.svg";
const LONG = Array.from({ length: 40 }, (_, i) => `Line ${i + 1} of a long answer.`).join("\n\n");
const RULES: ScriptedRule[] = [
  { when: /order (SO-\d{4})/i, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: "Here it is." }] },
  { when: /person/i, replies: [{ toolCalls: [{ name: "handoff_to_team", args: { reason: "the customer asked for a person" } }] }, { text: "" }] },
  { when: /long/i, replies: [{ text: LONG }] },
  { when: /my orders/i, replies: [{ toolCalls: [{ name: "shop__my_orders", args: {} }] }, { text: "Please sign in first." }] },
];

let browser: Browser;
let visitorStack: VisitorStack;
let visitors: Visitors;
/** How far the server's clock is from the real one (a conversation that began yesterday). */
let clockOffset = 0;

beforeAll(async () => {
  await buildWidget();
  visitorStack = await startVisitorStack({
    rules: RULES,
    now: () => Date.now() + clockOffset,
    channels: { web: { handoff: { queue: "support", message: "A colleague will answer you here shortly." } } },
    widget: { name: "Shop helper", avatar: AVATAR, starters: ["Where is my order SO-1001?"] },
    page: (_url, started) => `<!doctype html><html lang="en"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title><h1>Shop</h1>${widgetTag(started.base)}</html>`,
  });
  browser = await launchChromium();
  // The avatar's host answers with a drawn picture.
  const avatar = (context: BrowserContext) =>
    context.route(AVATAR, (route) => route.fulfill({ contentType: "image/svg+xml", body: '<svg xmlns="http://www.w3.org/2000/svg" width="30" height="30"><circle cx="15" cy="15" r="15" fill="#e07a5f"/></svg>' }));
  visitors = new Visitors(browser, visitorStack.siteUrl, { context: { acceptDownloads: true }, prepare: avatar });
}, 120_000);
afterEach(() => visitors?.closeAll());

afterAll(async () => {
  await browser?.close();
  await visitorStack?.close();
});

/** Presses "Download the transcript" and reads the file the visitor gets. */
async function downloadTranscript(page: Page): Promise<{ fileName: string; text: string }> {
  const [download] = await Promise.all([page.waitForEvent("download"), app(page).getByRole("button", { name: "Download the transcript" }).click()]);
  return { fileName: download.suggestedFilename(), text: (await downloadedBytes(download)).toString("utf8") };
}

describe("what visitors expect from the widgets they know (#17 section 5)", () => {
  test("the header shows the agent's avatar, its name and an AI label", async () => {
    const page = await visitors.open();
    const avatar = app(page).locator("header img.avatar");
    await expect.poll(() => avatar.evaluate((img) => (img as HTMLImageElement).naturalWidth)).toBe(30);
    expect(await avatar.getAttribute("src")).toBe(AVATAR);
    expect(await app(page).getByRole("heading", { level: 1 }).textContent()).toBe("Shop helperAI, AI assistant");
  });

  test("every message has its time, and a conversation that goes on the next day is separated by Yesterday and Today", async () => {
    const page = await visitors.open();
    try {
      clockOffset = -24 * 60 * 60 * 1000;
      await say(page, "Where is my order SO-1001?");
      await app(page).getByText("Here it is.").waitFor();
      clockOffset = 0;
      await say(page, "Where is my order SO-1002?");
      await app(page).getByText("Here it is.").nth(1).waitFor();
      expect(await app(page).locator(".log > .day").allTextContents()).toEqual(["Yesterday", "Today"]);
      const times = await app(page).locator(".log > .row > time.at").allTextContents();
      expect(times.length).toBeGreaterThanOrEqual(6);
      for (const time of times) expect(time).toMatch(/^\d{1,2}:\d{2} [AP]M$/);
    } finally {
      clockOffset = 0;
    }
  });

  test("talk to a person: offered where the web channel hands off; pressed, the team is asked and the offer goes", async () => {
    const page = await visitors.open();
    await app(page).getByRole("button", { name: "Talk to a person" }).click();
    await app(page).getByText("I'd like to talk to a person, please.").waitFor();
    await app(page).locator(".notice.handoff").getByText("A colleague will answer you here shortly.").waitFor();
    expect(await app(page).getByRole("button", { name: "Talk to a person" }).count()).toBe(0);
  });

  test("the transcript download says what the visitor saw, in the same words; a new conversation starts empty and stays the one shown after a reload", async () => {
    const page = await visitors.open();
    await say(page, "Where is my order SO-1001?");
    await app(page).getByText("Here it is.").waitFor();
    const { fileName, text } = await downloadTranscript(page);
    expect(fileName).toMatch(/^conversation-\d{4}-\d{2}-\d{2}\.txt$/);
    expect(text).toMatch(/\] You: Where is my order SO-1001\?\n/);
    expect(text).toContain("Assistant: Your order\n    - SO-1001, shipped, €42.50, •••• 4242\n");
    expect(text).toMatch(/\] Assistant: Here it is\.\n$/);
    expect(text).not.toMatch(/4111|42\.5,|internal/);

    await app(page).getByRole("button", { name: "Start a new conversation" }).click();
    await app(page).getByRole("group", { name: "Suggestions" }).waitFor();
    expect(await app(page).locator(".log > .row").count()).toBe(0);
    await say(page, "Where is my order SO-1002?");
    await app(page).getByText("Here it is.").waitFor();
    await page.reload();
    await openChat(page, visitorStack.siteUrl);
    await app(page).getByText("Where is my order SO-1002?").waitFor();
    expect(await app(page).getByText("Where is my order SO-1001?").count()).toBe(0);
  });

  test("the transcript writes each verification prompt in the words shown: 'Please sign in' to an anonymous visitor, 'Please verify again' to a signed-in one, the same after a reload", async () => {
    const page = await visitors.open();
    const signIn = "] Notice: Please sign in. To continue, please sign in on this page. Your request goes on once you have.\n";
    const again = "] Notice: Please verify again. To continue, please verify your identity again. Your request goes on once you have.\n";
    await say(page, "Show my orders");
    const prompts = app(page).locator("section.step-up");
    await prompts.first().getByRole("heading", { name: "Please sign in" }).waitFor();
    await identify(page, identityToken("cus-t"));
    await app(page).locator("header .badge.verified").waitFor();
    await say(page, "Where is my order SO-5001?");
    await expect.poll(() => prompts.count()).toBe(2);
    await prompts.last().getByRole("heading", { name: "Please verify again" }).waitFor();
    for (const reloaded of [false, true]) {
      if (reloaded) {
        await page.reload();
        await page.getByRole("button", { name: /Open chat/ }).click();
        await prompts.last().getByRole("heading", { name: "Please verify again" }).waitFor();
        expect(await prompts.first().getByRole("heading").textContent()).toBe("Please sign in");
      }
      const { text } = await downloadTranscript(page);
      expect(text.split(signIn)).toHaveLength(2);
      expect(text.split(again)).toHaveLength(2);
      expect(text.indexOf(signIn)).toBeLessThan(text.indexOf(again));
      // Never the server's words, which the widget did not show.
      expect(text).not.toMatch(/verify your identity (so|for)/i);
    }
  });

  test("the composer grows with the text, shows what is left near the limit, and keeps a paste over it whole without sending it", async () => {
    const page = await visitors.open();
    const input = app(page).locator("#caplo-input");
    const height = () => input.evaluate((el) => el.getBoundingClientRect().height);
    const one = await height();
    await input.fill("one\ntwo\nthree\nfour");
    expect(await height()).toBeGreaterThan(one * 2);
    await input.fill("x".repeat(3600));
    expect(await app(page).locator("#caplo-counter").textContent()).toBe("400 characters left");
    await input.fill("y".repeat(4100));
    expect(await app(page).locator("#caplo-counter").textContent()).toBe("Too long to send: at most 4000 characters, this has 4100.");
    expect(await input.getAttribute("aria-invalid")).toBe("true");
    expect(await app(page).getByRole("button", { name: "Send" }).isDisabled()).toBe(true);
    await input.press("Enter");
    expect(await input.inputValue()).toHaveLength(4100);
    expect(await app(page).locator(".bubble.from-customer").count()).toBe(0);
  });

  test("a long reply the visitor watched being written stays open; in the history (a new tab) it starts collapsed with Show more", async () => {
    const page = await visitors.open();
    await say(page, "a long answer please");
    await app(page).getByText("Line 40 of a long answer.").waitFor();
    expect(await app(page).getByRole("button", { name: "Show less" }).getAttribute("aria-expanded")).toBe("true");
    const later = await openChat(await page.context().newPage(), visitorStack.siteUrl);
    const more = app(later).getByRole("button", { name: "Show more" });
    await more.waitFor();
    expect(await more.getAttribute("aria-expanded")).toBe("false");
    // Cut to a few lines: the text runs on past what is shown.
    expect(await app(later).locator(".bubble.collapsed .text").evaluate((el) => el.scrollHeight > el.clientHeight * 3)).toBe(true);
    await more.click();
    await app(later).getByRole("button", { name: "Show less" }).waitFor();
    expect(await app(later).locator(".bubble.collapsed").count()).toBe(0);
  });
});
