// The egress rule, as pure functions: which host names a package may reach, which resolved addresses
// are never reachable, and the operator's host→address map for local development (CAPLO_EGRESS_RESOLVE).
import { isIP } from "node:net";

/** Ports a package may reach: HTTPS and HTTP only. */
export const EGRESS_PORTS: readonly number[] = [443, 80];

export type EgressRefusal = { code: string; message: string };

/**
 * Whether `host` is admitted by the package's `egress` list: an exact name, or `*.suffix` matching any
 * name under suffix but not suffix itself. Comparison is on lowercase names without a trailing dot.
 */
export function isHostListed(host: string, egress: readonly string[]): boolean {
  const name = normalizeHost(host);
  if (!name) return false;
  for (const entry of egress) {
    const rule = entry.toLowerCase();
    if (rule.startsWith("*.")) {
      const suffix = rule.slice(1); // ".example.com"
      if (name.endsWith(suffix) && name.length > suffix.length) return true;
    } else if (name === rule) return true;
  }
  return false;
}

/** Lowercase, without one trailing dot; undefined for anything that is not a plain DNS name. */
export function normalizeHost(host: string): string | undefined {
  let name = host.trim().toLowerCase();
  if (name.endsWith(".")) name = name.slice(0, -1);
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(name)) return undefined;
  if (name.length > 253) return undefined;
  return name;
}

/** An IP literal in any spelling the URL parser or a resolver would accept (v4, v6, bracketed, numeric). */
export function isIpLiteral(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  if (isIP(bare) !== 0) return true;
  // Decimal, hex and octal forms (2130706433, 0x7f000001, 0177.0.0.1) that inet_aton accepts.
  return /^(?:0x[0-9a-f]+|[0-9]+)(?:\.(?:0x[0-9a-f]+|[0-9]+)){0,3}$/i.test(bare);
}

/**
 * Addresses never reachable through the proxy: unspecified, loopback, private, shared, link-local,
 * multicast, reserved, documentation, and IPv6 forms that embed an IPv4 address of those kinds.
 */
export function isForbiddenAddress(address: string): boolean {
  const kind = isIP(address);
  if (kind === 4) return isForbiddenV4(address);
  if (kind === 6) return isForbiddenV6(address);
  return true;
}

function v4Parts(address: string): number[] {
  return address.split(".").map((part) => Number(part));
}

function isForbiddenV4(address: string): boolean {
  const [a = 0, b = 0, c = 0] = v4Parts(address);
  return (
    a === 0 || // this network
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) || // carrier-grade NAT
    (a === 169 && b === 254) || // link-local, cloud metadata
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 0 && c === 0) ||
    (a === 192 && b === 0 && c === 2) ||
    (a === 192 && b === 168) ||
    (a === 198 && (b === 18 || b === 19)) ||
    (a === 198 && b === 51 && c === 100) ||
    (a === 203 && b === 0 && c === 113) ||
    a >= 224 // multicast, reserved, broadcast
  );
}

function expandV6(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = v4Parts(v4[1]);
    text = text.slice(0, -v4[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const left = head ? head.split(":") : [];
  const right = tail !== undefined && tail !== "" ? tail.split(":") : [];
  const fill = tail === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...Array<string>(Math.max(fill, 0)).fill("0"), ...right].map((group) => parseInt(group, 16));
  return groups.length === 8 && groups.every((group) => Number.isInteger(group)) ? groups : undefined;
}

function isForbiddenV6(address: string): boolean {
  const groups = expandV6(address.replace(/%.*$/, ""));
  if (!groups) return true;
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  const embedded = `${g6 >> 8}.${g6 & 255}.${g7 >> 8}.${g7 & 255}`;
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && (g5 === 0 || g5 === 0xffff)) {
    // ::, ::1, IPv4-compatible and IPv4-mapped addresses
    return g5 === 0xffff ? isForbiddenV4(embedded) : true;
  }
  if (g0 === 0x64 && g1 === 0xff9b) return isForbiddenV4(embedded); // NAT64
  if (g0 === 0x2002) return isForbiddenV4(`${g1 >> 8}.${g1 & 255}.${g2 >> 8}.${g2 & 255}`); // 6to4
  return (
    (g0 & 0xfe00) === 0xfc00 || // unique local
    (g0 & 0xffc0) === 0xfe80 || // link-local
    (g0 & 0xffc0) === 0xfec0 || // site-local
    (g0 & 0xff00) === 0xff00 || // multicast
    (g0 === 0x2001 && g1 === 0x0db8) || // documentation
    (g0 === 0x2001 && g1 < 0x200) // Teredo, benchmarking, ORCHID and other special-purpose space
  );
}

/** One operator mapping: connections to `host` (on any admitted port) go to `address:port`. */
export type ResolveOverride = { host: string; address: string; port: number };

/**
 * Parses the operator's CAPLO_EGRESS_RESOLVE: `host=address:port` entries separated by commas, for
 * local development and the demo (for example `shop.caplo.test=127.0.0.1:4100`). Only the operator sets
 * it; a mapped host must still be in the package's egress list, and the mapped address is exempt from
 * the private-address rule because the operator chose it.
 */
export function parseResolveOverrides(text: string | undefined): { overrides: ResolveOverride[]; errors: EgressRefusal[] } {
  const overrides: ResolveOverride[] = [];
  const errors: EgressRefusal[] = [];
  for (const raw of (text ?? "").split(",")) {
    const entry = raw.trim();
    if (!entry) continue;
    const match = /^([^=\s]+)=(\[[0-9a-fA-F:.]+\]|[0-9.]+):([0-9]{1,5})$/.exec(entry);
    const host = match?.[1] ? normalizeHost(match[1]) : undefined;
    const address = match?.[2]?.replace(/^\[|\]$/g, "");
    const port = Number(match?.[3]);
    if (!match || !host || !address || isIP(address) === 0 || port < 1 || port > 65535) {
      errors.push({ code: "egress_resolve_invalid", message: `CAPLO_EGRESS_RESOLVE entry '${entry}' is not host=address:port` });
      continue;
    }
    overrides.push({ host, address, port });
  }
  return { overrides, errors };
}
