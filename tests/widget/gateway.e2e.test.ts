// The widget end to end against the REAL gateway, engine and scripted model (tests/gateway/support's
// stack: SQLite store, the shop's MCP tools through the in-process test runner): in Chromium, the owner's
// page with the script tag, look up an order (detail layout), cancel it through the review card with an
// edited field, confirm, see the receipt, decline another, reload and see the history once; download an
// invoice, and after retention purged it, see that it is no longer available instead of a broken download.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, FrameLocator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { releaseFromVersions } from "../../server/src/engine/release.ts";
import type { ScriptedRule } from "../../server/src/model/scripted.ts";
import { CANCEL } from "../engine/support/harness.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { startStack, type Stack } from "../gateway/support/stack.ts";
import { ARTIFACTS, buildWidget, downloadedBytes, launchChromium } from "./browser.ts";
import { mkdirSync } from "node:fs";
import { FileRetention } from "../../server/src/engine/fileRetention.ts";

const RULES: ScriptedRule[] = [
  { when: /cancel (SO-\d{4})/i, replies: [{ text: "I can cancel it. Please check and confirm.", toolCalls: [{ ...CANCEL(ORDERS.applied), args: { ...CANCEL(ORDERS.applied).args, orderId: "$1" } }] }] },
  { when: /order (SO-\d{4})/i, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: "Your order is **on its way**." }] },
  { whenNote: /applied/, replies: [{ text: "Done: your order is cancelled." }] },
  { when: /invoice for (SO-\d{4})/i, replies: [{ toolCalls: [{ name: "shop__invoice", args: { orderId: "$1" } }] }, { text: "Here is your invoice." }] },
];

