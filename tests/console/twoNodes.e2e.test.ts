// The console live across two nodes on one PostgreSQL database (Chromium, two real gateways and engines): a
// conversation a customer starts on node A shows up, unread, in a member's inbox on node B; a member's read mark
// made on one node shows on the other (in another browser too); a takeover and a team message on node B show
// on node A's console, in the inbox and in the conversation node A served (the console reads the store, not
// node A's memory of recent events). The console needs no bus: it polls the shared store.
import { randomBytes } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { MemoryBus, MemoryHub } from "../../server/src/bus/memoryBus.ts";
import { PostgresStore } from "../../server/src/store/postgresStore.ts";
import type { TestClient } from "../gateway/support/client.ts";
import { startStack, type Stack } from "../gateway/support/stack.ts";
import { testPg } from "../support/services.ts";
import { launchChromium } from "../widget/browser.ts";
import { buildConsole } from "./build.ts";
import { ANA, axe, BEN, isEvent, openCustomer, screenshots, signIn } from "./support.ts";

const settings = { ...testPg(), schema: `caplo_console2_${process.pid}_${randomBytes(4).toString("hex")}` };
let a: Stack;
let b: Stack;
let browser: Browser;
const contexts: BrowserContext[] = [];
let customer: TestClient;
let id: string;
const snap = screenshots("two-nodes");
const pages: Record<string, Page> = {};

async function member(name: string, node: Stack, token: string): Promise<Page> {
  const context = await browser.newContext({ locale: "en-US", viewport: { width: 1280, height: 820 } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await signIn(page, node.base, token);
  pages[name] = page;
  return page;
}
const row = (page: Page) => page.locator(`a.conversation[data-id="${id}"]`);

beforeAll(async () => {
  await buildConsole();
  // The nodes share the store and an event bus (Redis in production): what one node stores reaches the other's sockets.
  const hub = new MemoryHub();
  a = await startStack({ nodeId: "node-a", store: () => new PostgresStore(settings), bus: new MemoryBus({ hub }), gateway: { modelOf: () => "scripted" } });
  b = await startStack({ nodeId: "node-b", store: () => new PostgresStore(settings), bus: new MemoryBus({ hub }), gateway: { modelOf: () => "scripted" } });
  browser = await launchChromium();
  await member("anaOnB", b, ANA);
  await member("anaOnA", a, ANA);
  await member("benOnB", b, BEN);
}, 120_000);

afterEach(async (context) => {
  if (context.task.result?.state === "fail") for (const [name, page] of Object.entries(pages)) await snap(page, `failed-${name}`).catch(() => undefined);
});

afterAll(async () => {
  await customer?.close();
  for (const context of contexts) await context.close();
  await browser?.close();
  await a?.close();
  await b?.close();
  const store = new PostgresStore(settings);
  await store.dropSchema();
  await store.close();
});

describe("the console on two nodes", () => {
  test("a conversation on node A is in the inbox on node B, unread; a read mark on one node shows on the other", async () => {
    ({ client: customer, conversationId: id } = await openCustomer(a.wsUrl, "https://shop.example", "shop-agent", "Where is order SO-1001?", "result"));
    const { anaOnB, anaOnA, benOnB } = pages as Record<string, Page>;
    await expect.poll(() => row(anaOnB!).getAttribute("class"), { timeout: 10_000 }).toContain("unread");
    await expect.poll(() => row(anaOnB!).textContent(), { timeout: 10_000 }).toContain("Your order is on its way.");
    await snap(anaOnB!, "inbox-on-b");
    // Ana reads it on node A: her inbox on node B (another browser) stops marking it; Ben's still does.
    await row(anaOnA!).click();
    await anaOnA!.getByText("Where is order SO-1001?").waitFor();
    await expect.poll(() => row(anaOnB!).getAttribute("class"), { timeout: 10_000 }).not.toContain("unread");
    expect(await row(benOnB!).getAttribute("class")).toContain("unread");
    expect(await axe(anaOnB!)).toEqual([]);
  });

  test("a takeover and a message by a member on node B show on node A, in the inbox and in the conversation node A served", async () => {
    const { anaOnA, benOnB } = pages as Record<string, Page>;
    await benOnB!.goto(`${b.base}/console#/c/${id}`);
    await benOnB!.getByRole("button", { name: "Take over" }).click();
    await benOnB!.getByLabel("Message to the customer").fill("Hi, Ben from the shop here.");
    await benOnB!.getByRole("button", { name: "Send" }).click();
    await customer.waitFor(isEvent("text", (m) => m.from === "team" && m.text === "Hi, Ben from the shop here."));
    await expect.poll(() => row(anaOnA!).textContent(), { timeout: 10_000 }).toContain("held by ben");
    await anaOnA!.locator(".holder").filter({ hasText: "Held by ben." }).waitFor();
    await anaOnA!.locator(".history").getByText("Hi, Ben from the shop here.").waitFor();
    expect(await anaOnA!.getByRole("button", { name: "Take over" }).isDisabled()).toBe(true);
    await snap(anaOnA!, "conversation-on-a");
    // The customer answers on node A: Ben's console on node B shows it.
    customer.send({ t: "in", ref: "thanks", event: { type: "message", text: "Thanks Ben!" } });
    await benOnB!.locator(".history").getByText("Thanks Ben!").waitFor();
  });
});
