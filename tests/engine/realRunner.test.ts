// The engine over the real sandboxed runner (Node 24 processes, namespaces, permission model): a read
// with its layout, a confirmed write run once however often it is confirmed, and a status check.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChannelCapabilities } from "@caplo/shared";
import { Engine } from "../../server/src/engine/engine.ts";
import { releaseFromVersions, StaticReleases } from "../../server/src/engine/release.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { SqliteStore } from "../../server/src/store/sqliteStore.ts";
import { TEST_HOST, testVersion } from "../runner/testPackages.ts";

const WEB: ChannelCapabilities = { editableFields: true, forms: true, questions: true, files: false, pages: false, richText: true };
const dir = mkdtempSync(join(tmpdir(), "caplo-real-runner-"));
const version = testVersion(
  "ledger",
  [
    {
      name: "balance",
      policy: {
        effect: "read",
        timeoutSeconds: 10,
        progress: { label: "Checking your balance" },
        presentation: {
          schemaVersion: 1,
          title: "Balance",
          fields: [{ path: "/account", label: "Account", display: "plain" }],
          result: {
            layout: "detail",
            title: "Your balance",
            columns: [
              { path: "/balance", label: "Balance", display: "plain", role: "money", currency: { path: "/currency" } },
              { path: "/iban", label: "IBAN", display: "last4" },
            ],
          },
        },
      },
      inputSchema: { type: "object", properties: { account: { type: "string" } }, required: ["account"], additionalProperties: false },
    },
    { name: "audit", policy: { effect: "read", timeoutSeconds: 10 }, inputSchema: { type: "object", properties: {}, additionalProperties: false } },
    {
      name: "transfer",
      hasStatus: true,
      policy: {
        effect: "write",
        timeoutSeconds: 10,
        confirmation: "required",
        presentation: { schemaVersion: 1, title: "Transfer", fields: [{ path: "/to", label: "To", display: "plain" }, { path: "/amount", label: "Amount", display: "plain" }] },
      },
      inputSchema: {
        type: "object",
        properties: { to: { type: "string" }, amount: { type: "string" }, mode: { type: "string", enum: ["now", "pending"] } },
        required: ["to", "amount", "mode"],
        additionalProperties: false,
      },
    },
  ],
  { dir: join(import.meta.dirname, "packages", "ledger"), effectOutcomes: true },
);

let runner: CaploToolRunner;
let store: SqliteStore;
let engine: Engine;
const clock = { now: Date.parse("2026-03-01T10:00:00Z") };

beforeAll(async () => {
  runner = new CaploToolRunner({ hostModule: TEST_HOST });
  store = new SqliteStore(join(dir, "caplo.db"));
  await store.migrate();
  const model = new ScriptedModel([
    { when: "balance", replies: [{ toolCalls: [{ name: "ledger__balance", args: { account: "main" } }] }, { text: "Here it is." }] },
    { when: /send (now|pending)/, replies: [{ toolCalls: [{ name: "ledger__transfer", args: { to: "Ana", amount: "25.00", mode: "$1" } }] }] },
    { when: "audit", replies: [{ toolCalls: [{ name: "ledger__audit", args: {} }] }, { text: "{{tool}}" }] },
  ]);
  const release = releaseFromVersions({ agent: "bank", instructions: "Help.", origins: ["https://bank.example"], versions: [version] });
  engine = new Engine({ store, runner, model, releases: new StaticReleases([release]), now: () => clock.now, statusCheckBaseMs: 1000 });
  await engine.start({ scheduler: false });
}, 60_000);

afterAll(async () => {
  await engine?.stop();
  await runner?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function open() {
  return engine.openConversation({ agent: "bank", channel: "web", capabilities: WEB, ownerId: "owner" });
}
const events = async (id: string) => (await store.listEvents(id, 0)).map((event) => event.message);

describe("engine over the real runner", () => {
  it("a read runs in the sandbox with its progress label; the customer sees the projected, masked result", async () => {
    const c = await open();
    expect(await engine.handle(c.id, "owner", { type: "message", text: "my balance" })).toEqual({ ok: true });
    const shown = await events(c.id);
    expect(shown.filter((m) => m.type === "progress").map((m) => m.type === "progress" && m.label)).toEqual(["Checking your balance", "Checking your balance"]);
    const result = shown.find((m) => m.type === "result");
    expect(result?.type === "result" && result.items).toEqual([{ balance: 120.5, iban: "7892", currency: "EUR" }]);
  });

  it("two confirms of one proposal run the sandboxed write once, with the write's idempotency key", async () => {
    const c = await open();
    await engine.handle(c.id, "owner", { type: "message", text: "send now" });
    const review = (await events(c.id)).find((m) => m.type === "review");
    if (review?.type !== "review") throw new Error("no review");
    const results = await Promise.all([
      engine.handle(c.id, "owner", { type: "confirm", proposalId: review.proposalId }),
      engine.handle(c.id, "owner", { type: "confirm", proposalId: review.proposalId }),
    ]);
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    const write = await store.getWrite(review.proposalId);
    expect(write?.state).toBe("applied");
    await engine.handle(c.id, "owner", { type: "message", text: "audit" });
    const transcript = await store.listTranscript(c.id);
    const audit = JSON.parse(transcript.filter((entry) => entry.message.role === "tool").at(-1)!.message.content) as { runs: number; applied: { key: string }[] };
    expect(audit.runs).toBe(1);
    expect(audit.applied.map((entry) => entry.key)).toEqual([write!.idempotencyKey]);
  });

  it("a pending write's status check runs through the runner with the same key and records applied", async () => {
    const c = await open();
    await engine.handle(c.id, "owner", { type: "message", text: "send pending" });
    const review = (await events(c.id)).find((m) => m.type === "review");
    if (review?.type !== "review") throw new Error("no review");
    await engine.handle(c.id, "owner", { type: "confirm", proposalId: review.proposalId });
    expect(await store.getWrite(review.proposalId)).toMatchObject({ state: "pending", operationRef: "op_1" });
    clock.now += 1000;
    expect(await engine.runDueChecks()).toBe(1);
    expect((await store.getWrite(review.proposalId))?.state).toBe("applied");
    expect((await events(c.id)).filter((m) => m.type === "outcome").map((m) => m.type === "outcome" && m.state)).toEqual(["pending", "applied"]);
  });
});