let browser: Browser;
let stack: Stack;
let site: Server;
let siteUrl: string;
let page: Page;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await buildWidget();
  site = createServer((req, res) => {
    if (req.url !== "/" && req.url !== "/other-agent") return void res.writeHead(404).end();
    const agent = req.url === "/" ? "shop-agent" : "no-such-agent";
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>Shop</title><h1>Shop</h1><script src="${stack.base}/widget.js" data-agent="${agent}" async></script>`);
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
  const origins: string[] = [siteUrl];
  stack = await startStack({
    rules: RULES,
    releases: (version) => [releaseFromVersions({ agent: "shop-agent", instructions: "Help shop customers.", origins, versions: [version] })],
  });
  // The app's WebSocket comes from its iframe, served by the gateway: its Origin is the gateway's own.
  origins.push(stack.base);
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
async function say(text: string) {
  await app().locator("#caplo-input").fill(text);
  await app().locator("#caplo-input").press("Enter");
}

describe("widget with the real gateway and scripted model", () => {
  test("look up, cancel with an edit, confirm, receipt, decline another, reload", async () => {
    await page.goto(siteUrl);
    await page.getByRole("button", { name: "Open chat" }).click();
    await app().locator("#caplo-input").waitFor();

    await say(`Where is my order ${ORDERS.applied}?`);
    const result = app().getByRole("region", { name: "Your order", exact: true });
    await result.waitFor();
    await app().getByText("on its way").waitFor();
    await page.screenshot({ path: `${ARTIFACTS}gateway-01-result.png` });

    await say(`Please cancel ${ORDERS.applied}`);
    const card = app().locator("section.review").first();
    await card.getByRole("button", { name: "Confirm" }).waitFor();
    expect(await card.textContent()).toContain("1234");
    expect(await card.textContent()).not.toContain("4111111111111234");
    await card.getByLabel("Refund speed").selectOption("express");
    await page.screenshot({ path: `${ARTIFACTS}gateway-02-review.png` });
    // Each button says what it does.
    expect(await card.textContent()).toContain("Confirm does exactly this; “Don't do it” changes nothing.");
    await card.getByRole("button", { name: "Confirm" }).dblclick();
    await card.getByText("Done", { exact: true }).waitFor();
    await card.getByLabel("Receipt").waitFor();
    // The focus went to the outcome, not to the page's body.
    await expect.poll(() => app().locator(":focus").textContent()).toContain("Done");
    await app().getByText("Done: your order is cancelled.").waitFor();
    // One success line: the state and the receipt, not the server's sentence or the tool's text again.
    expect(await card.getByText("Done", { exact: true }).count()).toBe(1);
    expect(await card.textContent()).not.toMatch(/went through|done\.|is cancelled/i);
    await page.screenshot({ path: `${ARTIFACTS}gateway-03-receipt.png` });
    expect(stack.backend.applications.filter((a) => a.args.orderId === ORDERS.applied)).toHaveLength(1);
    expect(stack.backend.applications[0]!.args.speed).toBe("express");

    await say(`Please cancel ${ORDERS.rejected}`);
    const second = app().locator("section.review").nth(1);
    await second.getByRole("button", { name: "Don't do it" }).click();
    await second.getByText("You chose not to go ahead. Nothing was changed.").waitFor();
    // Not the opposite of what happened, and no spliced sentence.
    expect(await second.textContent()).not.toMatch(/Cancelled by you|declined it|was not done/i);
    await expect.poll(() => app().locator(":focus").textContent()).toContain("Not done");
    expect(stack.backend.applications.some((a) => a.args.orderId === ORDERS.rejected)).toBe(false);
    await page.screenshot({ path: `${ARTIFACTS}gateway-04-declined.png` });

    // Thumbs under a reply: the visitor changes their rating; the team sees the latest one.
    const reply = app().locator(".row.side-agent", { hasText: "Done: your order is cancelled." });
    await reply.getByRole("button", { name: "Not a helpful answer", exact: true }).click();
    await reply.getByRole("button", { name: "Helpful answer", exact: true }).click();
    await reply.locator("button[aria-pressed='true'][aria-label='Helpful answer']").waitFor();
    expect(await reply.getByRole("button", { name: "Helpful answer", exact: true }).getAttribute("aria-pressed")).toBe("true");
    expect(await reply.getByRole("button", { name: "Not a helpful answer", exact: true }).getAttribute("aria-pressed")).toBe("false");
    const team = { authorization: "Bearer team-secret-token" };
    const rated = async () => ((await (await fetch(`${stack.base}/v1/team/conversations`, { headers: team })).json()) as { conversations: { ratings: { up: number; down: number } }[] }).conversations[0]?.ratings;
    await expect.poll(rated).toEqual({ up: 1, down: 0 });
    await page.screenshot({ path: `${ARTIFACTS}gateway-04b-rated.png` });

    await page.reload();
    await page.getByRole("button", { name: "Open chat" }).click();
    await app().getByText("Done: your order is cancelled.").waitFor();
    expect(await app().locator("section.review").count()).toBe(2);
    expect(await app().getByRole("region", { name: "Your order", exact: true }).count()).toBe(1);
    expect(await app().getByRole("button", { name: "Confirm" }).count()).toBe(0);
    await page.screenshot({ path: `${ARTIFACTS}gateway-05-reload.png` });

    // The visitor comes back in a new tab (the host page keeps the resume token; this tab's session cache of
    // the events and what was pressed is empty): the history comes from the server, and so does the rating.
    const later = await page.context().newPage();
    later.setDefaultTimeout(10_000);
    await later.goto(siteUrl);
    await later.getByRole("button", { name: "Open chat" }).click();
    const laterReply = later.frameLocator("iframe[title='Chat']").locator(".row.side-agent", { hasText: "Done: your order is cancelled." });
    await laterReply.waitFor();
    await laterReply.locator("button[aria-pressed='true'][aria-label='Helpful answer']").waitFor();
    expect(await laterReply.getByRole("button", { name: "Not a helpful answer", exact: true }).getAttribute("aria-pressed")).toBe("false");
    await later.close();
  });

  test("a page whose origin is not listed, and an unknown agent, get a plain sentence in the panel and a console error naming the fix", async () => {
    const context = await browser.newContext({ locale: "en-US", viewport: { width: 1000, height: 800 } });
    try {
      // Same site server, another origin (127.0.0.1 is not localhost): not in the agent's origins.
      const cases = [
        { url: siteUrl.replace("localhost", "127.0.0.1") + "/", agent: "shop-agent", origin: siteUrl.replace("localhost", "127.0.0.1") },
        { url: `${siteUrl}/other-agent`, agent: "no-such-agent", origin: siteUrl },
      ];
      for (const { url, agent, origin } of cases) {
        const other = await context.newPage();
        other.setDefaultTimeout(15_000);
        const errors: string[] = [];
        other.on("console", (m) => m.type() === "error" && errors.push(m.text()));
        await other.goto(url);
        await other.getByRole("button", { name: "Open chat" }).click();
        await other.getByRole("alert").filter({ hasText: "This chat is not available on this page." }).waitFor();
        expect(await other.locator("iframe[title='Chat']").count()).toBe(0);
        await expect.poll(() => errors.find((e) => e.startsWith("Caplo:"))).toBe(
          `Caplo: the chat for agent "${agent}" did not start on ${origin}. Check that ${stack.base} serves an agent named "${agent}" and that "${origin}" is listed in the origins of its agent.yaml.`,
        );
        await other.screenshot({ path: `${ARTIFACTS}gateway-unavailable-${agent}.png` });
        await other.close();
      }
    } finally {
      await context.close();
    }
  });

  test("a file downloads; once retention purged it (410 file_expired) the card says it is no longer available", async () => {
    await page.goto(siteUrl);
    await page.getByRole("button", { name: "Open chat" }).click();
    await say(`Send me the invoice for ${ORDERS.applied}`);
    const link = app().getByRole("link", { name: `Download ${ORDERS.applied}.pdf` });
    await link.waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
    expect(download.suggestedFilename()).toBe(`${ORDERS.applied}.pdf`);
    expect((await downloadedBytes(download)).toString("latin1")).toContain(`invoice ${ORDERS.applied}`);
    expect(await app().getByRole("alert").count()).toBe(0);

    // The retention sweep as `caplo serve` runs it, here with a period that has already passed.
    expect(await new FileRetention({ store: stack.store, retentionMs: 1, now: () => Date.now() + 1000 }).purge()).toBeGreaterThan(0);
    let downloaded = false;
    page.once("download", () => (downloaded = true));
    await link.click();
    const card = app().locator(".card.file").last();
    await card.getByRole("alert").waitFor();
    expect(await card.getByRole("alert").textContent()).toMatch(/^This file is no longer available/);
    expect(downloaded).toBe(false);
    await page.screenshot({ path: `${ARTIFACTS}gateway-06-file-expired.png` });
  });
});
