// A channel test bench: the real engine (C1's harness: SQLite, the shop's MCP server, the scripted model),
// the channel glue behind a real node:http server, and a fake Twilio or Graph on loopback; plus a
// customer who posts signed webhooks and taps the buttons the fake platform received.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChannelAdapter } from "@caplo/adapters/adapter";
import { createInstagramAdapter, INSTAGRAM_CAPABILITIES } from "@caplo/adapters/instagram/index";
import { createMessengerAdapter, MESSENGER_CAPABILITIES } from "@caplo/adapters/messenger/index";
import { APP_SECRET, VERIFY_TOKEN, metaSigned, twilioSignature } from "@caplo/adapters/testkit";
import { createWhatsAppAdapter, WHATSAPP_CAPABILITIES } from "@caplo/adapters/whatsapp/index";
import { ChannelService } from "../../server/src/channels/channelService.ts";
import { storeContentCache } from "../../server/src/channels/contentCache.ts";
import { EnginePort } from "../../server/src/channels/enginePort.ts";
import type { ChannelAgentConfig, InboxStore, Platform, TeamAlert, TeamAlerts } from "../../server/src/channels/ports.ts";
import { SqliteInboxStore } from "../../server/src/channels/inbox/index.ts";
import { mountChannels, type MountedChannels } from "../../server/src/channels/channelSetup.ts";
import { StaticReleases } from "../../server/src/engine/release.ts";
import { Gateway, type GatewayOptions } from "../../server/src/gateway/gateway.ts";
import { engineHarness, type Harness } from "../engine/support/harness.ts";
import type { ScriptedRule } from "../../server/src/model/scripted.ts";
import { startFakeGraph, type FakeGraph } from "./fakeGraph.ts";
import { startFakeTwilio, type FakeTwilio } from "./fakeTwilio.ts";
import { INSTAGRAM_RULES, MESSENGER_RULES } from "./platformRules.ts";

export const BUSINESS_NUMBER = "whatsapp:+14155238886";
/** The bench agent lists every channel (an agent answers only on the channels its agent.yaml lists). */
export const ALL_CHANNELS = { web: {}, whatsapp: {}, messenger: {}, instagram: {} };

/**
 * Messenger as `caplo serve` mounts it (mountChannels on a real gateway) for an engine harness, against a fake
 * Graph: `say` posts one customer message as a signed webhook. `close` stops all of it.
 */
export async function mountedMessenger(options: { rules: ScriptedRule[]; gateway?: Partial<GatewayOptions>; log?: (line: string) => void; alerts?: TeamAlerts }) {
  const h = await engineHarness({ rules: options.rules, channels: ALL_CHANNELS });
  const graph = await startFakeGraph(MESSENGER_RULES);
  const gw = new Gateway({ engine: h.engine, releases: new StaticReleases([h.release]), ...options.gateway });
  const file = `${h.dir}/channels.db`;
  const mounted: MountedChannels = await mountChannels({
    settings: { messenger: { accessToken: graph.accessToken, graphBaseUrl: graph.url, appSecret: "meta-app-secret-for-tests", verifyToken: "verify-token-for-tests" } },
    engine: h.engine,
    gateway: gw,
    agentFor: () => "shop-agent",
    agentConfig: agentConfigOf(h),
    file,
    ...(options.log && { log: options.log }),
    ...(options.alerts && { alerts: options.alerts }),
  });
  const { port } = await gw.listen(0, "127.0.0.1");
  const base = `http://127.0.0.1:${port}`;
  return {
    h,
    graph,
    mounted,
    base,
    file,
    say: (mid: string, text: string) => {
      const raw = Buffer.from(JSON.stringify({ object: "page", entry: [{ id: "1", time: 1, messaging: [{ sender: { id: "42" }, recipient: { id: "1" }, timestamp: 1, message: { mid, text } }] }] }));
      return fetch(`${base}/webhooks/messenger`, { method: "POST", headers: metaSigned(raw).headers as Record<string, string>, body: new Uint8Array(raw) });
    },
    /** Waits (10 s at most) until the fake Graph has been sent `text`. */
    sent: async (text: string) => {
      for (let i = 0; i < 1000 && !graph.sent.some((s) => s.message?.text === text); i++) await new Promise((r) => setTimeout(r, 10));
      return graph.sent.map((s) => s.message?.text);
    },
    close: async () => {
      await gw.close();
      await mounted.close();
      await graph.close();
      await h.close();
    },
  };
}

