// Each workspace's own messaging channels, attacked through a real server (startServe, on SQLite and on
// PostgreSQL): the default workspace and `acme` each have their own Twilio account and number and their own
// Meta app and page (acme's from its file in CAPLO_WORKSPACE_CHANNELS), and each an agent named `shop`.
// Webhooks are signed as the platforms sign them: Twilio's X-Twilio-Signature by the real twilio library over
// the exact webhook URL, Meta's X-Hub-Signature-256 as HMAC-SHA256 of the raw body in Meta's wire format. A
// webhook signed with one workspace's credentials is refused (403, nothing stored) at the other's webhook; a
// customer writing to acme's number talks to acme's agent, answered from acme's account, in acme's conversations
// only; a team member of the other workspace gets 404 for it, exactly as for a conversation that does not exist.
import { createHmac, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import twilio from "twilio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAgentConfig } from "@caplo/shared";
import { createRelease } from "../../server/src/agents/release.ts";
import { FileReleaseStore, workspaceReleasesDir } from "../../server/src/agents/releaseStore.ts";
import { checkChannels } from "../../server/src/app/serveChannels.ts";
import { parseServeArgs, startServe, type RunningServer } from "../../server/src/cli/serve.ts";
import { teamTokenHash } from "../../server/src/gateway/teamMembers.ts";
import { startFakeGraph, type FakeGraph } from "../channels/fakeGraph.ts";
import { startFakeTwilio, type FakeTwilio } from "../channels/fakeTwilio.ts";
import { MESSENGER_RULES } from "../channels/platformRules.ts";
import { createTestDatabase, type TestDatabase } from "../support/testDatabase.ts";

const PUBLIC = "https://caplo.example";
const ANA = "ct_ana-default-0123456789abcdefghijklmnopqrstuv";
const MALLORY = "ct_mallory-acme-0123456789abcdefghijklmnopqrstu";
const NUMBERS = { default: "whatsapp:+14155550100", acme: "whatsapp:+14155550199" };
const PAGES = { default: "105000000000001", acme: "205000000000002" };
const CUSTOMER = "whatsapp:+38640111222";
const META_SECRETS = { default: "d".repeat(32), acme: "a".repeat(32) };
const VERIFY = { default: "default-verify-token-2026", acme: "acme-verify-token-2026" };

const dir = mkdtempSync(join(tmpdir(), "caplo-ws-channels-"));
let database: TestDatabase | undefined;
beforeAll(async () => {
  database = await createTestDatabase("caplo_ws_channels");
  // The same agent name in both workspaces, each greeting as its own shop.
  for (const [workspaceId, shop] of [["default", "Default Shop"], ["acme", "Acme"]] as const) {
    const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name: "shop", instructions: "Be brief.", greeting: `Welcome to ${shop}.`, origins: [`https://${workspaceId}.example`], channels: { web: {}, whatsapp: {}, messenger: {} } });
    if (!config.ok) throw new Error(JSON.stringify(config.issues));
    const release = createRelease(config.agent, [], new Date());
    if (!release.ok) throw new Error(JSON.stringify(release.issues));
    await new FileReleaseStore(workspaceReleasesDir(join(dir, "releases"), workspaceId)).put(release.release);
  }
}, 60_000);
afterAll(async () => {
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** A Twilio inbound message webhook (form fields as Twilio posts them), signed by the real twilio library over `signedUrl`. */
function twilioWebhook(fields: { to: string; text: string; accountSid: string }, authToken: string, signedUrl: string): { body: string; headers: Record<string, string> } {
  const sid = `SM${randomBytes(16).toString("hex")}`;
  const params = { SmsMessageSid: sid, NumMedia: "0", ProfileName: "Ana", MessageType: "text", WaId: "38640111222", Body: fields.text, To: fields.to, MessageSid: sid, AccountSid: fields.accountSid, From: CUSTOMER, ApiVersion: "2010-04-01" };
  return { body: new URLSearchParams(params).toString(), headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": twilio.getExpectedTwilioSignature(authToken, signedUrl, params) } };
}

/** A Messenger message webhook in Meta's wire format, signed with `appSecret` (X-Hub-Signature-256). */
function metaWebhook(page: string, sender: string, text: string, appSecret: string): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({ object: "page", entry: [{ id: page, time: Date.now(), messaging: [{ sender: { id: sender }, recipient: { id: page }, timestamp: Date.now(), message: { mid: `m_${randomBytes(12).toString("hex")}`, text } }] }] });
  return { body, headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${createHmac("sha256", appSecret).update(body).digest("hex")}` } };
}

async function waitFor<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string): Promise<T> {
  for (let i = 0; i < 1500; i++) {
    const value = await probe();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.each(["sqlite", "postgres"] as const)("two workspaces, each with its own channels (%s)", (kind) => {
  let server: RunningServer;
  const twilios = {} as Record<"default" | "acme", FakeTwilio>;
  const graphs = {} as Record<"default" | "acme", FakeGraph>;
  const logs: string[] = [];
  let env: Record<string, string>;
  const db = () => (kind === "sqlite" ? join(dir, `${kind}-caplo.db`) : database!.url);

  beforeAll(async () => {
    for (const workspace of ["default", "acme"] as const) {
      twilios[workspace] = await startFakeTwilio();
      graphs[workspace] = await startFakeGraph(MESSENGER_RULES);
    }
    const pageToken = graphs.acme.addPage(PAGES.acme);
    const acmeFile = join(dir, `acme-${kind}.env`);
    writeFileSync(
      acmeFile,
      [
        "# acme's own Twilio account, number, Meta app and page",
        `CAPLO_TWILIO_ACCOUNT_SID=${twilios.acme.accountSid}`,
        `CAPLO_TWILIO_AUTH_TOKEN=${twilios.acme.authToken}`,
        `CAPLO_WHATSAPP_FROM=${NUMBERS.acme}`,
        `CAPLO_TWILIO_API_BASE=${twilios.acme.url}`,
        `CAPLO_WHATSAPP_AGENTS=${NUMBERS.acme}=shop`,
        `CAPLO_MESSENGER_PAGE_TOKEN="${pageToken}"`,
        `CAPLO_META_APP_SECRET=${META_SECRETS.acme}`,
        `CAPLO_META_VERIFY_TOKEN=${VERIFY.acme}`,
        `CAPLO_GRAPH_API_BASE=${graphs.acme.url}`,
        "",
      ].join("\n"),
    );
    env = {
      CAPLO_PUBLIC_URL: PUBLIC,
      CAPLO_TWILIO_ACCOUNT_SID: twilios.default.accountSid,
      CAPLO_TWILIO_AUTH_TOKEN: twilios.default.authToken,
      CAPLO_WHATSAPP_FROM: NUMBERS.default,
      CAPLO_TWILIO_API_BASE: twilios.default.url,
      CAPLO_WHATSAPP_AGENTS: `${NUMBERS.default}=shop`,
      CAPLO_MESSENGER_PAGE_TOKEN: graphs.default.accessToken,
      CAPLO_META_APP_SECRET: META_SECRETS.default,
      CAPLO_META_VERIFY_TOKEN: VERIFY.default,
      CAPLO_GRAPH_API_BASE: graphs.default.url,
      CAPLO_WORKSPACE_CHANNELS: `acme=${acmeFile}`,
      CAPLO_CHANNELS_DB: join(dir, `${kind}-channels.db`),
      CAPLO_TEAM_MEMBERS: `ana=${teamTokenHash(ANA)},acme/mallory=${teamTokenHash(MALLORY)}`,
    };
    const parsed = parseServeArgs(["--port", "0", "--host", "127.0.0.1", "--agent", "shop", "--agent", "acme/shop", "--db", db(), "--releases", join(dir, "releases")], env);
    if (!parsed.ok) throw new Error(parsed.error.message);
    const started = await startServe(parsed.options, (line) => void logs.push(line));
    if (!started.ok) throw new Error(`${started.error.code}: ${started.error.message}`);
    server = started.server;
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    for (const fake of [...Object.values(twilios), ...Object.values(graphs)]) await fake.close();
  });

  const post = (path: string, request: { body: string; headers: Record<string, string> }) => fetch(`${server.url}${path}`, { method: "POST", headers: request.headers, body: request.body });
  const team = (token: string, path: string, method = "GET", body?: unknown) =>
    fetch(`${server.url}/v1/team${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { "content-type": "application/json" }) }, ...(body !== undefined && { body: JSON.stringify(body) }) });
  const conversations = async (token: string) => ((await (await team(token, "/conversations")).json()) as { conversations: Array<{ id: string; workspace: string; agent: string; channel: string }> }).conversations;

  it("each workspace's webhooks are mounted under its own path, and the server says where", () => {
    expect(logs).toContain(`  whatsapp webhook: ${PUBLIC}/webhooks/whatsapp`);
    expect(logs).toContain(`  whatsapp webhook: ${PUBLIC}/webhooks/@acme/whatsapp`);
    expect(logs).toContain(`  messenger webhook: ${PUBLIC}/webhooks/@acme/messenger`);
  });

  it("a WhatsApp webhook signed with acme's token is refused at the default workspace's webhook, and the default's at acme's; nothing is stored", async () => {
    const acmeUrl = `${PUBLIC}/webhooks/@acme/whatsapp`;
    const defaultUrl = `${PUBLIC}/webhooks/whatsapp`;
    const before = { ana: await conversations(ANA), mallory: await conversations(MALLORY) };
    const attempts = [
      // acme's genuine request (its token, its URL) replayed at the default workspace's webhook.
      { path: "/webhooks/whatsapp", request: twilioWebhook({ to: NUMBERS.default, text: "hi", accountSid: twilios.acme.accountSid }, twilios.acme.authToken, acmeUrl) },
      // signed with acme's token over the default workspace's URL.
      { path: "/webhooks/whatsapp", request: twilioWebhook({ to: NUMBERS.default, text: "hi", accountSid: twilios.default.accountSid }, twilios.acme.authToken, defaultUrl) },
      // and the other way round: the default workspace's token, at acme's webhook.
      { path: "/webhooks/@acme/whatsapp", request: twilioWebhook({ to: NUMBERS.acme, text: "hi", accountSid: twilios.default.accountSid }, twilios.default.authToken, defaultUrl) },
      { path: "/webhooks/@acme/whatsapp", request: twilioWebhook({ to: NUMBERS.acme, text: "hi", accountSid: twilios.acme.accountSid }, twilios.default.authToken, acmeUrl) },
    ];
    for (const { path, request } of attempts) expect((await post(path, request)).status, path).toBe(403);
    // An unknown workspace's path is no webhook at all.
    expect((await post("/webhooks/@globex/whatsapp", attempts[0]!.request)).status).toBe(404);
    expect({ ana: await conversations(ANA), mallory: await conversations(MALLORY) }).toEqual(before);
    expect([...twilios.default.sent, ...twilios.acme.sent]).toEqual([]);
  });

  it("a customer writing to acme's number talks to acme's agent, answered from acme's account, in acme's conversations only", async () => {
    const answer = await post("/webhooks/@acme/whatsapp", twilioWebhook({ to: NUMBERS.acme, text: "hello acme", accountSid: twilios.acme.accountSid }, twilios.acme.authToken, `${PUBLIC}/webhooks/@acme/whatsapp`));
    expect(answer.status).toBe(200);
    const greeting = await waitFor(() => twilios.acme.sent.find((sent) => sent.body?.includes("Welcome to Acme.")), "acme's greeting");
    expect([greeting.to, greeting.from]).toEqual([CUSTOMER, NUMBERS.acme]);
    // The same customer writes to the default workspace's number: a conversation of its own, there.
    expect((await post("/webhooks/whatsapp", twilioWebhook({ to: NUMBERS.default, text: "hello default", accountSid: twilios.default.accountSid }, twilios.default.authToken, `${PUBLIC}/webhooks/whatsapp`))).status).toBe(200);
    const own = await waitFor(() => twilios.default.sent.find((sent) => sent.body?.includes("Welcome to Default Shop.")), "the default shop's greeting");
    expect(own.from).toBe(NUMBERS.default);
    // Neither account sent the other workspace's words.
    expect(twilios.acme.sent.some((sent) => sent.body?.includes("Default Shop"))).toBe(false);
    expect(twilios.default.sent.some((sent) => sent.body?.includes("Acme"))).toBe(false);
    const acme = (await conversations(MALLORY)).filter((c) => c.channel === "whatsapp");
    const ours = (await conversations(ANA)).filter((c) => c.channel === "whatsapp");
    expect(acme.map((c) => [c.workspace, c.agent])).toEqual([["acme", "shop"]]);
    expect(ours.map((c) => [c.workspace, c.agent])).toEqual([["default", "shop"]]);
    const acmeEvents = (await (await team(MALLORY, `/conversations/${acme[0]!.id}/events`)).json()) as { events: Array<{ message: { type: string; text?: string } }> };
    expect(JSON.stringify(acmeEvents)).toContain("hello acme");
    expect(JSON.stringify(acmeEvents)).not.toContain("hello default");
  });

  it("a team member of one workspace gets 404 for the other's channel conversation, exactly as for one that does not exist", async () => {
    const [acme] = (await conversations(MALLORY)).filter((c) => c.channel === "whatsapp");
    const [ours] = (await conversations(ANA)).filter((c) => c.channel === "whatsapp");
    const missing = "c_does_not_exist_000";
    for (const [token, foreign] of [[ANA, acme!.id], [MALLORY, ours!.id]] as const) {
      for (const [method, path, body] of [
        ["GET", "/events", undefined],
        ["GET", "/events?before=1", undefined],
        ["GET", "/handoff-notices", undefined],
        ["GET", "/record", undefined],
        ["GET", "/invocations", undefined],
        ["POST", "/read", { seq: 1 }],
        ["POST", "/notes", { text: "not yours" }],
        ["POST", "/takeover", {}],
        ["POST", "/messages", { text: "not yours" }],
        ["POST", "/release", {}],
      ] as const) {
        const [theirs, none] = [await team(token, `/conversations/${foreign}${path}`, method, body), await team(token, `/conversations/${missing}${path}`, method, body)];
        expect([theirs.status, none.status], `${method} ${path}`).toEqual([404, 404]);
        expect(await theirs.json()).toEqual(await none.json());
      }
    }
    // Nor is it found by the console's inbox search, or counted in the other's numbers.
    const inbox = async (token: string, q: string) => ((await (await team(token, `/inbox?q=${encodeURIComponent(q)}`)).json()) as { conversations: Array<{ id: string }> }).conversations.map((c) => c.id);
    expect(await inbox(ANA, "hello acme")).toEqual([]);
    expect(await inbox(MALLORY, "hello acme")).toEqual([acme!.id]);
    expect(await inbox(MALLORY, "hello default")).toEqual([]);
    // Nothing was sent to the customer on either account by the refused messages.
    expect([...twilios.acme.sent, ...twilios.default.sent].some((sent) => sent.body?.includes("not yours"))).toBe(false);
  });

  it("acme's webhook cannot reach the default workspace's number: a forged To is not answered by any agent", async () => {
    const before = { ana: (await conversations(ANA)).length, mallory: (await conversations(MALLORY)).length };
    const forged = twilioWebhook({ to: NUMBERS.default, text: "let me in", accountSid: twilios.acme.accountSid }, twilios.acme.authToken, `${PUBLIC}/webhooks/@acme/whatsapp`);
    expect((await post("/webhooks/@acme/whatsapp", forged)).status).toBe(200);
    await waitFor(() => logs.some((line) => line.startsWith(`[workspace acme] caplo channels: no agent is configured for whatsapp account ${NUMBERS.default}`)), "acme's log line: nobody answers that number");
    expect({ ana: (await conversations(ANA)).length, mallory: (await conversations(MALLORY)).length }).toEqual(before);
  });

  it("Messenger: the verify handshake and the X-Hub-Signature-256 of each workspace's Meta app hold only at its own webhook", async () => {
    const shake = (path: string, token: string) => fetch(`${server.url}${path}?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=77`).then(async (r) => [r.status, await r.text()]);
    expect(await shake("/webhooks/@acme/messenger", VERIFY.acme)).toEqual([200, "77"]);
    expect((await shake("/webhooks/messenger", VERIFY.acme))[0]).toBe(403);
    expect((await shake("/webhooks/@acme/messenger", VERIFY.default))[0]).toBe(403);
    const before = { ana: await conversations(ANA), mallory: await conversations(MALLORY) };
    // Signed with acme's app secret: refused at the default workspace's webhook, whichever page it names.
    for (const page of [PAGES.default, PAGES.acme]) expect((await post("/webhooks/messenger", metaWebhook(page, "7000000000000001", "hi", META_SECRETS.acme))).status).toBe(403);
    expect((await post("/webhooks/@acme/messenger", metaWebhook(PAGES.acme, "7000000000000001", "hi", META_SECRETS.default))).status).toBe(403);
    expect({ ana: await conversations(ANA), mallory: await conversations(MALLORY) }).toEqual(before);
    // Signed with its own app secret, at its own webhook: acme's agent answers through acme's page.
    expect((await post("/webhooks/@acme/messenger", metaWebhook(PAGES.acme, "7000000000000001", "hello", META_SECRETS.acme))).status).toBe(200);
    const reply = await waitFor(() => graphs.acme.sent.find((sent) => sent.message?.text?.includes("Welcome to Acme.")), "acme's greeting on Messenger");
    expect(graphs.acme.pageOf(reply)).toBe(PAGES.acme);
    expect(graphs.default.sent).toEqual([]);
    expect((await conversations(MALLORY)).filter((c) => c.channel === "messenger").map((c) => c.workspace)).toEqual(["acme"]);
    expect((await conversations(ANA)).filter((c) => c.channel === "messenger")).toEqual([]);
  });
});

