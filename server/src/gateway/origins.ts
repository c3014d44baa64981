// Which origins are this server itself (the widget app's iframe is served by it, so its socket's Origin is
// one of them). Never judged by the request's Host header: a DNS-rebinding page sends its own name as both
// Origin and Host. The configured public origins (CAPLO_PUBLIC_URL), plus the address the server listens on
// as a browser on this machine would write it; a wildcard listen (0.0.0.0, ::) adds only the loopback names.

const WILDCARDS = new Set(["0.0.0.0", "::", ""]);

/** `http://host:port` as a browser writes the origin (IPv6 in brackets). */
function httpOrigin(host: string, port: number): string {
  return new URL(`http://${host.includes(":") ? `[${host}]` : host}:${port}`).origin;
}

/** The origins this server answers as: configured first, then those of the listening address. */
export function ownOrigins(configured: readonly string[], listen: { host: string; port: number }): string[] {
  const hosts = WILDCARDS.has(listen.host) ? ["127.0.0.1", "localhost", "::1"] : [listen.host];
  return [...new Set([...configured, ...hosts.map((host) => httpOrigin(host, listen.port))])];
}
