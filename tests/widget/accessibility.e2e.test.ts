// Issue #17 section 4 (WCAG 2.1 AA), one test per item, in Chromium against the REAL gateway, engine and
// store (tests/gateway/support's stack, the test shop's tools): focus rings at 3:1, the unread count in the
// launcher's name, no nested live regions, headings in order, masked values read as "ending in 4242",
// repeated buttons with distinct names, dir="auto", a keyboard-scrollable log, the Verified badge and any
// data-color at 4.5:1, dark mode from the system and from data-theme, and axe with no serious or critical
// violation in each state. (Focus moving to the outcome after Confirm: tests/widget/visitor.e2e.test.ts.)
import type { Browser, FrameLocator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { ScriptedRule } from "../../server/src/model/scripted.ts";
import { contrast, parseHex } from "../../widget/src/app/color.ts";
import type { Stack } from "../gateway/support/stack.ts";
import { axeSerious, headingOutline, headingSkips } from "./a11y.ts";
import { buildWidget, launchChromium } from "./browser.ts";
import { identityToken, startVisitorStack, widgetTag, type VisitorStack } from "./visitorStack.ts";
import { app, identify, say, Visitors } from "./visitors.ts";
import { drawnTile, TILES } from "./walkthrough/stackTour.ts";

const RULES: ScriptedRule[] = [
  { when: /order (SO-\d{4})/i, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: "Here it is." }] },
  { when: /stores/i, replies: [{ toolCalls: [{ name: "shop__find_stores", args: {} }] }, { text: "These are our stores." }] },
  { when: /arabic/i, replies: [{ text: "مرحبا، كيف يمكنني مساعدتك؟" }] },
  { when: /long/i, replies: [{ text: Array.from({ length: 40 }, (_, i) => `Line ${i + 1} of a long answer.`).join("\n\n") }] },
];

let browser: Browser;
let visitorStack: VisitorStack;
let stack: Stack;
let visitors: Visitors;

beforeAll(async () => {
  await buildWidget();
  visitorStack = await startVisitorStack({
    rules: RULES,
    widget: { name: "Shop helper", starters: ["Where is my order SO-1001?"], mapTiles: TILES },
    // ?color= and ?theme= become the script tag's data-color and data-theme.
    page: (url, started) => {
      const attributes = ["color", "theme"].map((name) => (url.searchParams.get(name) ? ` data-${name}="${url.searchParams.get(name)!.replace(/[^#0-9a-z]/gi, "")}"` : "")).join("");
      return `<!doctype html><html lang="en"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title><h1>Shop</h1><p>Welcome.</p>${widgetTag(started.base, attributes)}</html>`;
    },
  });
  stack = visitorStack.stack;
  browser = await launchChromium();
  visitors = new Visitors(browser, visitorStack.siteUrl, { prepare: (context) => context.route("https://tiles.caplo.test/**", drawnTile) });
}, 120_000);
afterEach(() => visitors?.closeAll());

afterAll(async () => {
  await browser?.close();
  await visitorStack?.close();
});

