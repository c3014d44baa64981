import { describe, expect, it } from "vitest";
import { addressKey } from "./clientAddress.ts";
import { ownOrigins } from "./origins.ts";
import { readWidgetSettings } from "./settings.ts";

describe("widget settings", () => {
  it("defaults: no public origin, no trusted proxy, 30 sockets and 20 new conversations per minute per address, 10 s to say hello", () => {
    expect(readWidgetSettings({})).toEqual({
      ok: true,
      settings: { publicOrigins: [], trustedProxies: [], addressLimits: { socketsPerAddress: 30, conversationsPerMinute: 20 }, helloTimeoutMs: 10_000 },
    });
  });

  it("CAPLO_PUBLIC_URL gives its origin; a URL that is not http(s), or carries credentials, is refused", () => {
    expect(readWidgetSettings({ CAPLO_PUBLIC_URL: "https://caplo.shop.example/base/" })).toMatchObject({ ok: true, settings: { publicOrigins: ["https://caplo.shop.example"] } });
    for (const bad of ["caplo.shop.example", "ftp://caplo.shop.example", "https://user:pw@caplo.shop.example"]) {
      expect(readWidgetSettings({ CAPLO_PUBLIC_URL: bad })).toMatchObject({ ok: false, error: { code: "setting_invalid", path: "CAPLO_PUBLIC_URL" } });
    }
  });

  it("CAPLO_TRUSTED_PROXIES takes addresses and ranges; anything else is refused by name", () => {
    expect(readWidgetSettings({ CAPLO_TRUSTED_PROXIES: "10.0.0.5, 10.0.0.0/8,fd00::/8" })).toMatchObject({ ok: true, settings: { trustedProxies: ["10.0.0.5", "10.0.0.0/8", "fd00::/8"] } });
    for (const bad of ["proxy.internal", "10.0.0.0/33", "10.0.0.1/8/1", "*"]) {
      const read = readWidgetSettings({ CAPLO_TRUSTED_PROXIES: bad });
      expect(read).toMatchObject({ ok: false, error: { code: "setting_invalid", path: "CAPLO_TRUSTED_PROXIES" } });
    }
  });

  it("the limits are whole numbers within their bounds", () => {
    expect(readWidgetSettings({ CAPLO_WIDGET_SOCKETS_PER_ADDRESS: "1", CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE: "1000000", CAPLO_WIDGET_HELLO_TIMEOUT_SECONDS: "600" })).toMatchObject({
      ok: true,
      settings: { addressLimits: { socketsPerAddress: 1, conversationsPerMinute: 1_000_000 }, helloTimeoutMs: 600_000 },
    });
    for (const [name, value] of [["CAPLO_WIDGET_SOCKETS_PER_ADDRESS", "0"], ["CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE", "1000001"], ["CAPLO_WIDGET_HELLO_TIMEOUT_SECONDS", "601"], ["CAPLO_WIDGET_HELLO_TIMEOUT_SECONDS", "1.5"]] as const) {
      expect(readWidgetSettings({ [name]: value })).toMatchObject({ ok: false, error: { code: "setting_invalid", path: name } });
    }
  });

  it("CAPLO_CONSOLE_PORT puts the console on a port of its own, with CAPLO_CONSOLE_PUBLIC_URL's origin; each refused by name when wrong", () => {
    expect(readWidgetSettings({ CAPLO_CONSOLE_PORT: "8081" })).toMatchObject({ ok: true, settings: { console: { port: 8081, publicOrigins: [] } } });
    expect(readWidgetSettings({ CAPLO_CONSOLE_PORT: "0", CAPLO_CONSOLE_PUBLIC_URL: "https://console.shop.example/x" })).toMatchObject({ ok: true, settings: { console: { port: 0, publicOrigins: ["https://console.shop.example"] } } });
    expect(readWidgetSettings({ CAPLO_CONSOLE_PORT: "65535" })).toMatchObject({ ok: true, settings: { console: { port: 65_535 } } });
    for (const [env, path] of [
      [{ CAPLO_CONSOLE_PORT: "65536" }, "CAPLO_CONSOLE_PORT"],
      [{ CAPLO_CONSOLE_PORT: "console" }, "CAPLO_CONSOLE_PORT"],
      [{ CAPLO_CONSOLE_PUBLIC_URL: "https://console.shop.example" }, "CAPLO_CONSOLE_PUBLIC_URL"],
      [{ CAPLO_CONSOLE_PORT: "8081", CAPLO_CONSOLE_PUBLIC_URL: "console.shop.example" }, "CAPLO_CONSOLE_PUBLIC_URL"],
      [{ CAPLO_CONSOLE_PORT: "8081", CAPLO_PUBLIC_URL: "https://shop.example", CAPLO_CONSOLE_PUBLIC_URL: "https://shop.example/console" }, "CAPLO_CONSOLE_PUBLIC_URL"],
    ] as const) {
      expect(readWidgetSettings(env), JSON.stringify(env)).toMatchObject({ ok: false, error: { code: "setting_invalid", path } });
    }
    // Not the gateway's own port, however that was given (--port or CAPLO_PORT); 0 picks a free one for each.
    expect(readWidgetSettings({ CAPLO_CONSOLE_PORT: "8080" }, 8080)).toMatchObject({ ok: false, error: { code: "setting_invalid", path: "CAPLO_CONSOLE_PORT" } });
    expect(readWidgetSettings({ CAPLO_CONSOLE_PORT: "0" }, 0)).toMatchObject({ ok: true, settings: { console: { port: 0 } } });
    expect(readWidgetSettings({}).ok && "console" in (readWidgetSettings({}) as { settings: object }).settings).toBe(false);
  });
});

describe("own origins and client addresses", () => {
  it("own origins: the configured ones, then the listening address as a browser writes it (never a host name it was not given)", () => {
    expect(ownOrigins(["https://caplo.shop.example"], { host: "127.0.0.1", port: 8080 })).toEqual(["https://caplo.shop.example", "http://127.0.0.1:8080"]);
    expect(ownOrigins([], { host: "::1", port: 8080 })).toEqual(["http://[::1]:8080"]);
    expect(ownOrigins([], { host: "::", port: 80 })).toEqual(["http://127.0.0.1", "http://localhost", "http://[::1]"]);
  });

  it("an IPv6 client counts by its /64; IPv4 by its address", () => {
    expect(addressKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8:1:2:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:0db8:0001:0002::1")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(addressKey("203.0.113.7")).toBe("203.0.113.7");
  });
});
