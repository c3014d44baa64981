// Turning the channels on from the environment: which platforms have credentials, the adapters built from
// them, the glue wired to the engine, and the webhooks mounted on the gateway. Bad settings are errors.
import type { ChannelAdapter } from "@caplo/adapters/adapter";
import { createInstagramAdapter, INSTAGRAM_CAPABILITIES } from "@caplo/adapters/instagram/index";
import { GRAPH_BASE_URL, INSTAGRAM_GRAPH_BASE_URL } from "@caplo/adapters/meta/api";
import { createMessengerAdapter, MESSENGER_CAPABILITIES } from "@caplo/adapters/messenger/index";
import type { AdapterCapabilities } from "@caplo/adapters/adapter";
import { createWhatsAppAdapter, WHATSAPP_CAPABILITIES } from "@caplo/adapters/whatsapp/index";
import { AGENT_NAME_PATTERN } from "@caplo/shared/agent";
import type { ChannelCapabilities } from "@caplo/shared/channel";
import { ChannelService, type Retention } from "./channelService.ts";
import { storeContentCache } from "./contentCache.ts";
import { EnginePort, type EngineView } from "./enginePort.ts";
import type { InboxStore, OutboxRecord, Platform, TeamAlerts } from "./ports.ts";
import { registerChannelRoutes, type RouteRegistry } from "./routes.ts";
import { SqliteInboxStore } from "./sqliteInboxStore.ts";

export interface ChannelSetupError {
  code: "channel_config_invalid";
  path: string;
  message: string;
}

export interface WhatsAppSettings {
  accountSid: string;
  authToken: string;
  from: string;
  publicUrl: string;
  apiBaseUrl?: string;
}
export interface MetaSettings {
  accessToken: string;
  /** Further pages or Instagram accounts and their tokens (CAPLO_MESSENGER_PAGE_TOKENS, CAPLO_INSTAGRAM_TOKENS). */
  accountTokens?: Record<string, string>;
  appSecret: string;
  verifyToken: string;
  graphBaseUrl?: string;
  apiVersion?: string;
}
/** Which agent answers on each of our accounts of a platform (CAPLO_<PLATFORM>_AGENTS). */
export interface AgentRoutes {
  /** Our account (`whatsapp:+1555…`, a page id, an Instagram account id) → agent name. */
  byAccount: Record<string, string>;
  /** CAPLO_<PLATFORM>_AGENT, the agent for accounts the map does not name; without it they are not answered. */
  fallback?: string;
}

export interface ChannelSettings {
  whatsapp?: WhatsAppSettings;
  messenger?: MetaSettings;
  instagram?: MetaSettings;
  /** Per-account agents; a platform without a map answers with its CAPLO_<PLATFORM>_AGENT or the server's first agent. */
  routes?: Partial<Record<Platform, AgentRoutes>>;
  /**
   * This server's public https address (CAPLO_PUBLIC_URL, else the WhatsApp webhook URL without its
   * `/webhooks/whatsapp`): files the agent delivers are sent to the platforms as links under it.
   */
  publicUrl?: string;
}

const ACCOUNT_PATTERNS: Record<Platform, { pattern: RegExp; hint: string }> = {
  whatsapp: { pattern: /^whatsapp:\+[1-9]\d{6,14}$/, hint: "whatsapp:+<E.164 number>" },
  messenger: { pattern: /^\d{1,30}$/, hint: "a Facebook page id (digits)" },
  instagram: { pattern: /^\d{1,30}$/, hint: "an Instagram professional account id (digits)" },
};

/**
 * Parses `account=agent,account=agent` (CAPLO_WHATSAPP_AGENTS="whatsapp:+15551234567=shop,whatsapp:+15557654321=help").
 * Every entry must be well formed and name each account once; errors name the variable and the entry.
 */
export function parseAgentRoutes(platform: Platform, value: string, variable: string): { ok: true; byAccount: Record<string, string> } | { ok: false; error: ChannelSetupError } {
  const byAccount: Record<string, string> = {};
  const { pattern, hint } = ACCOUNT_PATTERNS[platform];
  const entries = value.split(",").map((entry) => entry.trim()).filter(Boolean);
  if (entries.length === 0) return { ok: false, error: invalid(variable, `${variable} is empty: list account=agent pairs separated by commas`) };
  for (const entry of entries) {
    const at = entry.lastIndexOf("=");
    const account = at > 0 ? entry.slice(0, at).trim() : "";
    const agent = at > 0 ? entry.slice(at + 1).trim() : "";
    if (!account || !agent) return { ok: false, error: invalid(variable, `${variable} entry "${entry}" is not account=agent`) };
    if (!pattern.test(account)) return { ok: false, error: invalid(variable, `${variable} entry "${entry}": the account must be ${hint}`) };
    if (!AGENT_NAME_PATTERN.test(agent)) return { ok: false, error: invalid(variable, `${variable} entry "${entry}": "${agent}" is not an agent name`) };
    if (account in byAccount) return { ok: false, error: invalid(variable, `${variable} names ${account} twice`) };
    byAccount[account] = agent;
  }
  return { ok: true, byAccount };
}

