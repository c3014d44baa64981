// The widget as a visitor meets it (issue #17), in Chromium against the REAL gateway, engine and store
// (tests/gateway/support's stack): sign-in that sticks (a token given while the chat is closed is sent
// once it is ready, a bad one is a plain sentence, the waiting read goes on after Verify; a write's "verify
// again" prompt keeps asking while its write waits, one prompt asks at a time), truthful write
// states (a blocked write says why no card appears, a pending write's resolution is said at the bottom),
// a streamed reply that can be stopped and is seen once after a reload mid-stream, and axe (0 serious or
// critical violations) in each state, light and dark, desktop and phone. Screenshots go to
// tests/artifacts/widget/visitor-*.png.
import { mkdirSync } from "node:fs";
import type { Browser, FrameLocator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ScriptedRule } from "../../server/src/model/scripted.ts";
import { CANCEL } from "../engine/support/harness.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import type { Stack } from "../gateway/support/stack.ts";
import { axeSerious, headingOutline, headingSkips } from "./a11y.ts";
import { ARTIFACTS, buildWidget, launchChromium } from "./browser.ts";
import { SlowStoryModel } from "./slowStory.ts";
import { identityToken, startVisitorStack, widgetTag, type VisitorStack } from "./visitorStack.ts";

const RULES: ScriptedRule[] = [
  { whenNote: /Continue with their last request/, replayUser: true, replies: [] },
  { when: /cancel (SO-\d{4})/i, replies: [{ toolCalls: [{ ...CANCEL(ORDERS.applied), args: { ...CANCEL(ORDERS.applied).args, orderId: "$1" } }] }, { cases: [{ tool: /^write_blocked/, text: "Once your earlier request has finished, ask me again." }], text: "" }] },
  { when: /my orders/i, replies: [{ toolCalls: [{ name: "shop__my_orders", args: {} }] }, { cases: [{ tool: /^customer_not_verified/, text: "Please sign in first." }], text: "Here are your orders." }] },
  { whenNote: /outcome: (pending|unknown)/, replies: [{ text: "I'm checking and will tell you here." }] },
  { when: /close my account/i, replies: [{ toolCalls: [{ name: "shop__close_account", args: { reason: "moving" } }] }, { text: "Please check the card." }] },
  { when: /where is (SO-\d{4})/i, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { cases: [{ tool: /^step_up_required/, text: "Please verify with the button." }], text: "Here is your order." }] },
  { whenNote: /outcome: applied\. The change happened\. Result: closed/, replies: [{ text: "Your account is closed." }] },
];

let browser: Browser;
let visitorStack: VisitorStack;
let stack: Stack;
let siteUrl: string;
let page: Page;
let shot = 0;
/** Lets the shop answer status checks again (set while a test keeps a write pending). */
let releaseChecks: (() => void) | undefined;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await buildWidget();
  visitorStack = await startVisitorStack({
    model: new SlowStoryModel(RULES),
    // The pending write's status checks wait until the test has seen the second request blocked
    // (backend.holdStatusChecks); then the first says pending and the next, a second later, applied.
    statusCheckBaseMs: 1000,
    checkPollMs: 100,
    widget: { name: "Shop helper", starters: ["Where is my order SO-1001?", "My orders"] },
    page: (url, started) => {
      const queued = url.pathname === "/queued";
      const stepUp = url.pathname === "/step-up";
      if (url.pathname !== "/" && !queued && !stepUp) return undefined;
      // /queued signs the visitor in before the loader has even loaded (the queued form of the page API).
      // /step-up signs the visitor in at the standard level, and at the level a step-up asks for when asked.
      const early = queued
        ? `<script>window.Caplo = window.Caplo || []; Caplo.push(["identify", ${JSON.stringify(identityToken("cus-early"))}]);</script>`
        : stepUp
          ? `<script>window.Caplo = window.Caplo || []; Caplo.push(["identify", ${JSON.stringify(identityToken("cus-9"))}]); window.stepUps = []; window.addEventListener("caplo:step-up", (e) => { window.stepUps.push(e.detail.level); Caplo.push(["identify", ${JSON.stringify({ high: identityToken("cus-9", "high"), low: identityToken("cus-9", "low") })}[e.detail.level]]); });</script>`
          : "";
      return `<!doctype html><html lang="en"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title><header style="display:flex;justify-content:space-between;padding:12px 24px"><h1>Shop</h1><button id="sign-in">Sign in</button></header><main><p>Welcome.</p></main>${early}${widgetTag(started.base)}</html>`;
    },
  });
  ({ stack, siteUrl } = visitorStack);
  browser = await launchChromium();
  page = await (await browser.newContext({ locale: "en-US", viewport: { width: 1100, height: 800 } })).newPage();
  page.setDefaultTimeout(10_000);
}, 120_000);

