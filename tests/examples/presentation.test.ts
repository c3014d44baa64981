// The demo packages' real results, projected by the engine's presentation into channel-neutral result
// messages: every layout gets items with the columns its caplo.yaml lists, and write receipts get their fields.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outboundSchema, parseManifest, toolPolicies, type ToolPolicy } from "@caplo/shared";
import { startShopApi, type ShopApi } from "../../examples/shop-api/src/index.ts";
import { projectResult, receiptFields } from "../../server/src/engine/presentation.ts";
import type { EngineTool } from "../../server/src/engine/release.ts";
import { manifestText, openSession, type Session } from "./harness.ts";

let shop: ShopApi;
const sessions: Session[] = [];
beforeAll(async () => {
  shop = await startShopApi({ port: 0, now: () => Date.parse("2026-12-02T12:00:00Z"), publicUrl: "self" });
});
afterAll(async () => {
  for (const session of sessions) await session.close();
  await shop.close();
});

async function engineTool(pkg: string, tool: string): Promise<{ tool: EngineTool; session: Session }> {
  const parsed = parseManifest(manifestText(pkg));
  if (!parsed.ok) throw new Error("manifest invalid");
  const session = await openSession(pkg, shop.url);
  sessions.push(session);
  const listed = (await session.client.listTools()).tools.find((entry) => entry.name === tool)!;
  const policy = toolPolicies(parsed.manifest, tool).find((entry) => entry.name === tool) as ToolPolicy;
  return {
    session,
    tool: {
      ref: `${pkg}/${tool}`,
      package: pkg,
      tool,
      modelName: `${pkg}__${tool}`,
      packageVersionId: `${pkg}@test`,
      description: listed.description ?? "",
      inputSchema: listed.inputSchema as Record<string, unknown>,
      ...(listed.outputSchema && { outputSchema: listed.outputSchema as Record<string, unknown> }),
      policy,
      hasStatus: false,
    },
  };
}

const READS: [pkg: string, tool: string, args: Record<string, unknown>, layout: string][] = [
  ["orders", "get_order", { orderId: "SO-1004" }, "detail"],
  ["orders", "list_orders", { email: "ana.novak@example.com" }, "table"],
  ["appointments", "find_slots", { service: "fitting", storeId: "ST-LJ1" }, "choices"],
  ["stores", "find_stores", {}, "map"],
  ["tracking", "track_order", { orderId: "SO-1003" }, "timeline"],
  ["plans", "compare_plans", {}, "comparison"],
  ["products", "search_products", { query: "wool" }, "cards"],
  ["returns", "list_returns", { orderId: "SO-1004" }, "list"],
  ["invoices", "get_invoice", { orderId: "SO-1004" }, "detail"],
  ["help", "help_article", { question: "refund" }, "page"],
];

describe("demo results through the engine's presentation", () => {
  for (const [pkg, name, args, layout] of READS) {
    it(`${pkg}/${name} shows as a ${layout} with every listed column filled`, async () => {
      const { tool, session } = await engineTool(pkg, name);
      const result = await session.call(name, args);
      expect(result.isError ?? false).toBe(false);
      const message = projectResult(tool, result.structuredContent as Record<string, unknown>, "m1", "c1");
      expect(outboundSchema.parse(message)).toBeTruthy();
      expect(message!.layout).toBe(layout);
      expect(message!.items.length).toBeGreaterThan(0);
      const first = message!.items[0]!;
      for (const column of message!.columns) expect(first, `${column.key}`).toHaveProperty(column.key);
      if (layout === "page") expect(message!.page?.urlKey).toBe("url");
    });
  }

  it("a write's receipt shows its fields, card numbers as their last four digits", async () => {
    const { tool, session } = await engineTool("orders", "cancel_order");
    const result = await session.call("cancel_order", { orderId: "SO-1005" }, { idempotencyKey: "receipt-1" });
    const fields = receiptFields(tool, result.structuredContent as Record<string, unknown>);
    expect(fields?.find((field) => field.label === "Refund to card ending")?.value).toBe("1881");
    expect(fields?.find((field) => field.label === "Order")?.value).toBe("SO-1005");
  });
});
