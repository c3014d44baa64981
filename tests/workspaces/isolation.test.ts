// Two workspaces on one server, attacked from each side: a team member of `acme` cannot list, read, take
// over, write in, hand back or follow up the default workspace's conversations (404, exactly as for an id
// that does not exist), nor confirm another workspace's eval runs, releases or writes; a widget token of one
// workspace's agent does not open the other's conversation, and a page allowed for one workspace's agent does
// not open the other's of the same name;
// a tool call gets only its own workspace's secret, only the names its version declares; a release cannot
// pin another workspace's tool version; the audit is per workspace and readable through the team API.
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PackageVersion } from "@caplo/shared";
import { foreignVersion } from "../../server/src/agents/servedReleases.ts";
import type { RunningServer } from "../../server/src/app/server.ts";
import type { Engine } from "../../server/src/engine/engine.ts";
import { TestClient } from "../gateway/support/client.ts";
import { releaseFromVersions } from "../../server/src/engine/release.ts";
import { teamMember } from "../../server/src/gateway/teamMembers.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import type { CallContextInput, ToolRunner } from "../../server/src/runner/api.ts";
import { readSecretKeys, WorkspaceSecrets } from "../../server/src/secrets/index.ts";
import { SqliteStore } from "../../server/src/store/sqliteStore.ts";
import { ShopBackend, shopRunner, shopVersion } from "../engine/support/shopTools.ts";
import { WEB } from "../engine/support/harness.ts";
import { startTestServer } from "../support/testServer.ts";

const ANA = "ct_ana-default-0123456789abcdefghijklmnopqrstuv";
const MALLORY = "ct_mallory-acme-0123456789abcdefghijklmnopqrstu";

/** The shop's version declaring one secret. */
function shopWithSecret(): PackageVersion {
  const version = shopVersion();
  return { ...version, manifest: { ...version.manifest, secrets: ["SHOP_API_KEY"] } };
}