describe("a workspace's channel file is checked at start, and can only name its own agents", () => {
  const serveWith = async (fileText: string, extra: Record<string, string> = {}) => {
    const file = join(dir, `check-${randomBytes(4).toString("hex")}.env`);
    writeFileSync(file, fileText);
    const env = { CAPLO_PUBLIC_URL: PUBLIC, CAPLO_WORKSPACE_CHANNELS: `acme=${file}`, CAPLO_CHANNELS_DB: join(dir, "check-channels.db"), ...extra };
    const parsed = parseServeArgs(["--port", "0", "--host", "127.0.0.1", "--agent", "shop", "--agent", "acme/shop", "--db", join(dir, "check.db"), "--releases", join(dir, "releases")], env);
    if (!parsed.ok) throw new Error(parsed.error.message);
    const started = await startServe(parsed.options, () => undefined);
    if (started.ok) await started.server.close();
    return { started, file };
  };
  const acmeMeta = (secret: string) => `CAPLO_MESSENGER_PAGE_TOKEN=${"EAAG".padEnd(40, "x")}\nCAPLO_META_APP_SECRET=${secret}\nCAPLO_META_VERIFY_TOKEN=${VERIFY.acme}\n`;

  it("caplo serve --check-channels reads acme's release from its own folder and prints each workspace's webhook URLs", async () => {
    const file = join(dir, "check-urls.env");
    writeFileSync(file, `CAPLO_MESSENGER_PAGE_TOKEN=${"EAAG".padEnd(40, "x")}\nCAPLO_META_APP_SECRET=${META_SECRETS.acme}\nCAPLO_META_VERIFY_TOKEN=${VERIFY.acme}\n`);
    const parsed = parseServeArgs(["--check-channels", "--agent", "acme/shop", "--releases", join(dir, "releases")], { CAPLO_PUBLIC_URL: PUBLIC, CAPLO_WORKSPACE_CHANNELS: `acme=${file}` });
    if (!parsed.ok) throw new Error(parsed.error.message);
    const out: string[] = [];
    expect(await checkChannels(parsed.options, (line) => void out.push(line))).toBe(0);
    expect(out.join("\n")).toContain(`channels of workspace acme ready: messenger. Enter these webhook URLs:\n  messenger: ${PUBLIC}/webhooks/@acme/messenger`);
  });

  it("each workspace's webhooks have their own rate limit: a flood at acme's leaves the default workspace's answered", async () => {
    const file = join(dir, "flood.env");
    writeFileSync(file, `CAPLO_MESSENGER_PAGE_TOKEN=${"EAAG".padEnd(40, "x")}\nCAPLO_META_APP_SECRET=${META_SECRETS.acme}\nCAPLO_META_VERIFY_TOKEN=${VERIFY.acme}\n`);
    const env = { CAPLO_PUBLIC_URL: PUBLIC, CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "y"), CAPLO_META_APP_SECRET: META_SECRETS.default, CAPLO_META_VERIFY_TOKEN: VERIFY.default, CAPLO_WORKSPACE_CHANNELS: `acme=${file}`, CAPLO_CHANNELS_DB: join(dir, "flood-channels.db") };
    const parsed = parseServeArgs(["--port", "0", "--host", "127.0.0.1", "--agent", "shop", "--agent", "acme/shop", "--db", join(dir, "flood.db"), "--releases", join(dir, "releases")], env);
    if (!parsed.ok) throw new Error(parsed.error.message);
    const started = await startServe({ ...parsed.options, webhooksPerSecond: 1 }, () => undefined);
    if (!started.ok) throw new Error(started.error.message);
    try {
      const unsigned = (path: string) => fetch(`${started.server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).then((r) => r.status);
      const flood: number[] = [];
      for (let i = 0; i < 20; i++) flood.push(await unsigned("/webhooks/@acme/messenger"));
      expect(flood).toContain(429);
      expect(await unsigned("/webhooks/messenger")).toBe(403); // checked, not throttled by acme's flood
    } finally {
      await started.server.close();
    }
  });

  it("an agent name in acme's file is one of acme's agents: the default workspace's agent `help` is not served for acme, so the start stops", async () => {
    const { started, file } = await serveWith(`${acmeMeta(META_SECRETS.acme)}CAPLO_MESSENGER_AGENT=help\n`);
    expect(started).toMatchObject({ ok: false, error: { code: "channel_config_invalid", path: `${file}:CAPLO_MESSENGER_AGENT` } });
    if (!started.ok) expect(started.error.message).toMatch(/^workspace acme \(.+\): CAPLO_MESSENGER_AGENT names agent help, which this server does not serve/);
    // A reference to another workspace's agent is not an agent name there.
    expect((await serveWith(`${acmeMeta(META_SECRETS.acme)}CAPLO_MESSENGER_AGENT=default/shop\n`)).started).toMatchObject({ ok: false, error: { code: "channel_config_invalid" } });
  });

  it("two workspaces with the same Meta app secret stop the start (Meta signs only the body); a file setting anything but a channel variable too", async () => {
    const shared = await serveWith(acmeMeta(META_SECRETS.default), { CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "y"), CAPLO_META_APP_SECRET: META_SECRETS.default, CAPLO_META_VERIFY_TOKEN: VERIFY.default });
    expect(shared.started).toMatchObject({ ok: false, error: { code: "channel_config_invalid" } });
    if (!shared.started.ok) expect(shared.started.error.message).toMatch(/workspaces default and acme have the same Meta app secret/);
    const other = await serveWith(`${acmeMeta(META_SECRETS.acme)}CAPLO_SECRETS_KEY=${"k".repeat(44)}\n`);
    expect(other.started).toMatchObject({ ok: false, error: { code: "channel_config_invalid", path: `${other.file}:4` } });
    if (!other.started.ok) {
      expect(other.started.error.message).toMatch(/sets CAPLO_SECRETS_KEY, which is not a channel variable/);
      expect(other.started.error.message).not.toContain("k".repeat(44));
    }
    expect((await serveWith(acmeMeta(META_SECRETS.acme), { CAPLO_WORKSPACE_CHANNELS: "default=/x.env" })).started).toMatchObject({ ok: false, error: { code: "channel_config_invalid", path: "CAPLO_WORKSPACE_CHANNELS" } });
  });
});
