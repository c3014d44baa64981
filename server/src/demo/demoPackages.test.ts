import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startDemoShop } from "../../../examples/shop-api/src/demo.ts";
import { buildPackage } from "../build/index.ts";
import { ROOT } from "./demo.ts";
import { demoPackageDirs, withShopPort } from "./demoPackages.ts";

const COPY_ROOT = join(ROOT, "tests", "artifacts", "demo-packages");
const DEMO = join(ROOT, "examples", "demo");
const demoDirs = ["help", "invoices", "orders", "stores"].map((name) => join(DEMO, name));
afterAll(() => rmSync(COPY_ROOT, { recursive: true, force: true }));

describe("the demo's page origins follow the shop's port", () => {
  it("moves http://127.0.0.1:4100 and http://localhost:4100 to the port, and nothing else", () => {
    const text = "origins:\n  - https://shop.caplo.test\n  - http://127.0.0.1:4100\n  - http://localhost:4100/\n  - http://127.0.0.1:41000\n  - https://localhost:4100\n";
    expect(withShopPort(text, 38123)).toBe("origins:\n  - https://shop.caplo.test\n  - http://127.0.0.1:38123\n  - http://localhost:38123/\n  - http://127.0.0.1:41000\n  - https://localhost:4100\n");
  });

  it("on the default port 4100 every package is built from its own folder", () => {
    const prepared = demoPackageDirs(demoDirs, 4100, COPY_ROOT);
    expect(prepared.dirs).toEqual(demoDirs);
    expect(prepared.copied).toEqual([]);
  });

  it("on another port the help package is built from a copy naming it, whose release tool lists those origins; stopping removes the copy", async () => {
    // The shop on a free port, as `caplo demo --shop-port 0` starts it.
    const shop = await startDemoShop({ port: 0 });
    try {
      const port = Number(new URL(shop.shop.url).port);
      const prepared = demoPackageDirs(demoDirs, port, COPY_ROOT);
      const copy = join(COPY_ROOT, `shop-${port}`, "help");
      expect(prepared.dirs).toEqual([copy, ...demoDirs.slice(1)]);
      expect(readFileSync(join(copy, "src", "tool.ts"), "utf8")).toBe(readFileSync(join(DEMO, "help", "src", "tool.ts"), "utf8"));
      expect(existsSync(join(copy, ".caplo"))).toBe(false);
      const built = await buildPackage(copy);
      expect(built.ok ? [] : built.errors).toEqual([]);
      if (!built.ok) return;
      const result = built.version.tools[0]!.policy.presentation?.result;
      expect(result && "page" in result ? result.page?.origins : undefined).toEqual(["https://shop.caplo.test", `http://127.0.0.1:${port}`, `http://localhost:${port}`]);
      // The help article's link the shop gives is on one of them.
      const articles = await fetch(`${shop.shop.url}/help-articles?q=refund`, { headers: { authorization: `Bearer ${shop.shop.apiKey}` } });
      const first = ((await articles.json()) as { articles: { url: string }[] }).articles[0]!;
      expect(new URL(first.url).origin).toBe(`http://127.0.0.1:${port}`);
      prepared.remove();
      expect(existsSync(copy)).toBe(false);
    } finally {
      await shop.shop.close();
    }
  }, 60_000);
});
