// The widget gateway's CAPLO_* settings, read in one place: this server's public origin, the proxies
// trusted to name the client's address, and the per-address limits on sockets and new conversations.
import { isIP } from "node:net";
import { parseSetting } from "../config/index.ts";
import { DEFAULT_ADDRESS_LIMITS, type AddressLimits } from "./addressLimits.ts";

export type WidgetSettings = {
  /** Origins this server is served at (the widget app's iframe), from CAPLO_PUBLIC_URL. */
  publicOrigins: string[];
  /** Proxy addresses or CIDR ranges whose X-Forwarded-For is believed (CAPLO_TRUSTED_PROXIES). */
  trustedProxies: string[];
  addressLimits: AddressLimits;
  helloTimeoutMs: number;
  /** The team console on a port of its own (CAPLO_CONSOLE_PORT), and its public origins (CAPLO_CONSOLE_PUBLIC_URL). */
  console?: { port: number; publicOrigins: string[] };
};

export type SettingError = { code: string; path: string; message: string };

export const DEFAULT_HELLO_TIMEOUT_MS = 10_000;

/** The origin of a public URL (http or https, no credentials), or undefined. */
export function publicOriginOf(url: string): string | undefined {
  if (!URL.canParse(url)) return undefined;
  const parsed = new URL(url);
  if ((parsed.protocol !== "https:" && parsed.protocol !== "http:") || parsed.username || parsed.password) return undefined;
  return parsed.origin;
}

/** A proxy entry: an IP address, or an address with a prefix length (10.0.0.0/8, fd00::/8). */
export function parseProxyEntry(entry: string): { address: string; prefix: number; family: "ipv4" | "ipv6" } | undefined {
  const [address = "", prefixText, extra] = entry.split("/");
  const version = isIP(address);
  if (!version || extra !== undefined) return undefined;
  const bits = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? bits : /^[0-9]{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits) return undefined;
  return { address, prefix, family: version === 4 ? "ipv4" : "ipv6" };
}

/** `gatewayPort`: the port the gateway will listen on (--port or CAPLO_PORT, resolved), which the console's may not be. */
export function readWidgetSettings(env: Record<string, string | undefined>, gatewayPort?: number): { ok: true; settings: WidgetSettings } | { ok: false; error: SettingError } {
  const invalid = (path: string, message: string) => ({ ok: false as const, error: { code: "setting_invalid", path, message } });
  const publicOrigins: string[] = [];
  const publicUrl = env.CAPLO_PUBLIC_URL;
  if (publicUrl) {
    const origin = publicOriginOf(publicUrl);
    if (!origin) return invalid("CAPLO_PUBLIC_URL", "CAPLO_PUBLIC_URL is this server's public address as browsers reach it, e.g. https://caplo.shop.example");
    publicOrigins.push(origin);
  }
  const trustedProxies = (env.CAPLO_TRUSTED_PROXIES ?? "").split(",").map((entry) => entry.trim()).filter(Boolean);
  const badProxy = trustedProxies.find((entry) => !parseProxyEntry(entry));
  if (badProxy !== undefined) return invalid("CAPLO_TRUSTED_PROXIES", `CAPLO_TRUSTED_PROXIES is a comma-separated list of proxy addresses or ranges (10.0.0.5, 10.0.0.0/8, fd00::/8); ${JSON.stringify(badProxy)} is not one`);
  // The ranges are the settings' schema's (config/settings/gateway.ts).
  const whole = (name: "CAPLO_WIDGET_SOCKETS_PER_ADDRESS" | "CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE" | "CAPLO_WIDGET_HELLO_TIMEOUT_SECONDS", fallback: number): number | SettingError => {
    const parsed = parseSetting(name, env[name]);
    return parsed.ok ? (parsed.value ?? fallback) : parsed.error;
  };
  const sockets = whole("CAPLO_WIDGET_SOCKETS_PER_ADDRESS", DEFAULT_ADDRESS_LIMITS.socketsPerAddress);
  const conversations = whole("CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE", DEFAULT_ADDRESS_LIMITS.conversationsPerMinute);
  const helloSeconds = whole("CAPLO_WIDGET_HELLO_TIMEOUT_SECONDS", DEFAULT_HELLO_TIMEOUT_MS / 1000);
  for (const value of [sockets, conversations, helloSeconds]) if (typeof value !== "number") return { ok: false, error: value };
  const consolePort = parseSetting("CAPLO_CONSOLE_PORT", env.CAPLO_CONSOLE_PORT);
  if (!consolePort.ok) return { ok: false, error: consolePort.error };
  const consoleUrl = env.CAPLO_CONSOLE_PUBLIC_URL;
  let consoleSettings: WidgetSettings["console"];
  if (consolePort.value !== undefined) {
    if (consolePort.value !== 0 && consolePort.value === gatewayPort) {
      return invalid("CAPLO_CONSOLE_PORT", `CAPLO_CONSOLE_PORT is a port of the console's own: ${consolePort.value} is the gateway's (--port, CAPLO_PORT)`);
    }
    const origin = consoleUrl ? publicOriginOf(consoleUrl) : undefined;
    if (consoleUrl && !origin) return invalid("CAPLO_CONSOLE_PUBLIC_URL", "CAPLO_CONSOLE_PUBLIC_URL is the console's public address as browsers reach it, e.g. https://console.shop.example");
    if (origin && publicOrigins.includes(origin)) return invalid("CAPLO_CONSOLE_PUBLIC_URL", `CAPLO_CONSOLE_PUBLIC_URL must be an origin apart from CAPLO_PUBLIC_URL's (${origin} is both)`);
    consoleSettings = { port: consolePort.value, publicOrigins: origin ? [origin] : [] };
  } else if (consoleUrl) return invalid("CAPLO_CONSOLE_PUBLIC_URL", "CAPLO_CONSOLE_PUBLIC_URL is the address of the console's own port: set CAPLO_CONSOLE_PORT too");
  return {
    ok: true,
    settings: {
      publicOrigins,
      trustedProxies,
      addressLimits: { socketsPerAddress: sockets as number, conversationsPerMinute: conversations as number },
      helloTimeoutMs: (helloSeconds as number) * 1000,
      ...(consoleSettings && { console: consoleSettings }),
    },
  };
}