describe("two workspaces on one server", () => {
  const dir = mkdtempSync(join(tmpdir(), "caplo-workspaces-"));
  const store = new SqliteStore(join(dir, "caplo.db"));
  const contexts: CallContextInput[] = [];
  let server: RunningServer | undefined;
  let engine: Engine;
  let team: (token: string, method: string, path: string, body?: unknown) => Promise<Response>;
  let ours: string;
  let theirs: string;
  let base: string;
  let releaseIds: { default: string; acme: string };
  const key = randomBytes(32).toString("base64");

  beforeAll(async () => {
    await store.migrate();
    const inner = shopRunner(new ShopBackend()).runner;
    // The runner as the engine calls it, with each call's context recorded.
    const runner: ToolRunner = {
      load: (version) => inner.load(version),
      call: (request) => (contexts.push(request.context), inner.call(request)),
      checkStatus: (request) => (contexts.push(request.context), inner.checkStatus(request)),
      close: () => inner.close(),
    };
    const version = shopWithSecret();
    const releases = [
      releaseFromVersions({ agent: "shop-agent", instructions: "Default shop.", origins: ["https://default.example"], versions: [version] }),
      releaseFromVersions({ agent: "shop-agent", workspaceId: "acme", instructions: "Acme shop.", origins: ["https://acme.example"], versions: [version] }),
    ];
    // The secrets key and the default workspace's shortcuts as an operator sets them; acme's secrets stored
    // before the start, as `caplo secret set` stores them.
    const env = { CAPLO_SECRETS_KEY: key, CAPLO_SECRET_SHOP_API_KEY: "env-default", CAPLO_SECRET_OTHER: "never-declared" };
    const keys = readSecretKeys({ CAPLO_SECRETS_KEY: key });
    if (!keys.ok) throw new Error(keys.error.message);
    const secrets = new WorkspaceSecrets({ store, keyring: keys.keyring, env });
    await store.ensureWorkspace("acme", 1);
    await secrets.set("acme", "SHOP_API_KEY", "acme-secret-value", "cli:test");
    await secrets.set("acme", "OTHER", "acme-undeclared", "cli:test");
    const model = new ScriptedModel([{ when: /order (SO-\d{4})/, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: "Found it." }] }], { fallback: "Hello." });
    releaseIds = { default: releases[0]!.id, acme: releases[1]!.id };
    const widgetDir = join(dir, "widget");
    mkdirSync(widgetDir, { recursive: true });
    writeFileSync(join(widgetDir, "app.html"), "<!doctype html><title>app</title>");
    // The server as caplo serve composes it (engine, evaluations, gateway, the workspaces' secrets), on this
    // store, with the team's members this gateway's own and the engine's timers off.
    server = await startTestServer(
      dir,
      {
        agents: ["shop-agent", "acme/shop-agent"],
        nodeId: "node-ws",
        widgetDir,
        env,
        runner,
        given: { store, releases, model, engine: { scheduler: false }, gateway: { teamMembers: [teamMember("ana", ANA), teamMember("mallory", MALLORY, "acme")] } },
      },
      false,
    );
    engine = server.engine;
    const port = new URL(server.url).port;
    base = `http://127.0.0.1:${port}`;
    team = (token, method, path, body) =>
      fetch(`http://127.0.0.1:${port}/v1/team${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { "content-type": "application/json" }) },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    ours = (await engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "visitor-d", resumeHash: "a".repeat(64) })).id;
    theirs = (await engine.openConversation({ agent: "acme/shop-agent", channel: "web", capabilities: WEB, ownerId: "visitor-a", resumeHash: "b".repeat(64) })).id;
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a conversation joins its agent's workspace; each call's context carries it and only that workspace's declared secrets", async () => {
    expect((await store.getConversation(ours))?.workspaceId).toBe("default");
    expect((await store.getConversation(theirs))?.workspaceId).toBe("acme");
    contexts.length = 0;
    await engine.handle(theirs, "visitor-a", { type: "message", text: "order SO-1001" });
    await engine.handle(ours, "visitor-d", { type: "message", text: "order SO-1001" });
    await engine.idle();
    expect(contexts.map((context) => ({ workspaceId: context.workspaceId, conversationId: context.conversationId, secrets: context.secrets }))).toEqual([
      { workspaceId: "acme", conversationId: theirs, secrets: { SHOP_API_KEY: "acme-secret-value" } },
      // The default workspace has no stored value: CAPLO_SECRET_SHOP_API_KEY is its shortcut (never acme's).
      { workspaceId: "default", conversationId: ours, secrets: { SHOP_API_KEY: "env-default" } },
    ]);
    const transcript = JSON.stringify([...(await store.listTranscript(theirs)), ...(await store.listEvents(theirs, 0))]);
    expect(transcript).not.toContain("acme-secret-value"); // never reaches the model or the customer
  });

  it("a team member of acme gets 404 for everything of the default workspace's conversation, exactly as for an id that does not exist", async () => {
    const missing = "c_does_not_exist_000";
    const before = { conversation: await store.getConversation(ours), events: await store.listEvents(ours, 0) };
    for (const id of [ours, missing]) {
      for (const [method, path, body] of [
        ["GET", `/conversations/${id}/events`, undefined],
        ["GET", `/conversations/${id}/handoff-notices`, undefined],
        ["POST", `/conversations/${id}/takeover`, {}],
        ["POST", `/conversations/${id}/messages`, { text: "Mallory here" }],
        ["POST", `/conversations/${id}/release`, {}],
        // The team console's views of a conversation, through the same guard.
        ["GET", `/conversations/${id}/record`, undefined],
        ["POST", `/conversations/${id}/notes`, { text: "Mallory's note" }],
      ] as const) {
        const answer = await team(MALLORY, method, path, body);
        expect(answer.status, `${method} ${path}`).toBe(404);
        expect(await answer.json()).toEqual({ error: { code: "conversation_not_found", path: "id", message: "no such conversation" } });
      }
    }
    expect({ conversation: await store.getConversation(ours), events: await store.listEvents(ours, 0) }).toEqual(before);
    const inbox = (await (await team(MALLORY, "GET", "/inbox")).json()) as { conversations: { id: string }[] };
    expect(JSON.stringify(inbox)).not.toContain(ours);
    expect(((await (await team(MALLORY, "GET", "/releases")).json()) as { releases: unknown[] }).releases).toHaveLength(1);
    const listed = (await (await team(MALLORY, "GET", "/conversations")).json()) as { conversations: { id: string; workspace: string }[] };
    expect(listed.conversations.map((c) => [c.id, c.workspace])).toEqual([[theirs, "acme"]]);
    expect(await (await team(MALLORY, "GET", "/me")).json()).toEqual({ member: "mallory", workspace: "acme" });
    // Her own workspace's conversation she can take over; ana (default) cannot see it.
    expect((await team(MALLORY, "POST", `/conversations/${theirs}/takeover`, {})).status).toBe(200);
    expect((await team(ANA, "GET", `/conversations/${theirs}/events`)).status).toBe(404);
    expect((await team(ANA, "POST", `/conversations/${theirs}/release`, {})).status).toBe(404);
    expect((await store.getConversation(theirs))?.handoff).toMatchObject({ state: "taken", member: "mallory" });
  });

  it("follow-ups and the audit are per workspace: a write listed in default is neither in acme's list nor in its audit", async () => {
    const write = await store.insertWrite({
      id: "w_default_followup", conversationId: ours, turnId: "t", callId: "c", toolRef: "shop/cancel_order", modelName: "shop__cancel_order",
      packageVersionId: shopVersion().id, tool: "cancel_order", args: { orderId: "SO-1" }, state: "proposed", confirmation: "required", ownerId: "visitor-d", subjectId: null, createdAt: 1,
    });
    await store.transitionWrite(write.id, { states: ["proposed"] }, { state: "unknown", followUp: true }, 2);
    const theirsList = (await (await team(MALLORY, "GET", "/follow-ups")).json()) as { writes: { proposalId: string }[] };
    expect(theirsList.writes.map((w) => w.proposalId)).not.toContain(write.id);
    const oursList = (await (await team(ANA, "GET", "/follow-ups")).json()) as { writes: { proposalId: string }[] };
    expect(oursList.writes.map((w) => w.proposalId)).toContain(write.id);
    // Mallory cannot record the default workspace's follow-up outcome: 404, and the write stays as it was.
    const resolve = await team(MALLORY, "POST", `/follow-ups/${write.id}/outcome`, { outcome: "applied", note: "I checked" });
    expect(resolve.status).toBe(404);
    expect((await store.getWrite(write.id))?.state).toBe("unknown");
    const audit = (await (await team(MALLORY, "GET", "/audit")).json()) as { events: { action: string; target: string; actor: string; at: string }[] };
    expect(audit.events.map((e) => [e.action, e.target, e.actor])).toEqual([["secret.set", "SHOP_API_KEY", "cli:test"], ["secret.set", "OTHER", "cli:test"]]);
    expect(JSON.stringify(audit)).not.toContain("acme-secret-value");
    // Ana records it: the outcome is in the default workspace's audit, with who, and not in acme's.
    expect((await team(ANA, "POST", `/follow-ups/${write.id}/outcome`, { outcome: "not_applied", note: "Checked the shop: not cancelled" })).status).toBe(200);
    const oursAudit = (await (await team(ANA, "GET", "/audit")).json()) as { events: { action: string; target: string; actor: string; detail: { state: string } }[] };
    expect(oursAudit.events.map((e) => [e.action, e.target, e.actor, e.detail.state])).toEqual([["follow_up.resolved", write.id, "ana", "not_applied"]]);
    expect(((await (await team(MALLORY, "GET", "/audit")).json()) as { events: unknown[] }).events).toHaveLength(2);
    expect((await team(ANA, "GET", "/audit?after=-1")).status).toBe(400);
  });

  it("a widget token of one workspace's agent opens nothing for the other workspace's agent of the same name", async () => {
    expect(await engine.resumeConversation("b".repeat(64), "shop-agent", WEB)).toBeUndefined();
    expect(await engine.resumeConversation("a".repeat(64), "acme/shop-agent", WEB)).toBeUndefined();
    expect((await engine.resumeConversation("b".repeat(64), "acme/shop-agent", WEB))?.id).toBe(theirs);
  });

  it("a page allowed for one workspace's agent cannot open the other workspace's agent of the same name", async () => {
    const socket = `${base.replace("http", "ws")}/v1/ws`;
    // A page of the default workspace's site asking for acme's agent is refused before the upgrade.
    await expect(TestClient.open(`${socket}?agent=acme/shop-agent`, "https://default.example")).rejects.toThrow("HTTP 403");
    await expect(TestClient.open(`${socket}?agent=shop-agent`, "https://acme.example")).rejects.toThrow("HTTP 403");
    // Let in without naming the agent (its own agent is on that site), its hello for acme's is refused and closed.
    const page = await TestClient.open(socket, "https://default.example");
    page.send({ t: "hello", v: 1, agent: "acme/shop-agent", capabilities: {} });
    expect(await page.waitFor((frame) => frame.t === "error" && frame.code === "origin_not_allowed")).toBeDefined();
    await page.close();
    const own = await TestClient.open(socket, "https://default.example");
    expect((await own.hello("shop-agent")).conversationId).toBeTruthy();
    await own.close();
    // The widget app page of each agent may be framed only by that agent's own sites.
    const frameAncestors = async (agent: string) => /frame-ancestors ([^;]+)$/.exec((await fetch(`${base}/widget/app.html?agent=${encodeURIComponent(agent)}`)).headers.get("content-security-policy") ?? "")?.[1];
    expect(await frameAncestors("acme/shop-agent")).toBe("https://acme.example");
    expect(await frameAncestors("shop-agent")).toBe("https://default.example");
  });

  it("evaluations: another workspace's run and release are answered exactly as ones that do not exist", async () => {
    const cases = `apiVersion: v1\nkind: EvalCases\nagent: shop-agent\ncases:\n  - name: greets\n    turns:\n      - customer: hi\n        expect:\n          - reply: { contains: Hello }\n`;
    const started = await team(ANA, "POST", "/evals/runs", { release: releaseIds.default, cases });
    expect(started.status).toBe(202);
    const runId = ((await started.json()) as { run: { id: string } }).run.id;
    const missing = await team(MALLORY, "GET", "/evals/runs/run_does_not_exist");
    const foreign = await team(MALLORY, "GET", `/evals/runs/${runId}`);
    expect([missing.status, foreign.status]).toEqual([404, 404]);
    expect(await foreign.json()).toEqual(await missing.json());
    expect(((await (await team(MALLORY, "GET", "/evals/runs")).json()) as { runs: unknown[] }).runs).toEqual([]);
    expect((await team(ANA, "GET", `/evals/runs/${runId}`)).status).toBe(200);
    // Starting a run of the default workspace's release (by its id) from acme: as for a release that does not exist.
    const foreignRelease = await team(MALLORY, "POST", "/evals/runs", { release: releaseIds.default, cases });
    const noRelease = await team(MALLORY, "POST", "/evals/runs", { release: "shop-agent@sha256:" + "0".repeat(64), cases });
    expect([foreignRelease.status, noRelease.status]).toEqual([404, 404]);
    expect(await foreignRelease.json()).toEqual(await noRelease.json());
    // A follow-up outcome for another workspace's write: the same 404 body as for a write that does not exist.
    const [foreignWrite, noWrite] = [await team(MALLORY, "POST", "/follow-ups/w_default_followup/outcome", { outcome: "applied", note: "x" }), await team(MALLORY, "POST", "/follow-ups/w_nothing/outcome", { outcome: "applied", note: "x" })];
    expect([foreignWrite.status, noWrite.status]).toEqual([404, 404]);
    expect(await foreignWrite.json()).toEqual(await noWrite.json());
  });

  it("a release cannot pin another workspace's tool version: only copies kept in its own workspace's folder run", () => {
    const releasesDir = join(dir, "releases");
    mkdirSync(releasesDir, { recursive: true });
    const pinned = (versionDir: string, workspaceId?: string) =>
      releaseFromVersions({ agent: "shop-agent", ...(workspaceId && { workspaceId }), instructions: "x", versions: [{ ...shopVersion(), dir: versionDir }] });
    const acmeCopy = join(releasesDir, "@acme", "versions", "shop", "abc");
    const globexCopy = join(releasesDir, "@globex", "versions", "shop", "abc");
    expect(foreignVersion(pinned(acmeCopy, "acme"), releasesDir, "acme")).toBeUndefined();
    expect(foreignVersion(pinned(globexCopy, "acme"), releasesDir, "acme")?.name).toBe("shop");
    expect(foreignVersion(pinned(join(releasesDir, "versions", "shop", "abc"), "acme"), releasesDir, "acme")?.name).toBe("shop"); // default's copy
    expect(foreignVersion(pinned(join(releasesDir, "@acme", "..", "@globex", "versions", "x"), "acme"), releasesDir, "acme")?.name).toBe("shop");
    expect(foreignVersion(pinned(acmeCopy), releasesDir, "default")?.name).toBe("shop");
    expect(foreignVersion(pinned(join(releasesDir, "versions", "shop", "abc")), releasesDir, "default")).toBeUndefined();
  });
});
