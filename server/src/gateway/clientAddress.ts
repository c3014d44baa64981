// Who a WebSocket's client is, for the per-address limits: the TCP peer's address, or, only when that peer
// is a proxy the operator trusts (CAPLO_TRUSTED_PROXIES), the address it names in X-Forwarded-For.
// X-Forwarded-For is never believed from anyone else: any client can send the header.
import { BlockList, isIP } from "node:net";
import type { IncomingMessage } from "node:http";
import { parseProxyEntry } from "./settings.ts";

export type TrustedProxies = { has(address: string): boolean };

/** The trusted proxies as a lookup (an address, or a range written address/prefix). */
export function trustedProxies(entries: readonly string[]): TrustedProxies {
  const list = new BlockList();
  for (const entry of entries) {
    const parsed = parseProxyEntry(entry);
    if (!parsed) throw new Error(`not a proxy address or range: ${entry}`);
    list.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  return {
    has: (address) => {
      const plain = unmapped(address);
      const version = isIP(plain);
      return version !== 0 && entries.length > 0 && list.check(plain, version === 4 ? "ipv4" : "ipv6");
    },
  };
}

/** An IPv4 address written as IPv6 (::ffff:1.2.3.4) as plain IPv4; others unchanged. */
function unmapped(address: string): string {
  const match = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return match ? match[1]! : address;
}

/**
 * The client's address: the socket's peer; behind trusted proxies, X-Forwarded-For read from the right,
 * skipping the trusted proxies, up to the first address that is not one (what a client wrote to the left
 * of that is its own claim and ignored).
 */
export function clientAddress(req: IncomingMessage, proxies: TrustedProxies): string {
  const peer = unmapped(req.socket.remoteAddress ?? "");
  if (!proxies.has(peer)) return peer;
  const header = req.headers["x-forwarded-for"];
  const hops = (Array.isArray(header) ? header.join(",") : (header ?? "")).split(",").map((hop) => unmapped(hop.trim()));
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = hops[index]!;
    if (isIP(hop) === 0) return peer; // a hop that is not an address: the chain cannot be read, count the proxy
    if (!proxies.has(hop)) return hop;
  }
  return hops[0] && isIP(hops[0]) ? hops[0] : peer;
}

/**
 * The key the limits count by: an IPv4 address, or an IPv6 address's /64 network (one customer line gets a
 * whole /64, so counting single IPv6 addresses would let one client take as many as it likes).
 */
export function addressKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const [head = "", tail = ""] = address.toLowerCase().split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = address.includes("::") ? [...left, ...Array(8 - left.length - right.length).fill("0"), ...right] : left;
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}
