// The workspace's audit in the team console (#15 item 4: "readable through the team API and the console"), in
// Chromium against the real gateway, engine and SQLite store: changes made the real ways (caplo secret's
// WorkspaceSecrets, caplo member add, caplo agent publish, a follow-up outcome a member records through the
// team API) are listed in the Audit view with who and when, newest first, only the signed-in member's
// workspace's (acme's member never sees the default workspace's, and the other way round), never a value.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runPublish } from "../../server/src/cli/agent.ts";
import { run as member } from "../../server/src/cli/member.ts";
import { releaseFromVersions } from "../../server/src/engine/release.ts";
import { teamMember } from "../../server/src/gateway/teamMembers.ts";
import { readSecretKeys, WorkspaceSecrets } from "../../server/src/secrets/index.ts";
import { buildConsole } from "../console/build.ts";
import { axe, screenshots, signIn } from "../console/support.ts";
import { WEB } from "../engine/support/harness.ts";
import { shopVersion } from "../engine/support/shopTools.ts";
import { startStack, type Stack } from "../gateway/support/stack.ts";
import { launchChromium } from "../widget/browser.ts";

const ANA = "ct_ana-default-0123456789abcdefghijklmnopqrstuv";
const MALLORY = "ct_mallory-acme-0123456789abcdefghijklmnopqrstu";
const SECRET_VALUE = "acme-secret-value-never-shown";
let dir: string;
let stack: Stack;
let browser: Browser;
const snap = screenshots("workspace-audit");
const quiet = { out: () => undefined, err: () => undefined };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "caplo-audit-console-"));
  await buildConsole();
  stack = await startStack({
    dir,
    releases: (version) => [
      releaseFromVersions({ agent: "shop-agent", instructions: "Default shop.", origins: ["https://default.example"], versions: [version] }),
      releaseFromVersions({ agent: "shop-agent", workspaceId: "acme", instructions: "Acme shop.", origins: ["https://acme.example"], versions: [version] }),
    ],
    gateway: { teamMembers: [teamMember("ana", ANA), teamMember("mallory", MALLORY, "acme")] },
  });
  const db = join(dir, "caplo.db");
  // Secrets, as caplo secret sets them (a default workspace's one too, which acme must never see).
  const keys = readSecretKeys({ CAPLO_SECRETS_KEY: randomBytes(32).toString("base64") });
  if (!keys.ok) throw new Error(keys.error.message);
  const secrets = new WorkspaceSecrets({ store: stack.store, keyring: keys.keyring, env: {} });
  await secrets.set("acme", "SHOP_API_KEY", SECRET_VALUE, "cli:ops@host");
  await secrets.set("default", "DEFAULT_ONLY_KEY", "default-value", "cli:ops@host");
  // A member added with caplo member, and a release published with caplo agent publish, both for acme.
  expect(await member(["add", "nina", "--workspace", "acme", "--by", "ops:ana", "--db", db], {}, quiet)).toBe(0);
  const agentFile = join(dir, "agent.yaml");
  writeFileSync(agentFile, JSON.stringify({ apiVersion: "v1", kind: "Agent", name: "help-desk", instructions: "Help.", origins: ["https://acme.example"], channels: { web: {} } }));
  expect(await runPublish([agentFile, "--store", join(dir, "releases"), "--workspace", "acme", "--db", db, "--by", "ops:publisher"], quiet, {})).toBe(0);
  // A write of acme's conversation left for follow-up, whose outcome mallory records through the team API.
  const conversation = await stack.engine.openConversation({ agent: "acme/shop-agent", channel: "web", capabilities: WEB, ownerId: "visitor-a" });
  const write = await stack.store.insertWrite({
    id: "w_acme_followup", conversationId: conversation.id, turnId: "t", callId: "c", toolRef: "shop/cancel_order", modelName: "shop__cancel_order",
    packageVersionId: shopVersion().id, tool: "cancel_order", args: { orderId: "SO-1" }, state: "proposed", confirmation: "required", ownerId: "visitor-a", subjectId: null, createdAt: 1,
  });
  await stack.store.transitionWrite(write.id, { states: ["proposed"] }, { state: "unknown", followUp: true }, 2);
  const recorded = await fetch(`${stack.base}/v1/team/follow-ups/${write.id}/outcome`, { method: "POST", headers: { authorization: `Bearer ${MALLORY}`, "content-type": "application/json" }, body: JSON.stringify({ outcome: "applied", note: "Checked the shop: cancelled" }) });
  expect(recorded.status).toBe(200);
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The Audit view's rows as a member sees them: when, who, what, which, details. */
async function auditRows(token: string, name: string): Promise<string[][]> {
  const context = await browser.newContext({ locale: "en-US", viewport: { width: 1280, height: 820 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  try {
    await signIn(page, stack.base, token);
    await page.getByRole("link", { name: "Audit" }).click();
    await page.getByRole("heading", { name: "Audit" }).waitFor();
    await page.locator(".audit-entry").first().waitFor();
    expect(await axe(page)).toEqual([]);
    await snap(page, name);
    expect(await page.content()).not.toContain(SECRET_VALUE);
    return await page.locator(".audit-entry").evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll("td")].map((cell) => cell.textContent ?? "")));
  } finally {
    await context.close();
  }
}

describe("the workspace's audit in the console", () => {
  test("acme's member sees acme's secret, member, release and follow-up changes with who and when, newest first, and nothing of the default workspace", async () => {
    const rows = await auditRows(MALLORY, "acme");
    const what = rows.map(([, who, action, target]) => [action, target, who]);
    expect(what[0]).toEqual(["Follow-up outcome recorded", "w_acme_followup", "mallory"]);
    expect(what).toEqual(
      expect.arrayContaining([
        ["Secret set", "SHOP_API_KEY", "cli:ops@host"],
        ["Member added", "nina", "ops:ana"],
        ["Release published", "help-desk", "ops:publisher"],
      ]),
    );
    // Each row says when, as a time the browser can read.
    for (const [when] of rows) expect(when).toMatch(/\d{4}/);
    expect(rows.find(([, , action]) => action === "Follow-up outcome recorded")?.[4]).toContain("Checked the shop: cancelled");
    expect(JSON.stringify(rows)).not.toContain("DEFAULT_ONLY_KEY");
    // Newest first: the ids the API gave, in reverse.
    const api = ((await (await fetch(`${stack.base}/v1/team/audit`, { headers: { authorization: `Bearer ${MALLORY}` } })).json()) as { events: Array<{ action: string; target: string }> }).events;
    expect(what.map(([, target]) => target)).toEqual(api.map((event) => event.target).reverse());
  });

  test("the default workspace's member sees only the default workspace's changes", async () => {
    const rows = await auditRows(ANA, "default");
    expect(rows.map(([, who, action, target]) => [action, target, who])).toEqual([["Secret set", "DEFAULT_ONLY_KEY", "cli:ops@host"]]);
  });
});