/**
 * Parses `id=token,id=token` (CAPLO_MESSENGER_PAGE_TOKENS, CAPLO_INSTAGRAM_TOKENS). An error names the entry
 * by its position and never repeats a token.
 */
export function parseAccountTokens(value: string, variable: string): { ok: true; tokens: Record<string, string> } | { ok: false; error: ChannelSetupError } {
  const tokens: Record<string, string> = {};
  const entries = value.split(",").map((entry) => entry.trim()).filter(Boolean);
  if (entries.length === 0) return { ok: false, error: invalid(variable, `${variable} is empty: list id=token pairs separated by commas`) };
  for (const [index, entry] of entries.entries()) {
    const at = entry.indexOf("=");
    const id = at > 0 ? entry.slice(0, at).trim() : "";
    const token = at > 0 ? entry.slice(at + 1).trim() : "";
    if (!/^\d{1,30}$/.test(id) || !/^\S{20,}$/.test(token)) {
      return { ok: false, error: invalid(variable, `${variable} entry ${index + 1} is not <page or account id>=<access token of at least 20 characters>`) };
    }
    if (id in tokens) return { ok: false, error: invalid(variable, `${variable} names ${id} twice`) };
    tokens[id] = token;
  }
  return { ok: true, tokens };
}

/**
 * The agent that answers an inbound on our `account`: the map's agent, else CAPLO_<PLATFORM>_AGENT, else —
 * only when the platform has no map — `serverDefault`. Undefined: nobody answers (logged, not processed).
 */
export function routeAgent(routes: ChannelSettings["routes"], platform: Platform, account: string | undefined, serverDefault: (platform: Platform) => string | undefined): string | undefined {
  const map = routes?.[platform];
  if (!map) return serverDefault(platform);
  return (account !== undefined ? map.byAccount[account] : undefined) ?? map.fallback;
}

const invalid = (path: string, message: string): ChannelSetupError => ({ code: "channel_config_invalid", path, message });

/**
 * Reads the channel settings from environment variables (docs/channels.md lists them). A platform is on
 * when its first credential is set; then every variable it needs must be set and well formed.
 */
