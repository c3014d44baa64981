import { describe, expect, it } from "vitest";
import { decideTarget } from "./egressProxy.ts";
import { isForbiddenAddress, isHostListed, isIpLiteral, parseResolveOverrides } from "./egressRule.ts";

describe("egress host rule", () => {
  it("admits exact names, case- and trailing-dot-insensitively, and nothing else", () => {
    expect(isHostListed("api.shop.example", ["api.shop.example"])).toBe(true);
    expect(isHostListed("API.Shop.Example.", ["api.shop.example"])).toBe(true);
    expect(isHostListed("evil-api.shop.example", ["api.shop.example"])).toBe(false);
    expect(isHostListed("api.shop.example.evil.test", ["api.shop.example"])).toBe(false);
  });
  it("*.suffix admits names under the suffix but not the suffix itself", () => {
    expect(isHostListed("a.shop.example", ["*.shop.example"])).toBe(true);
    expect(isHostListed("a.b.shop.example", ["*.shop.example"])).toBe(true);
    expect(isHostListed("shop.example", ["*.shop.example"])).toBe(false);
    expect(isHostListed("badshop.example", ["*.shop.example"])).toBe(false);
  });
  it("an empty list admits nothing", () => {
    expect(isHostListed("api.shop.example", [])).toBe(false);
  });
  it("recognises IP literals in every spelling", () => {
    for (const literal of ["127.0.0.1", "[::1]", "::ffff:7f00:1", "2130706433", "0x7f000001", "0177.0.0.1", "10.1"]) {
      expect(isIpLiteral(literal), literal).toBe(true);
    }
    expect(isIpLiteral("api.shop.example")).toBe(false);
  });
});

describe("forbidden addresses", () => {
  it("refuses loopback, private, link-local, CGNAT, multicast and v6 forms embedding them", () => {
    for (const address of [
      "0.0.0.0", "127.0.0.1", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
      "224.0.0.1", "255.255.255.255", "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "fc00::1", "fd12::1", "fe80::1", "ff02::1",
      "64:ff9b::a00:1", "2002:a00:1::", "2001:db8::1",
    ]) {
      expect(isForbiddenAddress(address), address).toBe(true);
    }
  });
  it("admits public addresses, including the neighbours of private ranges", () => {
    for (const address of ["93.184.216.34", "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1", "2606:4700::1111", "::ffff:93.184.216.34"]) {
      expect(isForbiddenAddress(address), address).toBe(false);
    }
  });
});

describe("CONNECT decisions", () => {
  const resolve = (addresses: string[]) => async () => addresses;
  it("connects to the first public address a listed name resolves to", async () => {
    const decision = await decideTarget("api.shop.example:443", { egress: ["api.shop.example"], resolve: resolve(["10.0.0.5", "93.184.216.34"]) });
    expect(decision).toEqual({ ok: true, host: "api.shop.example", address: "93.184.216.34", port: 443, requestedPort: 443 });
  });
  it("refuses a listed name that resolves only to private addresses", async () => {
    const decision = await decideTarget("api.shop.example:443", { egress: ["api.shop.example"], resolve: resolve(["127.0.0.1", "::1"]) });
    expect(decision).toMatchObject({ ok: false, refusal: { code: "egress_private_address" } });
  });
  it("admits 443 and 80 only", async () => {
    const options = { egress: ["api.shop.example"], resolve: resolve(["93.184.216.34"]) };
    expect(await decideTarget("api.shop.example:80", options)).toMatchObject({ ok: true });
    expect(await decideTarget("api.shop.example:8443", options)).toMatchObject({ ok: false, refusal: { code: "egress_port" } });
    expect(await decideTarget("api.shop.example:22", options)).toMatchObject({ ok: false, refusal: { code: "egress_port" } });
  });
  it("says a package without egress has no network", async () => {
    expect(await decideTarget("api.shop.example:443", { egress: [] })).toMatchObject({ ok: false, refusal: { message: expect.stringContaining("declares no egress") } });
  });
  it("uses the operator's override for a listed host only", async () => {
    const overrides = [{ host: "shop.caplo.test", address: "127.0.0.1", port: 4100 }];
    expect(await decideTarget("shop.caplo.test:80", { egress: ["shop.caplo.test"], overrides })).toEqual({ ok: true, host: "shop.caplo.test", address: "127.0.0.1", port: 4100, requestedPort: 80 });
    expect(await decideTarget("shop.caplo.test:80", { egress: ["other.test"], overrides })).toMatchObject({ ok: false, refusal: { code: "egress_host_not_listed" } });
  });
});

describe("CAPLO_EGRESS_RESOLVE", () => {
  it("parses host=address:port entries and reports bad ones by code", () => {
    expect(parseResolveOverrides("shop.caplo.test=127.0.0.1:4100, api.test=[::1]:8080")).toEqual({
      overrides: [
        { host: "shop.caplo.test", address: "127.0.0.1", port: 4100 },
        { host: "api.test", address: "::1", port: 8080 },
      ],
      errors: [],
    });
    expect(parseResolveOverrides("shop.caplo.test=localhost:4100").errors[0]?.code).toBe("egress_resolve_invalid");
    expect(parseResolveOverrides("shop.caplo.test=127.0.0.1:70000").errors[0]?.code).toBe("egress_resolve_invalid");
    expect(parseResolveOverrides(undefined)).toEqual({ overrides: [], errors: [] });
  });
});
