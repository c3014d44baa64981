// The messaging channels' settings from the environment: which platforms have credentials, which agent
// answers on which account, and where this server is reached. Every variable has one rule and one example
// (CHANNEL_VARIABLES): a refusal names the variable, says the rule and shows the example.
import { GRAPH_BASE_URL, INSTAGRAM_GRAPH_BASE_URL } from "@caplo/adapters/meta/api";
import { AGENT_NAME_PATTERN } from "@caplo/shared/agent";
import { META_VERIFY_TOKEN_PATTERN, META_VERIFY_TOKEN_RULE } from "@caplo/shared/channels";
import type { ChannelAgentConfig, Platform } from "./ports.ts";

export interface ChannelSetupError {
  code: "channel_config_invalid" | "channel_not_listed";
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

/** One environment variable of the channels: the rule its value follows and an example of it. */
export interface ChannelVariable {
  pattern: RegExp;
  rule: string;
  example: string;
}

const HTTP_ORIGIN = /^https?:\/\/[^\s/]+/;
const ACCESS_TOKEN = /^\S{20,}$/;

/** Every channel variable with a fixed form, by name: the one place its rule and example are written. */
export const CHANNEL_VARIABLES = {
  CAPLO_PUBLIC_URL: { pattern: /^https:\/\/[^\s/]+/, rule: "the public https address of this server, without a path to a webhook", example: "https://caplo.shop.example" },
  CAPLO_TWILIO_ACCOUNT_SID: { pattern: /^AC[0-9a-f]{32}$/, rule: "the Account SID: AC followed by 32 lowercase hex digits (Twilio Console home page)", example: "AC0123456789abcdef0123456789abcdef" },
  CAPLO_TWILIO_AUTH_TOKEN: { pattern: /^[0-9a-f]{32}$/, rule: "the account's Auth Token: 32 lowercase hex digits (Console > Account > API keys & tokens)", example: "0123456789abcdef0123456789abcdef" },
  CAPLO_WHATSAPP_FROM: { pattern: /^(whatsapp:\+[1-9]\d{6,14}|MG[0-9a-f]{32})$/, rule: "your WhatsApp sender as whatsapp:+<E.164 number>, or a Messaging Service SID (MG and 32 hex digits)", example: "whatsapp:+14155238886" },
  CAPLO_WHATSAPP_WEBHOOK_URL: { pattern: /^https:\/\/\S+$/, rule: "the https webhook URL exactly as entered in Twilio (needed when CAPLO_PUBLIC_URL is not set)", example: "https://caplo.shop.example/webhooks/whatsapp" },
  CAPLO_TWILIO_API_BASE: { pattern: HTTP_ORIGIN, rule: "an http(s) origin that forwards to Twilio's API hosts", example: "https://twilio-egress.shop.example" },
  CAPLO_MESSENGER_PAGE_TOKEN: { pattern: ACCESS_TOKEN, rule: "the Page access token from the Meta app dashboard (at least 20 characters, no spaces)", example: "EAAG…(the token the dashboard generates)" },
  CAPLO_INSTAGRAM_TOKEN: { pattern: ACCESS_TOKEN, rule: "the Instagram User access token (IG…) or the linked Page's access token (EAA…), at least 20 characters, no spaces", example: "IGAA…(the token the dashboard generates)" },
  CAPLO_META_APP_SECRET: { pattern: /^[0-9a-f]{32}$/, rule: "the app secret: 32 lowercase hex digits (App settings > Basic)", example: "0123456789abcdef0123456789abcdef" },
  CAPLO_INSTAGRAM_APP_SECRET: { pattern: /^[0-9a-f]{32}$/, rule: "the Instagram app secret: 32 lowercase hex digits (Instagram > API setup with Instagram login)", example: "0123456789abcdef0123456789abcdef" },
  CAPLO_META_VERIFY_TOKEN: { pattern: META_VERIFY_TOKEN_PATTERN, rule: `${META_VERIFY_TOKEN_RULE}, made up by you and typed into the dashboard as the Verify token`, example: "shop-verify_2026.x7Kq9" },
  CAPLO_GRAPH_API_BASE: { pattern: HTTP_ORIGIN, rule: `an http(s) origin that forwards to ${GRAPH_BASE_URL}`, example: "https://graph-egress.shop.example" },
  CAPLO_INSTAGRAM_API_BASE: { pattern: HTTP_ORIGIN, rule: `an http(s) origin that forwards to Instagram's Send API (${INSTAGRAM_GRAPH_BASE_URL} for IG tokens)`, example: "https://ig-egress.shop.example" },
  CAPLO_GRAPH_API_VERSION: { pattern: /^v\d{1,2}\.\d$/, rule: "a Graph API version: v, a number, a dot and a digit", example: "v21.0" },
} satisfies Record<string, ChannelVariable>;
export type ChannelVariableName = keyof typeof CHANNEL_VARIABLES;

const invalid = (path: string, message: string): ChannelSetupError => ({ code: "channel_config_invalid", path, message });

/** The refusal of a variable: its name, what is wrong, the rule and an example. */
function refusal(name: ChannelVariableName, what: "is required" | "is malformed"): ChannelSetupError {
  const { rule, example } = CHANNEL_VARIABLES[name];
  return invalid(name, `${name} ${what}: ${rule}; for example ${name}=${example}`);
}

const ACCOUNT_PATTERNS: Record<Platform, { pattern: RegExp; hint: string; example: string }> = {
  whatsapp: { pattern: /^whatsapp:\+[1-9]\d{6,14}$/, hint: "whatsapp:+<E.164 number>", example: "whatsapp:+15551234567=shop" },
  messenger: { pattern: /^\d{1,30}$/, hint: "a Facebook page id (digits)", example: "105000000000001=shop" },
  instagram: { pattern: /^\d{1,30}$/, hint: "an Instagram professional account id (digits)", example: "17841400000000001=shop" },
};

/**
 * Parses `account=agent,account=agent` (CAPLO_WHATSAPP_AGENTS="whatsapp:+15551234567=shop,whatsapp:+15557654321=help").
 * Every entry must be well formed and name each account once; errors name the variable and the entry.
 */
export function parseAgentRoutes(platform: Platform, value: string, variable: string): { ok: true; byAccount: Record<string, string> } | { ok: false; error: ChannelSetupError } {
  const byAccount: Record<string, string> = {};
  const { pattern, hint, example } = ACCOUNT_PATTERNS[platform];
  const rule = `list account=agent pairs separated by commas, the account being ${hint}; for example ${variable}=${example}`;
  const entries = value.split(",").map((entry) => entry.trim()).filter(Boolean);
  if (entries.length === 0) return { ok: false, error: invalid(variable, `${variable} is empty: ${rule}`) };
  for (const entry of entries) {
    const at = entry.lastIndexOf("=");
    const account = at > 0 ? entry.slice(0, at).trim() : "";
    const agent = at > 0 ? entry.slice(at + 1).trim() : "";
    if (!account || !agent) return { ok: false, error: invalid(variable, `${variable} entry "${entry}" is not account=agent: ${rule}`) };
    if (!pattern.test(account)) return { ok: false, error: invalid(variable, `${variable} entry "${entry}": the account must be ${hint}; for example ${variable}=${example}`) };
    if (!AGENT_NAME_PATTERN.test(agent)) return { ok: false, error: invalid(variable, `${variable} entry "${entry}": "${agent}" is not an agent name (lowercase letters, digits and dashes); for example ${variable}=${example}`) };
    if (account in byAccount) return { ok: false, error: invalid(variable, `${variable} names ${account} twice: each account once; for example ${variable}=${example}`) };
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
  const example = `${variable}=205000000000002=EAAG…,305000000000003=EAAG…`;
  const entries = value.split(",").map((entry) => entry.trim()).filter(Boolean);
  if (entries.length === 0) return { ok: false, error: invalid(variable, `${variable} is empty: list id=token pairs separated by commas; for example ${example}`) };
  for (const [index, entry] of entries.entries()) {
    const at = entry.indexOf("=");
    const id = at > 0 ? entry.slice(0, at).trim() : "";
    const token = at > 0 ? entry.slice(at + 1).trim() : "";
    if (!/^\d{1,30}$/.test(id) || !ACCESS_TOKEN.test(token)) {
      return { ok: false, error: invalid(variable, `${variable} entry ${index + 1} is not <page or account id>=<access token of at least 20 characters>; for example ${example}`) };
    }
    if (id in tokens) return { ok: false, error: invalid(variable, `${variable} names ${id} twice: each page or account once`) };
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

/**
 * Reads the channel settings from environment variables (docs/channels.md lists them). A platform is on
 * when its first credential is set; then every variable it needs must be set and well formed. `webhookBase`
 * is where the webhooks are mounted (`/webhooks`, or `/webhooks/@<workspace>` for a workspace's own channels).
 */
export function readChannelSettings(env: Record<string, string | undefined>, webhookBase = "/webhooks"): { ok: true; settings: ChannelSettings } | { ok: false; errors: ChannelSetupError[] } {
  const errors: ChannelSetupError[] = [];
  const settings: ChannelSettings = {};
  /** A variable that must be set and well formed. */
  const need = (name: ChannelVariableName): string | undefined => {
    const value = env[name];
    if (!value) errors.push(refusal(name, "is required"));
    else if (!CHANNEL_VARIABLES[name].pattern.test(value)) errors.push(refusal(name, "is malformed"));
    return value || undefined;
  };
  /** A variable that may be left out, and is well formed when set. */
  const optional = (name: ChannelVariableName): string | undefined => {
    const value = env[name];
    if (value === undefined) return undefined;
    if (!CHANNEL_VARIABLES[name].pattern.test(value)) errors.push(refusal(name, "is malformed"));
    return value;
  };
  const publicBase = optional("CAPLO_PUBLIC_URL")?.replace(/\/$/, "");
  if (env.CAPLO_TWILIO_ACCOUNT_SID !== undefined) {
    const accountSid = need("CAPLO_TWILIO_ACCOUNT_SID");
    const authToken = need("CAPLO_TWILIO_AUTH_TOKEN");
    const from = need("CAPLO_WHATSAPP_FROM");
    const apiBaseUrl = optional("CAPLO_TWILIO_API_BASE");
    const publicUrl = env.CAPLO_WHATSAPP_WEBHOOK_URL !== undefined ? optional("CAPLO_WHATSAPP_WEBHOOK_URL") : publicBase ? `${publicBase}${webhookBase}/whatsapp` : undefined;
    if (publicUrl === undefined && env.CAPLO_WHATSAPP_WEBHOOK_URL === undefined && env.CAPLO_PUBLIC_URL === undefined) errors.push(refusal("CAPLO_WHATSAPP_WEBHOOK_URL", "is required"));
    if (accountSid && authToken && from && publicUrl) {
      settings.whatsapp = { accountSid, authToken, from, publicUrl, ...(apiBaseUrl ? { apiBaseUrl } : {}) };
    }
  }
  const meta = (platform: "messenger" | "instagram"): MetaSettings | undefined => {
    const accessToken = need(platform === "messenger" ? "CAPLO_MESSENGER_PAGE_TOKEN" : "CAPLO_INSTAGRAM_TOKEN");
    const tokensName = platform === "messenger" ? "CAPLO_MESSENGER_PAGE_TOKENS" : "CAPLO_INSTAGRAM_TOKENS";
    const accountTokens = env[tokensName] === undefined ? undefined : parseAccountTokens(env[tokensName]!, tokensName);
    if (accountTokens && !accountTokens.ok) errors.push(accountTokens.error);
    // Business Login for Instagram has an app secret of its own (the Instagram app secret), which signs its webhooks.
    const ownSecret = platform === "instagram" && env.CAPLO_INSTAGRAM_APP_SECRET !== undefined;
    const appSecret = need(ownSecret ? "CAPLO_INSTAGRAM_APP_SECRET" : "CAPLO_META_APP_SECRET");
    const verifyToken = need("CAPLO_META_VERIFY_TOKEN");
    const graphBase = optional("CAPLO_GRAPH_API_BASE");
    const apiVersion = optional("CAPLO_GRAPH_API_VERSION");
    // Instagram: an Instagram User access token (Business Login for Instagram, `IG…`) sends through
    // graph.instagram.com; a Page access token (Facebook Login, `EAA…`) through graph.facebook.com.
    const instagramBase = platform === "instagram" ? (optional("CAPLO_INSTAGRAM_API_BASE") ?? (accessToken?.startsWith("IG") ? INSTAGRAM_GRAPH_BASE_URL : undefined)) : undefined;
    const graphBaseUrl = instagramBase ?? graphBase;
    if (!accessToken || !appSecret || !verifyToken) return undefined;
    return {
      accessToken,
      ...(accountTokens?.ok ? { accountTokens: accountTokens.tokens } : {}),
      appSecret,
      verifyToken,
      ...(graphBaseUrl ? { graphBaseUrl } : {}),
      ...(apiVersion ? { apiVersion } : {}),
    };
  };
  if (env.CAPLO_MESSENGER_PAGE_TOKEN !== undefined) {
    const s = meta("messenger");
    if (s) settings.messenger = s;
  }
  if (env.CAPLO_INSTAGRAM_TOKEN !== undefined) {
    const s = meta("instagram");
    if (s) settings.instagram = s;
  }
  for (const platform of ["whatsapp", "messenger", "instagram"] as const) {
    const variable = `CAPLO_${platform.toUpperCase()}_AGENTS`;
    const fallbackName = `CAPLO_${platform.toUpperCase()}_AGENT`;
    const fallback = env[fallbackName];
    if (fallback !== undefined && !AGENT_NAME_PATTERN.test(fallback)) {
      errors.push(invalid(fallbackName, `${fallbackName} "${fallback}" is not an agent name: lowercase letters, digits and dashes, starting with a letter; for example ${fallbackName}=shop`));
      continue;
    }
    const value = env[variable];
    if (value === undefined) continue;
    if (!settings[platform]) {
      errors.push(invalid(variable, `${variable} is set but ${platform} is not configured: set its credentials too (docs/channels.md), or leave ${variable} out`));
      continue;
    }
    const parsed = parseAgentRoutes(platform, value, variable);
    if (!parsed.ok) {
      errors.push(parsed.error);
      continue;
    }
    settings.routes = { ...settings.routes, [platform]: { byAccount: parsed.byAccount, ...(fallback ? { fallback } : {}) } };
  }
  const whatsappPath = `${webhookBase}/whatsapp`;
  const whatsappBase = settings.whatsapp?.publicUrl.endsWith(whatsappPath) ? settings.whatsapp.publicUrl.slice(0, -whatsappPath.length) : undefined;
  const filesBase = publicBase ?? whatsappBase;
  if (filesBase && (settings.whatsapp || settings.messenger || settings.instagram)) settings.publicUrl = filesBase;
  // The same variable is reported once.
  const unique = errors.filter((e, i) => errors.findIndex((x) => x.path === e.path) === i);
  return unique.length ? { ok: false, errors: unique } : { ok: true, settings };
}

/**
 * The webhook URLs to register on each platform's console: the WhatsApp URL as configured, the Meta ones
 * under the public address (or the WhatsApp URL's base), or a path to put after your public address.
 */
export function webhookUrls(settings: ChannelSettings, webhookBase = "/webhooks"): Array<{ platform: Platform; url: string; where: string }> {
  const base = settings.publicUrl;
  const at = (platform: Platform) => (base ? `${base}${webhookBase}/${platform}` : `<your public https address>${webhookBase}/${platform} (set CAPLO_PUBLIC_URL)`);
  const out: Array<{ platform: Platform; url: string; where: string }> = [];
  if (settings.whatsapp) {
    out.push({ platform: "whatsapp", url: settings.whatsapp.publicUrl, where: "Twilio Console > Messaging > Senders > WhatsApp senders (or the Sandbox settings): incoming messages and status callback, POST" });
  }
  if (settings.messenger) out.push({ platform: "messenger", url: at("messenger"), where: "Meta app dashboard > Messenger > API settings > Webhooks, with CAPLO_META_VERIFY_TOKEN as the Verify token" });
  if (settings.instagram) out.push({ platform: "instagram", url: at("instagram"), where: "Meta app dashboard > Instagram > API setup (or Webhooks, object Instagram), with CAPLO_META_VERIFY_TOKEN as the Verify token" });
  return out;
}

/**
 * Every agent that would answer on a configured platform must be one the server serves and list the
 * platform under `channels:` in its agent.yaml (an agent answers only on the channels it lists). A problem
 * names the variable that chose the agent, the rule and what to write.
 */
export function channelAgentProblems(
  settings: ChannelSettings,
  agentConfig: (agent: string) => ChannelAgentConfig | undefined,
  serverDefault: { agent: (platform: Platform) => string | undefined; variable: (platform: Platform) => string },
): ChannelSetupError[] {
  const problems: ChannelSetupError[] = [];
  for (const platform of ["whatsapp", "messenger", "instagram"] as const) {
    if (!settings[platform]) continue;
    const map = settings.routes?.[platform];
    const upper = platform.toUpperCase();
    const chosen: Array<{ agent: string; variable: string }> = map
      ? [...Object.values(map.byAccount).map((agent) => ({ agent, variable: `CAPLO_${upper}_AGENTS` })), ...(map.fallback ? [{ agent: map.fallback, variable: `CAPLO_${upper}_AGENT` }] : [])]
      : [{ agent: serverDefault.agent(platform) ?? "", variable: serverDefault.variable(platform) }];
    for (const { agent, variable } of chosen) {
      if (problems.some((p) => p.path === variable)) continue;
      const config = agentConfig(agent);
      if (!config) {
        problems.push(invalid(variable, `${variable} names agent ${agent || "(none)"}, which this server does not serve: serve it too (--agent ${agent || "NAME"}) or name one it serves`));
      } else if (!config.channels[platform]) {
        problems.push({
          code: "channel_not_listed",
          path: variable,
          message: `agent ${agent} (chosen by ${variable}) does not list ${platform} under channels in its agent.yaml, and an agent answers only on the channels it lists: add "${platform}: {}" under channels (for example channels: { web: {}, ${platform}: {} }) and publish the agent again, or set CAPLO_${upper}_AGENT to an agent that lists ${platform}`,
        });
      }
    }
  }
  return problems;
}
