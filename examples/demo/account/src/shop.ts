// How this package reaches the demo shop API: the base URL (the SHOP_API_URL secret, or the declared
// egress host) and the service key, both from the call's secrets.
export const DEFAULT_SHOP_URL = "https://shop.caplo.test";

export type SecretReader = { get(name: string): string; has(name: string): boolean };

export function shopUrl(secrets: SecretReader, path: string): string {
  const base = secrets.has("SHOP_API_URL") ? secrets.get("SHOP_API_URL") : DEFAULT_SHOP_URL;
  return `${base.replace(/\/+$/, "")}${path}`;
}

export function shopHeaders(secrets: SecretReader, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${secrets.get("SHOP_API_KEY")}`, accept: "application/json", ...extra };
}
