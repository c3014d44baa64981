// The walkthrough's states the demo cannot show, on the gateway test stack (the real gateway, engine and
// SQLite store; the test shop's tools in process): a reply streaming word by word with its Stop button,
// the map layout on the site owner's tiles (served here by Playwright's routing as drawn SVG tiles, since
// the machine has no tile server), and a conversation that goes on the next day (its first events moved
// back a day in the store) with its day separators.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import Database from "better-sqlite3";
import type { Browser, Route } from "playwright-core";
import { releaseFromVersions } from "../../../server/src/engine/release.ts";
import type { ScriptedRule } from "../../../server/src/model/scripted.ts";
import { startStack } from "../../gateway/support/stack.ts";
import { SlowStoryModel } from "../slowStory.ts";
import { step } from "./demoTour.ts";
import { chat, contextOptions, say, scrollChat, type Shooter } from "./shooter.ts";

export const TILES = { url: "https://tiles.caplo.test/{z}/{x}/{y}.png", attribution: "Map tiles: a drawn test source" };

const RULES: ScriptedRule[] = [
  { when: /stores/i, replies: [{ toolCalls: [{ name: "shop__find_stores", args: {} }] }, { text: "These are our stores." }] },
  { when: /hello/i, replies: [{ text: "Hi! How can I help?" }] },
];

/** A drawn map tile: land, a few streets, and its z/x/y, so a shot shows the grid lines up. */
export function drawnTile(route: Route): Promise<void> {
  const [z, x, y] = new URL(route.request().url()).pathname.slice(1).replace(".png", "").split("/");
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256"><rect width="256" height="256" fill="#e8eee0"/><path d="M0 64H256M0 192H256M80 0V256M200 0V256" stroke="#fff" stroke-width="6"/><path d="M0 256L256 0" stroke="#f3d9a4" stroke-width="8"/><rect x="0.5" y="0.5" width="255" height="255" fill="none" stroke="#c9d3bd"/><text x="8" y="20" font-family="sans-serif" font-size="12" fill="#7a8870">${z}/${x}/${y}</text></svg>`;
  return route.fulfill({ status: 200, contentType: "image/svg+xml", body: svg });
}

export async function stackTour(browser: Browser, shooter: Shooter, failures: string[]): Promise<void> {
  const origins: string[] = [];
  let base = "";
  const site: Server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title><h1>Shop</h1><p>Welcome.</p><script src="${base}/widget.js" data-agent="shop-agent" async></script></html>`);
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  const siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
  const dir = mkdtempSync(join(tmpdir(), "caplo-walkthrough-"));
  /** The stack on the walkthrough's store (a second start reads what the first stored). */
  const start = async () => {
    const stack = await startStack({
      dir,
      model: new SlowStoryModel(RULES),
      releases: (version) => [releaseFromVersions({ agent: "shop-agent", instructions: "Help shop customers.", origins, versions: [version], widget: { name: "Shop helper", mapTiles: TILES } })],
    });
    origins.splice(0, origins.length, siteUrl, stack.base);
    base = stack.base;
    return stack;
  };
  let stack = await start();
  const context = await browser.newContext(contextOptions(shooter.variant));
  await context.route("https://tiles.caplo.test/**", drawnTile);
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const app = chat(page);
  try {
    await step(shooter, page, "streaming", async () => {
      await page.goto(siteUrl);
      await page.getByRole("button", { name: "Open chat" }).click();
      await app.locator("#caplo-input").waitFor();
      await say(page, "hello");
      await app.getByText("Hi! How can I help?").waitFor();
      await say(page, "tell me a story");
      await app.locator(".streaming .bubble").getByText("Sentence 4", { exact: false }).waitFor();
      await shooter.snap(page, "streaming-with-stop-button", { axe: false });
      await app.getByRole("button", { name: "Stop the reply" }).click();
      await app.getByRole("button", { name: "Send" }).waitFor();
      await shooter.snap(page, "stopped-reply-kept");
    }, failures);

    await step(shooter, page, "long-collapsed", async () => {
      // A reply the visitor watched being written stays open; a long one that arrived whole starts collapsed.
      await say(page, "tell me the whole story");
      await app.getByText("Sentence 60 of a long story.").waitFor({ timeout: 30_000 });
      await scrollChat(page, "end");
      await shooter.snap(page, "long-streamed-reply-stays-open");
    }, failures);

    await step(shooter, page, "map-tiles", async () => {
      await say(page, "show me your stores");
      const map = app.getByRole("img", { name: /Map of 5 places/ });
      await map.waitFor();
      await map.locator("img").first().evaluate((img) => (img as HTMLImageElement).decode());
      await scrollChat(page, { selector: "figure.map" });
      await shooter.snap(page, "map-with-tiles");
    }, failures);

    await step(shooter, page, "day-separators", async () => {
      // The conversation began yesterday: its first three events are moved back a day in the store while
      // the server is stopped, and a new tab (no session cache) reads the history from the restarted one.
      await page.close();
      await stack.close();
      const db = new Database(join(dir, "caplo.db"));
      db.prepare("UPDATE events SET at = at - 86400000 WHERE seq <= 3").run();
      db.close();
      stack = await start();
      const later = await context.newPage();
      later.setDefaultTimeout(20_000);
      await later.goto(siteUrl);
      await later.getByRole("button", { name: "Open chat" }).click();
      await chat(later).getByText("Yesterday", { exact: true }).waitFor().catch(async (error: unknown) => {
        await shooter.snap(later, "FAILED-no-yesterday", { axe: false });
        throw error;
      });
      await chat(later).locator(".log").evaluate((el) => el.scrollTo({ top: 0 }));
      await shooter.snap(later, "day-separators-yesterday-today");
      // In this new tab the long story is history: collapsed, with Show more.
      const more = chat(later).getByRole("button", { name: "Show more" }).first();
      await more.evaluate((el) => el.scrollIntoView({ block: "end" }));
      await shooter.snap(later, "long-reply-collapsed");
      await more.click();
      await shooter.snap(later, "long-reply-expanded");
    }, failures);
  } finally {
    await context.close();
    await stack.close();
    rmSync(dir, { recursive: true, force: true });
    await new Promise<void>((resolve) => site.close(() => resolve()));
  }
}
