// What the console's browser tests share: signing a member in through the page, axe's serious and critical
// violations on a page, screenshots (tests/artifacts/console/), and customers on the widget protocol.
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page, Request } from "playwright-core";
import type { ServerFrame } from "@caplo/shared";
import { TestClient } from "../gateway/support/client.ts";

export const ARTIFACTS = new URL("../artifacts/console/", import.meta.url).pathname;
export const ANA = "team-secret-token";
export const BEN = "ben-secret-token";
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Signs in on the console page at `base` with a member's token and waits for the inbox. */
export async function signIn(page: Page, base: string, token: string): Promise<void> {
  await page.goto(`${base}/console`);
  await page.getByLabel("Your team token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Inbox" }).waitFor();
}

/** The page's serious and critical WCAG 2.1 A/AA violations, as "rule: targets". */
export async function axe(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const results = await page.evaluate(async () => {
    const run = (window as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe.run;
    return run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
  });
  return results.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** Screenshots numbered in the order a file takes them: `prefix-NN-name.png`. */
export function screenshots(prefix: string): (page: Page, name: string) => Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  let shot = 0;
  return async (page, name) => {
    await page.screenshot({ path: `${ARTIFACTS}${prefix}-${String(++shot).padStart(2, "0")}-${name}.png` });
  };
}

export const isEvent =
  (type: string, test: (message: Record<string, unknown>) => boolean = () => true) =>
  (frame: ServerFrame) =>
    frame.t === "event" && frame.message.type === type && test(frame.message as unknown as Record<string, unknown>);

/** A customer of `agent` on the widget protocol who says `text` and waits for the turn's event of type `until`. */
export async function openCustomer(wsUrl: string, origin: string, agent: string, text: string, until: string): Promise<{ client: TestClient; conversationId: string }> {
  const client = await TestClient.open(wsUrl, origin);
  const welcome = await client.hello(agent);
  client.send({ t: "in", ref: "first", event: { type: "message", text } });
  await client.waitFor(isEvent(until), 10_000);
  return { client, conversationId: (welcome as unknown as { conversationId: string }).conversationId };
}

/**
 * What a page was answered and what went wrong in it, for the message of a wait that timed out: the team API's
 * answers over 399, failed requests, page errors and console errors, each with its time since `watch` began.
 */
export function watch(page: Page): () => string {
  const started = Date.now();
  const seen: string[] = [];
  const at = () => `${Date.now() - started} ms`;
  page.on("response", (response) => void (response.status() >= 400 && seen.push(`${at()} ${response.status()} ${response.request().method()} ${response.url()}`)));
  page.on("requestfailed", (request) => void seen.push(`${at()} failed ${request.method()} ${request.url()}: ${request.failure()?.errorText}`));
  page.on("pageerror", (error) => void seen.push(`${at()} page error: ${String(error)}`));
  page.on("console", (message) => void (message.type() === "error" && seen.push(`${at()} console error: ${message.text()}`)));
  // Requests still waiting for their answer, with when they were sent (a stalled one is otherwise invisible).
  const pending = new Map<Request, string>();
  page.on("request", (request) => void pending.set(request, `${request.method()} ${request.url()} sent at ${at()}`));
  page.on("requestfinished", (request) => void pending.delete(request));
  page.on("requestfailed", (request) => void pending.delete(request));
  return () => `what the page saw: ${seen.length ? seen.join("; ") : "no failed request, no error"}; still unanswered at ${at()}: ${pending.size ? [...pending.values()].join("; ") : "none"}`;
}

