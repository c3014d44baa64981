// A long conversation in the console (Chromium, the real gateway and SQLite store): the view opens on the
// newest events with the newest in sight, and older pages load as the member scrolls up (or presses "Show
// older messages") without moving what they were reading, until the first event and "The start of the
// conversation." Every one of 1,250 events is shown once, in order; the team API's ?before= pages are exact.
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { Outbound } from "@caplo/shared";
import { startStack, type Stack } from "../gateway/support/stack.ts";
import { launchChromium } from "../widget/browser.ts";
import { buildConsole } from "./build.ts";
import { ANA, axe, openCustomer, screenshots, signIn } from "./support.ts";
import type { TestClient } from "../gateway/support/client.ts";

const TOTAL = 1250;
let stack: Stack;
let browser: Browser;
let page: Page;
let customer: TestClient;
let id: string;
const snap = screenshots("history");

beforeAll(async () => {
  await buildConsole();
  stack = await startStack({ gateway: { modelOf: () => "scripted" } });
  ({ client: customer, conversationId: id } = await openCustomer(stack.wsUrl, "https://shop.example", "shop-agent", "hello", "text"));
  // The conversation grows to TOTAL events: numbered customer and agent messages, stored as turns store them.
  const have = (await stack.store.getConversation(id))!.lastSeq;
  for (let seq = have + 1; seq <= TOTAL; seq += 100) {
    const batch: Outbound[] = [];
    for (let n = seq; n < Math.min(seq + 100, TOTAL + 1); n++) batch.push({ type: "text", id: `m_${n}`, from: n % 2 ? "customer" : "agent", text: `Message ${n}` });
    await stack.store.append(id, { events: batch }, Date.now());
  }
  browser = await launchChromium();
  page = await (await browser.newContext({ locale: "en-US", viewport: { width: 1280, height: 820 } })).newPage();
  page.setDefaultTimeout(15_000);
  await signIn(page, stack.base, ANA);
}, 120_000);

afterEach(async (context) => {
  if (context.task.result?.state === "fail" && page) await snap(page, `failed-${context.task.name.slice(0, 24).replace(/\W+/g, "-")}`).catch(() => undefined);
});

afterAll(async () => {
  await customer?.close();
  await browser?.close();
  await stack?.close();
});

/** Each row's words (the bubble's text, without the speaker and time). */
const texts = () => page.locator(".history .log .row").evaluateAll((rows) => rows.map((row) => row.querySelector(".text")?.textContent ?? row.textContent ?? ""));
const panelScroll = () => page.locator(".tab-panel").evaluate((el) => ({ top: el.scrollTop, height: el.scrollHeight, client: el.clientHeight }));

describe("a conversation longer than a page", () => {
  test("the team API pages backwards by ?before=: exact ranges, then none older", async () => {
    const get = async (query: string) => (await (await fetch(`${stack.base}/v1/team/conversations/${id}/events?${query}`, { headers: { authorization: `Bearer ${ANA}` } })).json()) as { events: { seq: number }[]; olderBefore: number | null; error?: { code: string } };
    const newest = await get(`before=${TOTAL + 1}`);
    expect(newest.events.map((e) => e.seq)).toEqual(Array.from({ length: 200 }, (_, i) => TOTAL - 199 + i));
    expect(newest.olderBefore).toBe(TOTAL - 199);
    const first = await get("before=151");
    expect(first.events.map((e) => e.seq)).toEqual(Array.from({ length: 150 }, (_, i) => i + 1));
    expect(first.olderBefore).toBeNull();
    expect((await get("before=1")).events).toEqual([]);
    expect((await get(`before=${TOTAL * 10}`)).events.at(-1)!.seq).toBe(TOTAL); // past the end: the newest page
    for (const bad of ["before=0", "before=x", "before=1.5", "before=5&after=1"]) expect((await get(bad)).error?.code, bad).toMatch(/before_invalid|after_invalid/);
  });

  test("opens on the newest events with the newest in sight; scrolling up loads older pages in place until the first event", async () => {
    await page.goto(`${stack.base}/console#/c/${id}`);
    await page.getByText(`Message ${TOTAL}`, { exact: true }).waitFor();
    expect(await page.getByText(`Message ${TOTAL}`, { exact: true }).isVisible()).toBe(true);
    await expect.poll(async () => { const s = await panelScroll(); return s.height - s.top - s.client; }).toBeLessThan(5);
    expect((await texts()).length).toBe(200);
    expect(await axe(page)).toEqual([]);
    await snap(page, "newest");
    // Scrolling to the top loads the page before it; what the member was reading stays where it was.
    const reading = page.getByText(`Message ${TOTAL - 199}`, { exact: true });
    await page.locator(".tab-panel").evaluate((el) => (el.scrollTop = 0));
    await expect.poll(async () => (await texts()).length).toBe(400);
    const box = await reading.boundingBox();
    expect(box!.y).toBeGreaterThan(0);
    expect((await panelScroll()).top).toBeGreaterThan(100);
    await snap(page, "older-loaded");
    // On to the start, by scrolling and by the button.
    // (dispatched, not clicked: a click would scroll the button into view, and reaching the top loads by itself)
    await page.getByRole("button", { name: "Show older messages" }).dispatchEvent("click");
    await expect.poll(async () => (await texts()).length).toBe(600);
    for (let i = 0; i < 10 && (await page.getByText("The start of the conversation.").count()) === 0; i++) {
      await page.locator(".tab-panel").evaluate((el) => (el.scrollTop = 0));
      await page.waitForTimeout(150); // the scroll event, then the page's answer
    }
    await page.getByText("The start of the conversation.").waitFor();
    const all = await texts();
    const numbered = all.map((text) => /^Message (\d+)$/.exec(text.trim())?.[1]).filter(Boolean).map(Number);
    expect(numbered).toEqual(Array.from({ length: numbered.length }, (_, i) => numbered[0]! + i));
    expect([numbered[0], numbered.at(-1)]).toEqual([3, TOTAL]); // seq 1 and 2: the customer's hello and its answer
    expect(all.length).toBe((await stack.store.listEvents(id, 0, 5000)).filter((e) => e.message.type !== "progress").length);
    expect(await page.getByRole("button", { name: "Show older messages" }).count()).toBe(0);
    await snap(page, "start");
  }, 90_000);

  test("a new event arrives while the member reads the start: kept, shown at the bottom, the view not moved", async () => {
    const before = (await panelScroll()).top;
    customer.send({ t: "in", ref: "late", event: { type: "message", text: "One more question" } });
    await page.getByText("One more question").waitFor({ timeout: 30_000 });
    expect((await panelScroll()).top).toBe(before);
    expect((await texts()).filter((text) => text.trim() === "Message 3")).toHaveLength(1);
    expect((await texts()).slice(-2).join(" ")).toContain("One more question"); // then the agent's answer, maybe
  }, 60_000);
});
