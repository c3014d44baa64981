// The visitors of a widget browser test on a visitor stack's site (./visitorStack.ts): each one a browser
// context of their own (so a conversation of their own) with the chat open, the chat's frame, and what they type.
import type { Browser, BrowserContext, BrowserContextOptions, FrameLocator, Page } from "playwright-core";

/** The chat app, in the iframe the loader puts on the page. */
export const app = (page: Page): FrameLocator => page.frameLocator("iframe[title='Chat']");

/** Types `text` in the composer and sends it with Enter, as a visitor does. */
export async function say(page: Page, text: string): Promise<void> {
  await app(page).locator("#caplo-input").fill(text);
  await app(page).locator("#caplo-input").press("Enter");
}

/** Signs the visitor in as the site does: its page calls the loader's Caplo.identify with the backend's token. */
export async function identify(page: Page, token: string): Promise<void> {
  await page.evaluate((t) => (window as unknown as { Caplo: { identify(t: string): void } }).Caplo.identify(t), token);
}

/**
 * Loads the site at `url` in `page` and opens the chat, ready to type: the message box shown and the chat
 * connected ("Connecting…" gone; until then Send is off and Enter sends nothing, as a visitor sees).
 */
export async function openChat(page: Page, url: string): Promise<Page> {
  page.setDefaultTimeout(15_000);
  await page.goto(url);
  await page.getByRole("button", { name: "Open chat" }).click();
  await app(page).locator("#caplo-input").waitFor();
  await app(page).locator(".conn.connecting").waitFor({ state: "detached" });
  return page;
}

export type VisitorSetup = {
  /** Options every visitor's context starts from (over en-US and a 1100x800 window). */
  context?: BrowserContextOptions;
  /** Sets up a new context before its page opens: routes for the hosts the page reaches. */
  prepare?: (context: BrowserContext) => Promise<unknown>;
};

/** The visitors a test file opens on the site at `siteUrl`, every one's context closed by closeAll (from afterEach). */
export class Visitors {
  private readonly opened: BrowserContext[] = [];
  private readonly browser: Browser;
  private readonly siteUrl: string;
  private readonly setup: VisitorSetup;

  constructor(browser: Browser, siteUrl: string, setup: VisitorSetup = {}) {
    this.browser = browser;
    this.siteUrl = siteUrl;
    this.setup = setup;
  }

  /** The site's page at `path` (a query such as "?theme=dark") for a new visitor, with the chat open. */
  async open(path = "", options: BrowserContextOptions = {}): Promise<Page> {
    const context = await this.browser.newContext({ locale: "en-US", viewport: { width: 1100, height: 800 }, ...this.setup.context, ...options });
    this.opened.push(context);
    await this.setup.prepare?.(context);
    return openChat(await context.newPage(), `${this.siteUrl}/${path}`);
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.opened.splice(0).map((context) => context.close()));
  }
}