afterAll(async () => {
  releaseChecks?.();
  await browser?.close();
  await visitorStack?.close();
});

const token = (sub: string) => identityToken(sub);
const app = (p: Page = page): FrameLocator => p.frameLocator("iframe[title='Chat']");
async function say(text: string) {
  await app().locator("#caplo-input").fill(text);
  await app().locator("#caplo-input").press("Enter");
}
async function snap(name: string, p: Page = page) {
  await p.screenshot({ path: `${ARTIFACTS}visitor-${String(++shot).padStart(2, "0")}-${name}.png` });
}
/** axe in the chat's frame and on the page (the launcher): serious and critical violations, and headings that skip a level. */
const axe = async (p: Page = page) => [...(await axeSerious(p)), ...headingSkips(await headingOutline(p))];

describe("the widget as a visitor meets it, through the real gateway", () => {
  test("closed and open: the header names the agent with an AI label, starter prompts tap, axe finds nothing serious", async () => {
    await page.goto(siteUrl);
    await page.getByRole("button", { name: "Open chat" }).waitFor();
    expect(await axe()).toEqual([]);
    await snap("closed");
    await page.getByRole("button", { name: "Open chat" }).click();
    await app().getByRole("heading", { level: 1 }).filter({ hasText: "Shop helper" }).waitFor();
    expect(await app().getByRole("heading", { level: 1 }).textContent()).toContain("AI assistant");
    await app().getByRole("group", { name: "Suggestions" }).waitFor();
    expect(await axe()).toEqual([]);
    await snap("open");
    // The page's own sign-in control (top right) stays uncovered by the open panel on a desktop.
    const signIn = (await page.locator("#sign-in").boundingBox())!;
    const panel = (await page.locator("[data-caplo] iframe").boundingBox())!;
    expect(signIn.y + signIn.height).toBeLessThan(panel.y);
  });

  test("an anonymous visitor is asked to sign in (not to verify again); a bad token is a plain sentence; a token given while the chat is closed is sent once ready and the waiting read goes on", async () => {
    await app().getByRole("button", { name: "My orders" }).click();
    const prompt = app().locator("section.step-up").last();
    await prompt.getByRole("heading", { name: "Please sign in" }).waitFor();
    await prompt.getByRole("button", { name: "Sign in" }).waitFor();
    expect(await app().locator("body").textContent()).not.toMatch(/verify (your identity )?again/i);
    expect(await axe()).toEqual([]);
    await snap("step-up-prompt");

    await page.evaluate(() => (window as unknown as { Caplo: { identify(t: string): void } }).Caplo.identify("not.a-real.token"));
    const problem = app().getByRole("alert");
    await problem.waitFor();
    expect(await problem.textContent()).toBe("Your sign-in could not be confirmed. Please sign in again on the page.");
    expect(await app().locator("header").textContent()).not.toContain("Verified");
    expect(await app().locator("body").textContent()).not.toMatch(/base64|JSON|header is/i);
    expect(await axe()).toEqual([]);
    await snap("bad-token");

    // The chat closed, then the page signs the visitor in with the queued form (after load): kept, sent when ready.
    await page.keyboard.press("Escape");
    await page.evaluate((t) => (window as unknown as { Caplo: unknown[] }).Caplo.push(["identify", t]), token("cus-1"));
    await page.getByRole("button", { name: /Open chat/ }).click();
    await app().locator("header .badge.verified").waitFor();
    // Signed in through the page (not the prompt's button): the prompt no longer asks.
    await prompt.getByText("Verified. Thank you.").waitFor();
    expect(await prompt.getByRole("button").count()).toBe(0);
    // No retyping: the read that asked for the sign-in ran for the verified customer.
    await app().getByText("Here are your orders.").waitFor();
    expect(stack.backend.invocations.filter((i) => i.tool === "my_orders").map((i) => i.subject)).toEqual(["cus-1"]);
    expect(await app().getByRole("alert").count()).toBe(0);
    await snap("verified-read-went-on");
  });

  test("before the loader loaded: a queued identify reaches the server once the chat opens", async () => {
    const other = await (await browser.newContext({ locale: "en-US", viewport: { width: 1100, height: 800 } })).newPage();
    try {
      await other.goto(`${siteUrl}/queued`);
      await other.getByRole("button", { name: "Open chat" }).click();
      await app(other).locator("header .badge.verified").waitFor();
    } finally {
      await other.context().close();
    }
  });

  test("one sign-in prompt asks at a time: asked again, only the newest has its button, the older says it was replaced", async () => {
    const other = await (await browser.newContext({ locale: "en-US", viewport: { width: 1100, height: 800 } })).newPage();
    other.setDefaultTimeout(15_000);
    try {
      await other.goto(siteUrl);
      await other.getByRole("button", { name: "Open chat" }).click();
      const prompts = app(other).locator("section.step-up");
      for (const count of [1, 2]) {
        await app(other).locator("#caplo-input").fill("Show my orders");
        await app(other).locator("#caplo-input").press("Enter");
        await expect.poll(() => prompts.count()).toBe(count);
        await prompts.last().getByRole("button", { name: "Sign in" }).waitFor();
      }
      expect(await app(other).getByRole("button", { name: "Sign in" }).count()).toBe(1);
      expect(await prompts.first().getByRole("button").count()).toBe(0);
      expect(await prompts.first().textContent()).toContain("A newer request to verify is below.");
      expect(await axe(other)).toEqual([]);
      await snap("step-up-one-at-a-time", other);
    } finally {
      await other.context().close();
    }
  });

  test("a write's 'verify again' prompt: it keeps its button while its write waits, whatever the visitor writes; a newer prompt takes the button (the older says so); after Verify the write goes on without retyping", async () => {
    const other = await (await browser.newContext({ locale: "en-US", viewport: { width: 1100, height: 800 } })).newPage();
    other.setDefaultTimeout(15_000);
    const said = async (text: string) => {
      await app(other).locator("#caplo-input").fill(text);
      await app(other).locator("#caplo-input").press("Enter");
    };
    try {
      await other.goto(`${siteUrl}/step-up`);
      await other.getByRole("button", { name: "Open chat" }).click();
      await app(other).locator("header .badge.verified").waitFor();
      await said("Please close my account");
      const card = app(other).locator("section.review").last();
      await card.getByRole("button", { name: "Confirm" }).click();
      const prompts = app(other).locator("section.step-up");
      const first = prompts.first();
      await first.getByRole("heading", { name: "Please verify again" }).waitFor();
      await first.getByRole("button", { name: "Verify" }).waitFor();

      // Another request while the write waits: refused, and the write's prompt still asks (the only way on).
      await said(`cancel ${ORDERS.applied}`);
      await app(other).getByText(/Your earlier request \(.+\) must finish first/).waitFor();
      await app(other).getByText("Once your earlier request has finished, ask me again.").waitFor();
      expect(await first.getByRole("button", { name: "Verify" }).count()).toBe(1);

      // A read asks to verify too: one prompt asks at a time, the newest; the write's says a newer one is below.
      await said(`Where is ${ORDERS.stepUp}?`);
      await expect.poll(() => prompts.count()).toBe(2);
      const second = prompts.last();
      await second.getByRole("button", { name: "Verify" }).waitFor();
      await first.getByText("A newer request to verify is below.").waitFor();
      expect(await app(other).getByRole("button", { name: "Verify" }).count()).toBe(1);
      expect(await first.getByRole("button").count()).toBe(0);
      expect(await axe(other)).toEqual([]);
      await snap("write-step-up-one-at-a-time", other);

      // Verify: the page signs the visitor in at the level asked; the waiting write runs by itself.
      await second.getByRole("button", { name: "Verify" }).click();
      await card.getByText("Done", { exact: true }).waitFor();
      await app(other).getByText("Your account is closed.").waitFor();
      await first.getByText("Verified. Thank you.").waitFor();
      await second.getByText("Verified. Thank you.").waitFor();
      expect(await app(other).getByRole("button", { name: "Verify" }).count()).toBe(0);
      expect(await other.evaluate(() => (window as unknown as { stepUps: string[] }).stepUps)).toEqual(["high"]);
      const closes = stack.backend.invocations.filter((i) => i.tool === "close_account");
      expect(closes.map((i) => i.subject)).toEqual(["cus-9", "cus-9"]);
      expect(closes[1]!.key).toBe(closes[0]!.key);
      expect(closes[1]!.args).toEqual(closes[0]!.args);
      // Nothing was retyped: the visitor's messages are the three they wrote.
      expect(await app(other).locator(".bubble.from-customer").count()).toBe(3);
      expect(await axe(other)).toEqual([]);
      await snap("write-step-up-went-on", other);
    } finally {
      await other.context().close();
    }
  });

  test("a write blocked by an unresolved one says why no card appears; the pending write's resolution is said at the bottom; axe on the card and the outcome", async () => {
    // The first write stays pending, whatever the machine's load, until the second request has been refused for it.
    releaseChecks = stack.backend.holdStatusChecks();
    await say(`cancel ${ORDERS.pendingThenApplied}`);
    const card = app().locator("section.review").last();
    await card.getByRole("button", { name: "Confirm" }).waitFor();
    expect(await card.textContent()).toContain("Confirm does exactly this; “Don't do it” changes nothing.");
    expect(await axe()).toEqual([]);
    await snap("review-card");
    await card.getByRole("button", { name: "Confirm" }).click();
    await card.getByText("Not confirmed yet", { exact: true }).waitFor();
    // The focus went to the outcome, not to the page's body.
    await expect.poll(() => app().locator(":focus").textContent()).toContain("Not confirmed yet");
    expect((await card.textContent())!.match(/don't send it again/gi)).toHaveLength(1);
    expect(await axe()).toEqual([]);

    const cards = await app().locator("section.review").count();
    await say(`cancel ${ORDERS.applied}`);
    await app().getByText(/Your earlier request \(.+\) must finish first/).waitFor();
    await app().getByText("Once your earlier request has finished, ask me again.").waitFor();
    expect(await app().locator("section.review").count()).toBe(cards);
    await snap("write-blocked");
    releaseChecks();

    // The status check finds it applied: the card changes, and a new message at the bottom says so.
    const update = app().locator(".log > .row").last().locator("section.update");
    await update.getByText("Done", { exact: true }).waitFor({ timeout: 20_000 });
    expect(await update.textContent()).toMatch(/^Update: /);
    await card.getByText("Done", { exact: true }).waitFor();
    expect(await axe()).toEqual([]);
    await snap("pending-resolved-at-bottom");
  });

  test("a reply streams in and can be stopped; the stored reply is what was shown", async () => {
    await say("tell me a story");
    const streaming = app().locator(".streaming .bubble");
    await streaming.getByText("Sentence 3", { exact: false }).waitFor();
    const stop = app().getByRole("button", { name: "Stop the reply" });
    await snap("streaming");
    await stop.click();
    // The reply is stored as far as it went: shown once, as a normal bubble, and the Send button is back.
    await app().getByRole("button", { name: "Send" }).waitFor();
    const shown = await app().locator(".bubble.from-agent").filter({ hasText: "Sentence 1 of a long story." }).last().textContent();
    expect(shown).not.toContain("Sentence 60");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await app().locator(".streaming").count()).toBe(0);
    expect(await app().locator(".bubble.from-agent").filter({ hasText: "Sentence 1 of a long story." }).count()).toBe(1);
  });

  test("a visitor who reloads mid-stream sees the final reply once", async () => {
    await say("another story please");
    await app().locator(".streaming .bubble").getByText("Sentence 2 ", { exact: false }).waitFor();
    await page.reload();
    await page.getByRole("button", { name: /Open chat/ }).click();
    await app().getByText("Sentence 60 of a long story.").waitFor({ timeout: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await app().locator(".bubble.from-agent").filter({ hasText: "Sentence 60 of a long story." }).count()).toBe(1);
    expect(await app().locator(".streaming").count()).toBe(0);
  });

  test("dark mode and a phone: readable, axe finds nothing serious", async () => {
    await page.emulateMedia({ colorScheme: "dark" });
    await app().locator(".log").evaluate((el) => el.scrollTo({ top: 0 }));
    expect(await axe()).toEqual([]);
    await snap("dark");
    await page.emulateMedia({ colorScheme: "light" });
    const phone = await (await browser.newContext({ locale: "en-US", viewport: { width: 390, height: 780 }, hasTouch: true, isMobile: true })).newPage();
    try {
      await phone.goto(siteUrl);
      await phone.getByRole("button", { name: "Open chat" }).click();
      await app(phone).locator("#caplo-input").waitFor();
      // The page behind the full-screen panel does not scroll.
      expect(await phone.evaluate(() => getComputedStyle(document.documentElement).overflow)).toBe("hidden");
      expect(await axe(phone)).toEqual([]);
      await snap("phone", phone);
    } finally {
      await phone.context().close();
    }
  });
});