/** The agent.yaml lookup of a harness: its one agent, by name. */
export function agentConfigOf(h: Harness): (agent: string) => ChannelAgentConfig | undefined {
  return (agent) => (agent === h.release.agent ? h.release.config : undefined);
}

export interface Tapable {
  title: string;
  payload: string;
}

export interface Bench {
  platform: Platform;
  customer: string;
  h: Harness;
  service: ChannelService;
  store: SqliteInboxStore;
  adapter: ChannelAdapter;
  port: EnginePort;
  alerts: TeamAlert[];
  /** The service's operator log lines. */
  logs: string[];
  url: string;
  twilio?: FakeTwilio;
  graph?: FakeGraph;
  /** Posts a raw webhook body, signed unless told otherwise. */
  post(rawBody: Buffer, options?: { signature?: string | null; path?: string }): Promise<{ status: number; body: string }>;
  get(path: string): Promise<{ status: number; body: string }>;
  /** A signed webhook body for a typed message, a tap on a payload, or an attachment. */
  body(what: { text?: string; payload?: string; title?: string; image?: string; id?: string; to?: string }): Buffer;
  say(text: string): Promise<void>;
  tap(title: string): Promise<void>;
  /** Every message the customer received so far: its visible text and the taps it offered. */
  received(): Array<{ text: string; taps: Tapable[]; raw: unknown }>;
  violations(): string[];
  waitFor<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string): Promise<T>;
  close(): Promise<void>;
}

async function serve(handler: (req: import("node:http").IncomingMessage, raw: Buffer) => Promise<{ status: number; headers: Record<string, string>; body: string }>): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const answer = await handler(req, Buffer.concat(chunks));
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

