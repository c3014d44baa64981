// The walkthrough's camera: each shot waits for the chat's finite animations to end, saves a PNG under
// tests/artifacts/walkthrough/<variant>/, and records what axe and the heading outline say of that state,
// so one index lists every state with its problems.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import type { BrowserContextOptions, FrameLocator, Page } from "playwright-core";
import { axeSerious, chatFrames, headingOutline, headingSkips } from "../a11y.ts";

export const WALK_ARTIFACTS = new URL("../../artifacts/walkthrough/", import.meta.url).pathname;

/** Desktop and phone, light and dark: the four ways every state is looked at. */
export type Variant = { name: string; scheme: "light" | "dark"; phone: boolean };
export const VARIANTS: Variant[] = [
  { name: "desktop-light", scheme: "light", phone: false },
  { name: "desktop-dark", scheme: "dark", phone: false },
  { name: "phone-light", scheme: "light", phone: true },
  { name: "phone-dark", scheme: "dark", phone: true },
];

export function contextOptions(variant: Variant): BrowserContextOptions {
  return {
    locale: "en-US",
    colorScheme: variant.scheme,
    acceptDownloads: true,
    ...(variant.phone ? { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : { viewport: { width: 1280, height: 800 } }),
  };
}

export type Shot = { file: string; state: string; axe: string[]; headings: string[]; skips: string[] };

export class Shooter {
  readonly shots: Shot[] = [];
  private count = 0;
  readonly variant: Variant;
  readonly part: string;
  constructor(variant: Variant, part: string) {
    this.variant = variant;
    this.part = part;
    const dir = `${WALK_ARTIFACTS}${variant.name}`;
    mkdirSync(dir, { recursive: true });
    // Only this run's shots of this part: a renamed or removed step leaves no stale picture behind.
    for (const name of readdirSync(dir)) if (name.startsWith(`${part}-`)) rmSync(`${dir}/${name}`);
  }

  /** Screenshot the page as it is now, with axe and the heading outline of the chat (when it is there). */
  async snap(page: Page, state: string, options: { axe?: boolean } = {}): Promise<void> {
    await settled(page);
    const file = `${this.variant.name}/${this.part}-${String(++this.count).padStart(2, "0")}-${state}.png`;
    await page.screenshot({ path: `${WALK_ARTIFACTS}${file}` });
    const axe = options.axe === false ? [] : await axeSerious(page);
    const headings = await headingOutline(page);
    this.shots.push({ file, state, axe, headings, skips: headingSkips(headings) });
    const problems = [...axe, ...headingSkips(headings)];
    console.log(`  ${file}${problems.length ? `  PROBLEMS: ${problems.join("; ")}` : ""}`);
  }
}

/** Waits for the page's and the chat's finite animations (a panel fading in) so a shot shows where they end. */
export async function settled(page: Page): Promise<void> {
  const finished = () =>
    Promise.all(document.getAnimations().filter((a) => a.effect?.getComputedTiming().iterations !== Infinity).map((a) => a.finished.catch(() => undefined))).then(() => undefined);
  await page.evaluate(finished);
  for (const frame of chatFrames(page)) await frame.evaluate(finished).catch(() => undefined);
}

export const chat = (page: Page): FrameLocator => page.frameLocator("iframe[title='Chat']");

export async function say(page: Page, text: string): Promise<void> {
  await chat(page).locator("#caplo-input").fill(text);
  await chat(page).locator("#caplo-input").press("Enter");
}

/** Scrolls the chat's log so this element is at its top (what the shot is about), or to the end. */
export async function scrollChat(page: Page, to: "end" | { selector: string; last?: boolean }): Promise<void> {
  const log = chat(page).locator(".log");
  if (to === "end") return void (await log.evaluate((el) => el.scrollTo({ top: el.scrollHeight })));
  const target = to.last === false ? chat(page).locator(to.selector).first() : chat(page).locator(to.selector).last();
  await target.evaluate((el) => el.scrollIntoView({ block: "start" }));
}

/** The index of every shot with its problems: tests/artifacts/walkthrough/index.md. */
export function writeIndex(shots: Shot[]): string {
  const lines = ["# Widget walkthrough", "", "| shot | axe (serious, critical) | heading outline |", "|---|---|---|"];
  for (const shot of shots) lines.push(`| ${shot.file} | ${shot.axe.join("; ") || "none"} | ${shot.headings.join(" › ")}${shot.skips.length ? ` **SKIPS: ${shot.skips.join("; ")}**` : ""} |`);
  const file = `${WALK_ARTIFACTS}index.md`;
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}