export function readChannelSettings(env: Record<string, string | undefined>): { ok: true; settings: ChannelSettings } | { ok: false; errors: ChannelSetupError[] } {
  const errors: ChannelSetupError[] = [];
  const settings: ChannelSettings = {};
  const publicBase = env.CAPLO_PUBLIC_URL?.replace(/\/$/, "");
  if (publicBase !== undefined && !/^https:\/\/[^\s/]+/.test(publicBase)) errors.push(invalid("CAPLO_PUBLIC_URL", "the public https URL of this server, e.g. https://caplo.shop.example"));
  const need = (name: string, pattern: RegExp, hint: string): string | undefined => {
    const value = env[name];
    if (!value) errors.push(invalid(name, `${name} is required: ${hint}`));
    else if (!pattern.test(value)) errors.push(invalid(name, `${name} is malformed: ${hint}`));
    return value;
  };
  if (env.CAPLO_TWILIO_ACCOUNT_SID !== undefined) {
    const accountSid = need("CAPLO_TWILIO_ACCOUNT_SID", /^AC[0-9a-f]{32}$/, "the Account SID, AC followed by 32 hex digits");
    const authToken = need("CAPLO_TWILIO_AUTH_TOKEN", /^[0-9a-f]{32}$/, "the account's Auth Token (32 hex digits)");
    const from = need("CAPLO_WHATSAPP_FROM", /^(whatsapp:\+[1-9]\d{6,14}|MG[0-9a-f]{32})$/, "whatsapp:+<E.164 number> or a Messaging Service SID (MG…)");
    const publicUrl = env.CAPLO_WHATSAPP_WEBHOOK_URL ?? (publicBase ? `${publicBase}/webhooks/whatsapp` : undefined);
    if (!publicUrl || !/^https:\/\//.test(publicUrl)) errors.push(invalid("CAPLO_WHATSAPP_WEBHOOK_URL", "the webhook URL as entered in Twilio (https), or CAPLO_PUBLIC_URL"));
    if (accountSid && authToken && from && publicUrl) {
      settings.whatsapp = { accountSid, authToken, from, publicUrl, ...(env.CAPLO_TWILIO_API_BASE ? { apiBaseUrl: env.CAPLO_TWILIO_API_BASE } : {}) };
    }
  }
  const baseUrl = (name: string): string | undefined => {
    const value = env[name];
    if (value !== undefined && !/^https?:\/\/[^\s/]+/.test(value)) errors.push(invalid(name, `${name} is malformed: an http(s) origin such as ${GRAPH_BASE_URL}`));
    return value;
  };
  const meta = (platform: "messenger" | "instagram", tokenName: string, tokensName: string): MetaSettings | undefined => {
    const accessToken = need(tokenName, /^\S{20,}$/, "the access token from the Meta app dashboard");
    const accountTokens = env[tokensName] === undefined ? undefined : parseAccountTokens(env[tokensName]!, tokensName);
    if (accountTokens && !accountTokens.ok) errors.push(accountTokens.error);
    // Business Login for Instagram has an app secret of its own (the Instagram app secret), which signs its webhooks.
    const ownSecret = platform === "instagram" && env.CAPLO_INSTAGRAM_APP_SECRET !== undefined;
    const appSecret = ownSecret
      ? need("CAPLO_INSTAGRAM_APP_SECRET", /^[0-9a-f]{32}$/, "the Instagram app secret (32 hex digits) from Instagram > API setup with Instagram login")
      : need("CAPLO_META_APP_SECRET", /^[0-9a-f]{32}$/, "the app secret (32 hex digits) from App settings > Basic");
    const verifyToken = need("CAPLO_META_VERIFY_TOKEN", /^[A-Za-z0-9._~-]{16,128}$/, "a random string of 16 to 128 characters you also enter as the Verify token");
    const graphBase = baseUrl("CAPLO_GRAPH_API_BASE");
    // Instagram: an Instagram User access token (Business Login for Instagram, `IG…`) sends through
    // graph.instagram.com; a Page access token (Facebook Login, `EAA…`) through graph.facebook.com.
    const instagramBase = platform === "instagram" ? (baseUrl("CAPLO_INSTAGRAM_API_BASE") ?? (accessToken?.startsWith("IG") ? INSTAGRAM_GRAPH_BASE_URL : undefined)) : undefined;
    const graphBaseUrl = instagramBase ?? graphBase;
    if (!accessToken || !appSecret || !verifyToken) return undefined;
    return {
      accessToken,
      ...(accountTokens?.ok ? { accountTokens: accountTokens.tokens } : {}),
      appSecret,
      verifyToken,
      ...(graphBaseUrl ? { graphBaseUrl } : {}),
      ...(env.CAPLO_GRAPH_API_VERSION ? { apiVersion: env.CAPLO_GRAPH_API_VERSION } : {}),
    };
  };
  if (env.CAPLO_MESSENGER_PAGE_TOKEN !== undefined) {
    const s = meta("messenger", "CAPLO_MESSENGER_PAGE_TOKEN", "CAPLO_MESSENGER_PAGE_TOKENS");
    if (s) settings.messenger = s;
  }
  if (env.CAPLO_INSTAGRAM_TOKEN !== undefined) {
    const s = meta("instagram", "CAPLO_INSTAGRAM_TOKEN", "CAPLO_INSTAGRAM_TOKENS");
    if (s) settings.instagram = s;
  }
  for (const platform of ["whatsapp", "messenger", "instagram"] as const) {
    const variable = `CAPLO_${platform.toUpperCase()}_AGENTS`;
    const value = env[variable];
    if (value === undefined) continue;
    if (!settings[platform]) {
      errors.push(invalid(variable, `${variable} is set but ${platform} is not configured (its credentials are missing)`));
      continue;
    }
    const parsed = parseAgentRoutes(platform, value, variable);
    if (!parsed.ok) {
      errors.push(parsed.error);
      continue;
    }
    const fallback = env[`CAPLO_${platform.toUpperCase()}_AGENT`];
    if (fallback !== undefined && !AGENT_NAME_PATTERN.test(fallback)) {
      errors.push(invalid(`CAPLO_${platform.toUpperCase()}_AGENT`, `CAPLO_${platform.toUpperCase()}_AGENT "${fallback}" is not an agent name`));
      continue;
    }
    settings.routes = { ...settings.routes, [platform]: { byAccount: parsed.byAccount, ...(fallback ? { fallback } : {}) } };
  }
  const whatsappBase = settings.whatsapp?.publicUrl.endsWith("/webhooks/whatsapp") ? settings.whatsapp.publicUrl.slice(0, -"/webhooks/whatsapp".length) : undefined;
  const filesBase = publicBase ?? whatsappBase;
  if (filesBase && (settings.whatsapp || settings.messenger || settings.instagram)) settings.publicUrl = filesBase;
  // The same variable is reported once.
  const unique = errors.filter((e, i) => errors.findIndex((x) => x.path === e.path) === i);
  return unique.length ? { ok: false, errors: unique } : { ok: true, settings };
}

export const ADAPTER_CAPABILITIES: Record<Platform, AdapterCapabilities> = {
  whatsapp: WHATSAPP_CAPABILITIES,
  messenger: MESSENGER_CAPABILITIES,
  instagram: INSTAGRAM_CAPABILITIES,
};

/** The neutral capabilities the engine is told for a platform. */
export function neutralCapabilities(platform: Platform): ChannelCapabilities {
  const { editableFields, forms, questions, files, pages, richText } = ADAPTER_CAPABILITIES[platform];
  return { editableFields, forms, questions, files, pages, richText };
}

/** The team's view of failed sends: one entry per undelivered message (its first failed part), newest first, at most 200. */
function undeliveredFor(failures: OutboxRecord[]) {
  const seen = new Set<string>();
  const out = [];
  for (const f of failures) {
    const key = `${f.platform}|${f.conversationId}|${f.seq}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ conversationId: f.conversationId, channel: f.platform, code: f.code ?? "undelivered", message: f.message ?? "Not delivered.", at: f.at });
    if (out.length === 200) break;
  }
  return out;
}

export interface MountedChannels {
  service: ChannelService;
  /** The channel state, e.g. `store.listFailures()` for messages that could not be delivered. */
  store: InboxStore & { close(): void };
  platforms: Platform[];
  close(): void;
}

/**
 * Builds the configured adapters, wires the glue to the engine and mounts `/webhooks/{platform}` on the
 * gateway. `agentFor` names the agent that answers on a platform (one whose release lists the channel).
 */
export async function mountChannels(options: {
  settings: ChannelSettings;
  engine: EngineView;
  gateway: RouteRegistry;
  /** The agent of a platform without a per-account map (settings.routes); see routeAgent. */
  agentFor: (platform: Platform) => string | undefined;
  /** The SQLite file of the channel state. */
  file: string;
  /** The channel state shared by several nodes (PostgreSQL) instead of the SQLite file. */
  store?: InboxStore & { close(): void };
  alerts?: TeamAlerts;
  retention?: Partial<Retention>;
  /** How often stored events are looked for without a webhook (a lost node's claim ended); 5 s by default. */
  sweepMs?: number;
}): Promise<MountedChannels> {
  const store = options.store ?? new SqliteInboxStore(options.file);
  const adapters: ChannelAdapter[] = [];
  const { whatsapp, messenger, instagram } = options.settings;
  if (whatsapp) adapters.push(createWhatsAppAdapter({ ...whatsapp, contentCache: storeContentCache(store) }));
  if (messenger) adapters.push(createMessengerAdapter(messenger));
  if (instagram) adapters.push(createInstagramAdapter(instagram));
  const routes = options.settings.routes;
  const port = new EnginePort({
    engine: options.engine,
    agentFor: (platform, account) => routeAgent(routes, platform, account, options.agentFor),
    capabilities: neutralCapabilities,
  });
  // Without a team inbox to tell, undelivered messages are at least logged (they are always in the store).
  const alerts: TeamAlerts = options.alerts ?? { alert: (a) => console.warn(`caplo channels: ${a.platform} ${a.code}${a.conversationId ? ` in ${a.conversationId}` : ""}: ${a.message}`) };
  const service = new ChannelService({
    store,
    port,
    adapters,
    alerts,
    ...(options.retention ? { retention: options.retention } : {}),
    ...(options.settings.publicUrl ? { publicUrl: options.settings.publicUrl } : {}),
  });
  const platforms = adapters.map((a) => a.platform);
  registerChannelRoutes(options.gateway, service, platforms);
  // The team's follow-up list shows the messages that never reached their customer.
  const removeSource = options.engine.addUndeliveredSource?.(async () => undeliveredFor(await store.listFailures()));
  await service.resume(await store.listBindings());
  service.startPruning();
  service.startSweeping(options.sweepMs ?? 5_000);
  return {
    service,
    store,
    platforms,
    close: () => {
      removeSource?.();
      service.close();
      store.close();
    },
  };
}