function send(url: string, method: string, body: Buffer | undefined, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: { ...headers, ...(body ? { "content-length": String(body.length) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    if (body) req.write(body);
    req.end();
  });
}

export interface BenchOptions {
  platform: Platform;
  rules: ScriptedRule[];
  /** Fast retries for tests. */
  retry?: { attempts: number; baseMs: number; maxMs: number };
  now?: () => number;
  /** Further Messenger pages or Instagram accounts, each with its own token on the fake Graph. */
  extraPages?: string[];
  /** The agent for our account (number, page); default "shop-agent" for every account. */
  agentFor?: (platform: Platform, account?: string) => string | undefined;
  /** The agent.yaml of an agent; by default the harness's agent, listing every channel. */
  agentConfig?: (agent: string) => ChannelAgentConfig | undefined;
  /** The store the bench's service uses, around the real one (e.g. one that stops at a crash point). */
  storeFor?: (store: SqliteInboxStore) => InboxStore;
  /** The server's public address files are sent under; default PUBLIC_BASE, null for none. */
  publicUrl?: string | null;
}

/** The bench server's public address (behind a proxy, under a path). */
export const PUBLIC_BASE = "https://shop.example/caplo";

export async function channelBench(options: BenchOptions): Promise<Bench> {
  const { platform } = options;
  const dir = mkdtempSync(join(tmpdir(), "caplo-channels-"));
  const h = await engineHarness({ rules: options.rules, dir, channels: ALL_CHANNELS });
  const store = new SqliteInboxStore(join(dir, "channels.db"));
  const alerts: TeamAlert[] = [];
  const logs: string[] = [];
  let adapter: ChannelAdapter;
  let twilio: FakeTwilio | undefined;
  let graph: FakeGraph | undefined;
  let customer: string;
  let publicUrl = "";
  if (platform === "whatsapp") {
    twilio = await startFakeTwilio();
    customer = "whatsapp:+38640111222";
    publicUrl = "https://shop.example/caplo/webhooks/whatsapp";
    adapter = createWhatsAppAdapter({
      accountSid: twilio.accountSid,
      authToken: twilio.authToken,
      from: BUSINESS_NUMBER,
      publicUrl,
      apiBaseUrl: twilio.url,
      contentCache: storeContentCache(store),
    });
  } else {
    graph = await startFakeGraph(platform === "messenger" ? MESSENGER_RULES : INSTAGRAM_RULES);
    customer = platform === "messenger" ? "7000000000000001" : "1780000000000001";
    const accountTokens = Object.fromEntries((options.extraPages ?? []).map((page) => [page, graph!.addPage(page)]));
    const config = { accessToken: graph.accessToken, accountTokens, graphBaseUrl: graph.url, appSecret: APP_SECRET, verifyToken: VERIFY_TOKEN };
    adapter = platform === "messenger" ? createMessengerAdapter(config) : createInstagramAdapter(config);
  }
  const capabilities = { whatsapp: WHATSAPP_CAPABILITIES, messenger: MESSENGER_CAPABILITIES, instagram: INSTAGRAM_CAPABILITIES };
  const port = new EnginePort({
    engine: h.engine,
    agentFor: options.agentFor ?? (() => "shop-agent"),
    // Every agent of the bench (tests may add releases) has the harness agent's channels: all of them.
    agentConfig: options.agentConfig ?? (() => h.release.config),
    capabilities: (p) => {
      const { editableFields, forms, questions, files, pages, richText } = capabilities[p];
      return { editableFields, forms, questions, files, pages, richText };
    },
  });
  const service = new ChannelService({
    store: options.storeFor ? options.storeFor(store) : store,
    port,
    adapters: [adapter],
    alerts: { alert: (a) => void alerts.push(a) },
    log: (line) => void logs.push(line),
    retry: options.retry ?? { attempts: 4, baseMs: 5, maxMs: 20 },
    ...(options.publicUrl === null ? {} : { publicUrl: options.publicUrl ?? PUBLIC_BASE }),
    drainRetryMs: { first: 10, max: 40 },
    ...(options.now ? { now: options.now } : {}),
  });
  const handler = service.webhook(platform);
  const server = await serve(handler);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const path = `/webhooks/${platform}`;

  const body: Bench["body"] = (what) => {
    const id = what.id ?? randomBytes(16).toString("hex");
    if (platform === "whatsapp") {
      const form = new URLSearchParams({
        SmsMessageSid: `SM${id}`,
        NumMedia: what.image ? "1" : "0",
        ProfileName: "Ana",
        MessageType: what.payload ? "button" : "text",
        WaId: "38640111222",
        Body: what.text ?? what.title ?? "",
        To: what.to ?? BUSINESS_NUMBER,
        MessageSid: `SM${id}`,
        AccountSid: twilio!.accountSid,
        From: customer,
        ApiVersion: "2010-04-01",
        ...(what.payload ? { ButtonPayload: what.payload, ButtonText: what.title ?? "" } : {}),
        ...(what.image ? { MediaUrl0: what.image, MediaContentType0: "image/jpeg" } : {}),
      });
      return Buffer.from(form.toString());
    }
    const ts = Date.now();
    const object = platform === "messenger" ? "page" : "instagram";
    const mid = `m_${id}`;
    const messaging: Record<string, unknown> = { sender: { id: customer }, recipient: { id: what.to ?? "105000000000001" }, timestamp: ts };
    if (what.payload && what.text === undefined && what.title !== undefined && !what.title.startsWith("qr:")) {
      messaging.postback = { mid, title: what.title, payload: what.payload };
    } else if (what.payload) {
      messaging.message = { mid, text: (what.title ?? "").replace(/^qr:/, ""), quick_reply: { payload: what.payload } };
    } else if (what.image) {
      messaging.message = { mid, attachments: [{ type: "image", payload: { url: what.image } }] };
    } else {
      messaging.message = { mid, text: what.text };
    }
    return Buffer.from(JSON.stringify({ object, entry: [{ id: "105000000000001", time: ts, messaging: [messaging] }] }));
  };

  const post: Bench["post"] = (raw, o = {}) => {
    const headers: Record<string, string> = {};
    if (platform === "whatsapp") {
      headers["content-type"] = "application/x-www-form-urlencoded";
      const sig = o.signature === undefined ? twilioSignature(raw, publicUrl, twilio!.authToken) : o.signature;
      if (sig !== null) headers["x-twilio-signature"] = sig;
    } else {
      headers["content-type"] = "application/json";
      const sig = o.signature === undefined ? (metaSigned(raw).headers["x-hub-signature-256"] as string) : o.signature;
      if (sig !== null) headers["x-hub-signature-256"] = sig;
    }
    return send(`${url}${o.path ?? path}`, "POST", raw, headers);
  };

  const received: Bench["received"] = () => {
    if (twilio) {
      return twilio.sent
        .filter((m) => m.to === customer)
        .map((m) => ({
          text: m.content ? m.content.body : [m.body ?? "", ...m.mediaUrls].join(" ").trim(),
          taps: (m.content?.options ?? []).map((o) => ({ title: o.title, payload: o.id })),
          raw: m,
        }));
    }
    return graph!.sent
      .filter((b) => b.recipient.id === customer && b.message)
      .map((b) => {
        const m = b.message!;
        const taps = [...(m.quick_replies ?? []).map((q) => ({ title: q.title, payload: q.payload })), ...(m.attachment?.payload.buttons ?? []).map((x) => ({ title: x.title, payload: x.payload }))];
        return { text: m.text ?? m.attachment?.payload.text ?? m.attachment?.payload.url ?? "", taps, raw: b };
      });
  };

  const waitFor: Bench["waitFor"] = async (probe, what) => {
    const until = Date.now() + 8000;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}; received: ${JSON.stringify(received().map((r) => r.text))}`);
      await new Promise((r) => setTimeout(r, 15));
    }
  };

  const bench: Bench = {
    platform,
    customer,
    h,
    service,
    store,
    adapter,
    port,
    alerts,
    logs,
    url,
    ...(twilio ? { twilio } : {}),
    ...(graph ? { graph } : {}),
    post,
    get: (p) => send(`${url}${p}`, "GET", undefined, {}),
    body,
    say: async (text) => {
      const answer = await post(body({ text }));
      if (answer.status !== 200) throw new Error(`webhook answered ${answer.status}: ${answer.body}`);
    },
    tap: async (title) => {
      const offered = received().flatMap((m) => m.taps).filter((t) => t.title === title);
      const tap = offered.at(-1);
      if (!tap) throw new Error(`no "${title}" button was offered; got ${JSON.stringify(received().flatMap((m) => m.taps.map((t) => t.title)))}`);
      const isQuickReply = platform !== "whatsapp" && graph!.sent.some((b) => b.message?.quick_replies?.some((q) => q.payload === tap.payload));
      const answer = await post(body({ payload: tap.payload, title: isQuickReply ? `qr:${title}` : title }));
      if (answer.status !== 200) throw new Error(`webhook answered ${answer.status}: ${answer.body}`);
    },
    received,
    violations: () => [...(twilio?.violations ?? []), ...(graph?.violations ?? [])],
    waitFor,
    close: async () => {
      service.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await h.close();
      await Promise.race([service.idle().catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
      await twilio?.close();
      await graph?.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return bench;
}