/** Moves the focus with the Tab key (as a keyboard user does, so :focus-visible applies) until it is on `target`. */
async function tabTo(page: Page, target: ReturnType<FrameLocator["locator"]>): Promise<void> {
  for (let i = 0; i < 40; i++) {
    if (await target.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press("Tab");
  }
  throw new Error("Tab never reached the control");
}

/** Colours as the browser computed them ("rgb(r, g, b)"), compared by WCAG contrast. */
const rgb = (css: string): [number, number, number] => {
  const m = /rgba?\((\d+), (\d+), (\d+)/.exec(css);
  if (!m) throw new Error(`not an rgb colour: ${css}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
};
const ratio = (a: string, b: string) => contrast(rgb(a), rgb(b));

/** The element's focus ring and the background it is drawn on (the nearest opaque one around it). */
const ringOf = (el: Element) => {
  const style = getComputedStyle(el);
  let around: Element | null = el.parentElement;
  let background = "rgb(255, 255, 255)";
  while (around) {
    const bg = getComputedStyle(around).backgroundColor;
    if (!/rgba\(\d+, \d+, \d+, 0\)|transparent/.test(bg)) {
      background = bg;
      break;
    }
    around = around.parentElement;
  }
  return { visible: el.matches(":focus-visible"), style: style.outlineStyle, width: parseFloat(style.outlineWidth), color: style.outlineColor, background };
};

describe("WCAG 2.1 AA, item by item (#17 section 4)", () => {
  test("focus is visible at 3:1 or more on any accent and theme: the header's close and new-conversation buttons, a reply's thumbs, the composer, and the launcher", async () => {
    for (const query of ["", "?color=%23ffff00", "?theme=dark"]) {
      const page = await visitors.open(query);
      await say(page, "hello");
      await app(page).getByText("I can help with orders.").waitFor();
      await app(page).locator("#caplo-input").focus();
      for (const target of [app(page).getByRole("button", { name: "Close chat" }), app(page).getByRole("button", { name: "Helpful answer" }).first(), app(page).getByRole("button", { name: "Start a new conversation" }), app(page).locator("#caplo-input")]) {
        await tabTo(page, target);
        const ring = await target.evaluate(ringOf);
        expect(ring.visible, `${query} ${await target.getAttribute("aria-label")}`).toBe(true);
        expect(ring.style).not.toBe("none");
        expect(ring.width).toBeGreaterThanOrEqual(2);
        expect(ratio(ring.color, ring.background), `${query}: ${ring.color} on ${ring.background}`).toBeGreaterThanOrEqual(3);
      }
      // The launcher (focused again by Escape): a near-black ring outside a white one, readable on any page behind it.
      await app(page).locator("#caplo-input").press("Escape");
      await page.getByRole("button", { name: "Open chat" }).waitFor();
      const launcher = await page.getByRole("button", { name: "Open chat" }).evaluate((el) => ({ visible: el.matches(":focus-visible"), color: getComputedStyle(el).outlineColor, shadow: getComputedStyle(el).boxShadow }));
      expect(launcher.visible).toBe(true);
      expect(ratio(launcher.color, "rgb(255, 255, 255)")).toBeGreaterThanOrEqual(3);
      expect(launcher.shadow).toContain("rgb(255, 255, 255)");
      await page.context().close();
    }
  }, 90_000);

  test("the unread count is in the launcher's name", async () => {
    const page = await visitors.open();
    await say(page, "hello");
    await app(page).getByText("I can help with orders.").waitFor();
    await page.getByRole("button", { name: "Close chat" }).click();
    // The team writes while the chat is closed.
    const conversationId = ((await (await fetch(`${stack.base}/v1/team/conversations`, { headers: { authorization: "Bearer team-secret-token" } })).json()) as { conversations: { id: string }[] }).conversations[0]!.id;
    const headers = { authorization: "Bearer team-secret-token", "content-type": "application/json" };
    expect((await fetch(`${stack.base}/v1/team/conversations/${conversationId}/takeover`, { method: "POST", headers, body: "{}" })).status).toBe(200);
    expect((await fetch(`${stack.base}/v1/team/conversations/${conversationId}/messages`, { method: "POST", headers, body: JSON.stringify({ text: "Ana from the shop here." }) })).status).toBe(200);
    const launcher = page.getByRole("button", { name: /^Open chat, \d unread$/ });
    await launcher.waitFor();
    expect(await axeSerious(page)).toEqual([]);
    await launcher.click();
    await page.getByRole("button", { name: "Close chat" }).waitFor();
  });

  test("live regions are not nested, and the log is one polite region", async () => {
    const page = await visitors.open();
    await say(page, "Where is my order SO-1001?");
    await app(page).getByText("Here it is.").waitFor();
    const nested = await app(page).locator("body").evaluate(() => {
      const live = [...document.querySelectorAll("[aria-live], [role=log], [role=status], [role=alert]")];
      return live.filter((el) => live.some((other) => other !== el && other.contains(el))).map((el) => el.outerHTML.slice(0, 80));
    });
    expect(nested).toEqual([]);
    expect(await app(page).getByRole("log").getAttribute("aria-live")).toBe("polite");
  });

  test("headings are in order: the agent's name (h1), the conversation (h2), each card (h3), a card's items (h4)", async () => {
    const page = await visitors.open();
    await say(page, "Where is my order SO-1001?");
    await app(page).getByText("Here it is.").waitFor();
    const outline = await headingOutline(page);
    expect(outline.slice(0, 3)).toEqual(["h1 Shop helperAI, AI assistant", "h2 Conversation", "h3 Your order"]);
    expect(headingSkips(outline)).toEqual([]);
  });

  test("a masked value is read as 'ending in 4242', never the whole number", async () => {
    const page = await visitors.open();
    await say(page, "Where is my order SO-1001?");
    const order = app(page).getByRole("region", { name: "Your order" });
    await order.waitFor();
    expect(await order.ariaSnapshot()).toContain("ending in 4242");
    expect(await order.textContent()).not.toContain("4111111111114242");
  });

  test("repeated buttons have distinct names ('Book here: Caplo Shop Maribor')", async () => {
    const page = await visitors.open();
    await say(page, "Which stores do you have?");
    await app(page).getByRole("img", { name: "Map of 5 places" }).waitFor();
    const names = await app(page).getByRole("button", { name: /^Book here/ }).evaluateAll((buttons) => buttons.map((b) => b.getAttribute("aria-label")));
    expect(names).toContain("Book here: Caplo Shop Maribor");
    expect(new Set(names).size).toBe(names.length);
    expect(names).toHaveLength(5);
  });

  test("bubbles' text and the composer are dir=auto: an Arabic reply reads right to left", async () => {
    const page = await visitors.open();
    await say(page, "Reply in Arabic please");
    const bubble = app(page).locator(".bubble.from-agent", { hasText: "مرحبا" });
    await bubble.waitFor();
    expect(await bubble.evaluate((el) => getComputedStyle(el.querySelector(".text")!).direction)).toBe("rtl");
    // The visitor's own message and the reply before it still read left to right.
    expect(await app(page).locator(".bubble.from-customer .text").first().evaluate((el) => getComputedStyle(el).direction)).toBe("ltr");
    const dirs = await app(page).locator(".bubble .text, #caplo-input").evaluateAll((els) => els.map((el) => el.getAttribute("dir")));
    expect(dirs.length).toBeGreaterThan(2);
    expect(new Set(dirs)).toEqual(new Set(["auto"]));
  });

  test("the conversation log scrolls with the keyboard", async () => {
    const page = await visitors.open();
    await say(page, "a long answer please");
    await app(page).getByText("Line 40 of a long answer.").waitFor();
    const log = app(page).getByRole("log");
    await log.evaluate((el) => el.scrollTo({ top: 0 }));
    await log.focus();
    expect(await log.evaluate((el) => el.scrollHeight > el.clientHeight + 200)).toBe(true);
    await page.keyboard.press("PageDown");
    await expect.poll(() => log.evaluate((el) => el.scrollTop)).toBeGreaterThan(100);
    await page.keyboard.press("Home");
    await expect.poll(() => log.evaluate((el) => el.scrollTop)).toBe(0);
  });

  test("the Verified badge and the text on any data-color read at 4.5:1; the launcher's icon at 3:1", async () => {
    const token = identityToken("cus-1");
    for (const color of ["", "#ffff00", "#777777", "#000000"]) {
      const page = await visitors.open(color ? `?color=${encodeURIComponent(color)}` : "");
      await identify(page, token);
      const badge = app(page).locator("header .badge.verified");
      await badge.waitFor();
      const colors = await app(page).locator("body").evaluate(() => {
        const css = (selector: string) => getComputedStyle(document.querySelector(selector)!);
        return { badge: [css("header .badge").color, css("header .badge").backgroundColor], header: [css("header h1").color, css("header.bar").backgroundColor], send: [css(".send").color, css(".send").backgroundColor] };
      });
      for (const [part, [fg, bg]] of Object.entries(colors)) expect(ratio(fg!, bg!), `${color} ${part}: ${fg} on ${bg}`).toBeGreaterThanOrEqual(4.5);
      const launcher = await page.getByRole("button", { name: "Close chat" }).evaluate((el) => [getComputedStyle(el).color, getComputedStyle(el).backgroundColor]);
      expect(ratio(launcher[0]!, launcher[1]!), `${color} launcher`).toBeGreaterThanOrEqual(3);
      if (color === "#ffff00") expect(await axeSerious(page)).toEqual([]);
      await page.context().close();
    }
  }, 90_000);

  test("dark mode follows the system, and data-theme overrides it either way", async () => {
    const background = async (query: string, scheme: "light" | "dark") => {
      const page = await visitors.open(query, { colorScheme: scheme });
      const bg = await app(page).locator(".log").evaluate((el) => getComputedStyle(el.ownerDocument.body).backgroundColor);
      if (scheme === "dark" && !query) expect(await axeSerious(page)).toEqual([]);
      await page.context().close();
      return bg;
    };
    const light = "rgb(255, 255, 255)";
    const dark = "rgb(22, 24, 29)";
    expect(await background("", "light")).toBe(light);
    expect(await background("", "dark")).toBe(dark);
    expect(await background("?theme=dark", "light")).toBe(dark);
    expect(await background("?theme=light", "dark")).toBe(light);
    expect(parseHex("#16181d")).toEqual(rgb(dark));
  });

  test("axe finds no serious or critical violation, and headings stay in order, with a result and a map on tiles", async () => {
    const page = await visitors.open();
    const check = async () => {
      expect(await axeSerious(page)).toEqual([]);
      expect(headingSkips(await headingOutline(page))).toEqual([]);
    };
    await check();
    await say(page, "Where is my order SO-1001?");
    await app(page).getByText("Here it is.").waitFor();
    await check();
    await say(page, "Which stores do you have?");
    await app(page).getByRole("img", { name: "Map of 5 places" }).locator("img").first().waitFor();
  });
});
