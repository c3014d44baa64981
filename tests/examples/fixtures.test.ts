// Every demo package's fixtures pass with `caplo tool test`: built, run through the real runner and
// sandbox, reaching a fresh demo shop API through the egress proxy (shop.caplo.test mapped by the
// operator's CAPLO_EGRESS_RESOLVE), with the shop's clock fixed so that slots and sign-in ages are stable.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startShopApi, type ShopApi } from "../../examples/shop-api/src/index.ts";
import { run } from "../../server/src/cli/tool-test.ts";
import { DEMO_DIR, PACKAGES } from "./harness.ts";

const NOW = Date.parse("2026-12-02T12:00:00Z");
const saved = { ...process.env };
let output: string[] = [];
const originalLog = console.log;
const originalError = console.error;

beforeAll(() => {
  // Secret values come from the environment by name, as for an author running caplo tool test.
  process.env.SHOP_API_KEY = "demo-shop-key";
  process.env.SHOP_API_URL = "http://shop.caplo.test";
  console.log = (...args: unknown[]) => void output.push(args.join(" "));
  console.error = (...args: unknown[]) => void output.push(args.join(" "));
});
afterAll(() => {
  console.log = originalLog;
  console.error = originalError;
  for (const key of ["SHOP_API_KEY", "SHOP_API_URL", "CAPLO_EGRESS_RESOLVE"]) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
  // caplo tool test keeps invocation logs in DIR/.caplo; they are this test's output, not the package's.
  for (const name of PACKAGES) rmSync(join(DEMO_DIR, name, ".caplo"), { recursive: true, force: true });
});

describe("demo package fixtures (caplo tool test)", () => {
  for (const name of PACKAGES) {
    it(`${name}: every fixture passes`, async () => {
      const shop: ShopApi = await startShopApi({ port: 0, now: () => NOW });
      try {
        process.env.CAPLO_EGRESS_RESOLVE = `shop.caplo.test=127.0.0.1:${new URL(shop.url).port}`;
        output = [];
        const code = await run([join(DEMO_DIR, name)]);
        const text = output.join("\n");
        expect(code, text).toBe(0);
        expect(text).toMatch(/\n[1-9][0-9]* passed, 0 failed$/);
        expect(text).not.toContain("✗");
      } finally {
        await shop.close();
      }
    }, 120_000);
  }
});
