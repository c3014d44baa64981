// Accessibility checks shared by the widget's browser tests and its screenshot walkthrough: axe-core's
// WCAG 2.1 A/AA rules in the page and in the chat's frame (serious and critical violations as
// "rule: target" lines), and the chat's heading outline with any level that skips one.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Frame, Page } from "playwright-core";

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

type AxeResults = { violations: { id: string; impact: string; nodes: { target: string[] }[] }[] };

/** The chat's frames of the page (the app, and a page panel's frame is not the widget's to check). */
export const chatFrames = (page: Page): Frame[] => page.frames().filter((frame) => frame.url().includes("/widget/app.html"));

/** axe in the page (the launcher) and the chat's frame: serious and critical violations, as "id: target" lines. */
export async function axeSerious(page: Page): Promise<string[]> {
  const found: string[] = [];
  for (const frame of [page.mainFrame(), ...chatFrames(page)]) {
    await frame.evaluate(axeSource);
    const results = await frame.evaluate(async () => {
      const run = (window as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<AxeResults> } }).axe.run;
      return run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
    });
    for (const v of results.violations) if (v.impact === "serious" || v.impact === "critical") found.push(`${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  }
  return found;
}

/** The chat's visible headings in document order, as "h<level> text" (a hidden one, display:none, is left out). */
export async function headingOutline(page: Page): Promise<string[]> {
  const frame = chatFrames(page)[0];
  if (!frame) return [];
  return frame.evaluate(() =>
    [...document.querySelectorAll("h1, h2, h3, h4, h5, h6, [role=heading]")]
      .filter((el) => (el as HTMLElement).offsetParent !== null || getComputedStyle(el).position === "fixed")
      .map((el) => `h${el.getAttribute("aria-level") ?? el.tagName.slice(1)} ${(el.textContent ?? "").replace(/\s+/g, " ").trim()}`),
  );
}

/** The headings that break the order: the first is not h1, or one goes more than a level deeper than the one before. */
export function headingSkips(outline: string[]): string[] {
  const skips: string[] = [];
  let previous = 0;
  for (const line of outline) {
    const level = Number(line.slice(1, 2));
    if (previous === 0 ? level !== 1 : level > previous + 1) skips.push(`${line} (after h${previous || "-"})`);
    previous = level;
  }
  return skips;
}
