// The widget as a visitor meets it (issue #17), in Chromium against the REAL gateway, engine and store
// (tests/gateway/support's stack): sign-in that sticks (a token given while the chat is closed is sent
// once it is ready, a bad one is a plain sentence, the waiting read goes on after Verify), truthful write
// states (a blocked write says why no card appears, a pending write's resolution is said at the bottom),
// a streamed reply that can be stopped and is seen once after a reload mid-stream, and axe (0 serious or
// critical violations) in each state, light and dark, desktop and phone. Screenshots go to
// tests/artifacts/widget/visitor-*.png.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Browser, FrameLocator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { releaseFromVersions } from "../../server/src/engine/release.ts";
import { mintIdentityToken } from "../../server/src/identity/index.ts";
import type { Model, ModelRequest, ModelStreamPart } from "../../server/src/model/model.ts";
import { ScriptedModel, type ScriptedRule } from "../../server/src/model/scripted.ts";
import { CANCEL } from "../engine/support/harness.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { startStack, type Stack } from "../gateway/support/stack.ts";
import { ARTIFACTS, buildWidget, launchChromium } from "./browser.ts";

const SECRET = "a-visitor-test-identity-secret-of-32-bytes!";
const STORY = Array.from({ length: 60 }, (_, i) => `Sentence ${i + 1} of a long story.`).join(" ");
const RULES: ScriptedRule[] = [
  { whenNote: /Continue with their last request/, replayUser: true, replies: [] },
  { when: /cancel (SO-\d{4})/i, replies: [{ toolCalls: [{ ...CANCEL(ORDERS.applied), args: { ...CANCEL(ORDERS.applied).args, orderId: "$1" } }] }, { cases: [{ tool: /^write_blocked/, text: "I'll do that once your earlier request has finished." }], text: "" }] },
  { when: /my orders/i, replies: [{ toolCalls: [{ name: "shop__my_orders", args: {} }] }, { cases: [{ tool: /^customer_not_verified/, text: "Please sign in first." }], text: "Here are your orders." }] },
  { whenNote: /outcome: (pending|unknown)/, replies: [{ text: "I'm checking and will tell you here." }] },
];
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** The scripted rules, but "story" is written slowly, word by word, as a real model streams. */
class SlowStoryModel implements Model {
  readonly id = "scripted:slow-story";
  private readonly scripted = new ScriptedModel(RULES, { fallback: "I can help with orders." });
  firstTokenAt: number[] = [];
  async *stream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
    const last = request.messages.at(-1);
    if (last?.role === "user" && /story/i.test(last.content)) {
      for (const word of STORY.match(/\S+\s*/g)!) {
        if (request.signal?.aborted) return void (yield { type: "error", code: "model_aborted", message: "the request was cancelled" });
        await new Promise((resolve) => setTimeout(resolve, 40));
        yield { type: "text-delta", text: word };
      }
      return void (yield { type: "finish", reason: "stop" });
    }
    yield* this.scripted.stream(request);
  }
}

let browser: Browser;
let stack: Stack;
let site: Server;
let siteUrl: string;
let page: Page;
let shot = 0;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await buildWidget();
  site = createServer((req, res) => {
    const queued = req.url === "/queued";
    if (req.url !== "/" && !queued) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    // /queued signs the visitor in before the loader has even loaded (the queued form of the page API).
    const early = queued ? `<script>window.Caplo = window.Caplo || []; Caplo.push(["identify", ${JSON.stringify(token("cus-early"))}]);</script>` : "";
    res.end(`<!doctype html><html lang="en"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title><header style="display:flex;justify-content:space-between;padding:12px 24px"><h1>Shop</h1><button id="sign-in">Sign in</button></header><main><p>Welcome.</p></main>${early}<script src="${stack.base}/widget.js" data-agent="shop-agent" async></script></html>`);
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
  const origins: string[] = [siteUrl];
  stack = await startStack({
    model: new SlowStoryModel(),
    statusCheckBaseMs: 1500,
    checkPollMs: 100,
    gateway: { secrets: (name) => (name === "IDENTITY_SECRET" ? SECRET : undefined) },
    releases: (version) => [
      releaseFromVersions({
        agent: "shop-agent",
        instructions: "Help shop customers.",
        origins,
        versions: [version],
        identity: { algorithm: "HS256", secret: "IDENTITY_SECRET", maxTokenAgeSeconds: 600, defaultLevel: "low" },
        widget: { name: "Shop helper", starters: ["Where is my order SO-1001?", "My orders"] },
      }),
    ],
  });
  origins.push(stack.base);
  browser = await launchChromium();
  page = await (await browser.newContext({ locale: "en-US", viewport: { width: 1100, height: 800 } })).newPage();
  page.setDefaultTimeout(10_000);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
  await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
});

function token(sub: string): string {
  return mintIdentityToken({ algorithm: "HS256", secret: SECRET, claims: { sub, ref: sub, level: "standard" } });
}
const app = (p: Page = page): FrameLocator => p.frameLocator("iframe[title='Chat']");
async function say(text: string) {
  await app().locator("#caplo-input").fill(text);
  await app().locator("#caplo-input").press("Enter");
}
async function snap(name: string, p: Page = page) {
  await p.screenshot({ path: `${ARTIFACTS}visitor-${String(++shot).padStart(2, "0")}-${name}.png` });
}
/** axe in the chat's frame and on the page (the launcher): serious and critical violations, as "id: target" lines. */
async function axe(p: Page = page): Promise<string[]> {
  const found: string[] = [];
  for (const frame of [p.mainFrame(), ...p.frames().filter((f) => f.url().includes("/widget/app.html"))]) {
    await frame.evaluate(axeSource);
    const results = await frame.evaluate(async () => {
      const run = (window as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe.run;
      return run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
    });
    for (const v of results.violations) if (v.impact === "serious" || v.impact === "critical") found.push(`${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  }
  return found;
}

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

  test("a write blocked by an unresolved one says why no card appears; the pending write's resolution is said at the bottom; axe on the card and the outcome", async () => {
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
    await app().getByText("I'll do that once your earlier request has finished.").waitFor();
    expect(await app().locator("section.review").count()).toBe(cards);
    await snap("write-blocked");

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
