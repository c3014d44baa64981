// The seeds' example packages run unchanged: their handlers talk to a fake Shop API on loopback (fetch
// to https://api.shop.example is sent there; everything else about the HTTP exchange is real), and the
// results map to the outcomes the seeds promise.
import { createServer, type IncomingMessage, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CALL_META_KEY, EFFECT_META_KEY, STATUS_METHOD } from "@caplo/tools";
import cancelOrder from "./cancel-order/src/tool.ts";
import orderLookup from "./order-lookup/src/tool.ts";
import { createServer as createOrdersServer } from "./orders/src/server.ts";

type Seen = { method: string; url: string; authorization?: string; idempotencyKey?: string };
const seen: Seen[] = [];
let api: HttpServer;
let base = "";
const realFetch = globalThis.fetch;

function reply(request: IncomingMessage): [number, unknown] {
  const url = new URL(request.url ?? "/", "http://x");
  const order = url.pathname.split("/")[2];
  if (request.method === "GET" && url.pathname.startsWith("/orders/")) {
    return order === "SO-1002" ? [200, { id: "SO-1002", status: "shipped", total: 42.5, currency: "EUR" }] : [404, { error: "not found" }];
  }
  if (request.method === "POST" && url.pathname.endsWith("/cancel")) {
    if (order === "SO-1001") return [200, { status: "cancelled" }];
    if (order === "SO-1003") return [202, { operationId: "op_123" }];
    if (order === "SO-1004") return [409, { reason: "The order has shipped." }];
    return [500, { error: "boom" }];
  }
  if (request.method === "GET" && url.pathname === "/operations") {
    const operation = url.searchParams.get("operation");
    if (operation === "op_applied") return [200, { status: "applied", orderId: "SO-1003" }];
    if (operation === "op_pending") return [200, { status: "pending", operationId: "op_pending" }];
    return [200, { status: "not_applied" }];
  }
  return [404, {}];
}

beforeAll(async () => {
  api = createServer((request, response) => {
    seen.push({ method: request.method!, url: request.url!, authorization: request.headers.authorization, idempotencyKey: request.headers["idempotency-key"] as string | undefined });
    const [status, body] = reply(request);
    response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  // Send the seeds' https://api.shop.example to the fake API; refuse any other host.
  globalThis.fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.host !== "api.shop.example") return Promise.reject(new Error(`unexpected host ${url.host}`));
    return realFetch(`${base}${url.pathname}${url.search}`, init);
  };
});
afterAll(async () => {
  globalThis.fetch = realFetch;
  await new Promise((resolve) => api.close(resolve));
});

async function connect(server: { connect: (transport: InMemoryTransport) => Promise<void> }) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "runner", version: "1" });
  await server.connect(serverSide);
  await client.connect(clientSide);
  return client;
}
const meta = (extra: Record<string, unknown> = {}) => ({ [CALL_META_KEY]: { invocationId: "inv_s", deadline: new Date(Date.now() + 10_000).toISOString(), secrets: { SHOP_API_KEY: "sk_shop" }, ...extra } });
const call = (client: Client, name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  client.request({ method: "tools/call", params: { name, arguments: args, _meta: meta(extra) } }, CallToolResultSchema);

describe("the seeds' example packages run unchanged", () => {
  it("get_order (function) fetches with the secret and returns the structured order", async () => {
    const client = await connect(orderLookup.createServer());
    const result = await call(client, "get_order", { orderId: "SO-1002" });
    expect(result.structuredContent).toEqual({ orderId: "SO-1002", status: "shipped", total: 42.5, currency: "EUR" });
    expect(seen.at(-1)).toMatchObject({ method: "GET", url: "/orders/SO-1002", authorization: "Bearer sk_shop" });
    expect(await call(client, "get_order", { orderId: "SO-9999" })).toMatchObject({ isError: true, content: [{ text: "order lookup failed with 404" }] });
    await client.close();
  });

  it("cancel_order (function) maps 200, 202, 409 and 500 to applied, pending, not applied and unknown, sending the idempotency key", async () => {
    const client = await connect(cancelOrder.createServer());
    const outcome = async (orderId: string) => (await call(client, "cancel_order", { orderId }, { idempotencyKey: `key_${orderId}` }))._meta?.[EFFECT_META_KEY];
    expect(await outcome("SO-1001")).toEqual({ version: 1, outcome: "applied" });
    expect(seen.at(-1)).toMatchObject({ method: "POST", url: "/orders/SO-1001/cancel", idempotencyKey: "key_SO-1001" });
    expect(await outcome("SO-1003")).toEqual({ version: 1, outcome: "pending", operationRef: "op_123" });
    expect(await outcome("SO-1004")).toEqual({ version: 1, outcome: "not_applied" });
    expect(await outcome("SO-1005")).toBeUndefined();
    await client.close();
  });

  it("cancel_order's status handler answers status checks with the original idempotency key", async () => {
    const client = await connect(cancelOrder.createServer());
    const status = (operationRef: string) =>
      client.request({ method: STATUS_METHOD, params: { name: "cancel_order", operationRef, _meta: meta({ idempotencyKey: "key_1" }) } } as never, CallToolResultSchema);
    expect(await status("op_applied")).toMatchObject({ structuredContent: { orderId: "SO-1003", status: "cancelled" }, _meta: { [EFFECT_META_KEY]: { outcome: "applied" } } });
    expect(seen.at(-1)!.url).toBe("/operations?key=key_1&operation=op_applied");
    expect(await status("op_pending")).toMatchObject({ _meta: { [EFFECT_META_KEY]: { outcome: "pending", operationRef: "op_pending" } } });
    expect(await status("op_other")).toMatchObject({ isError: true, _meta: { [EFFECT_META_KEY]: { outcome: "not_applied" } } });
    await client.close();
  });

  it("orders (MCP) serves get_order and cancel_order with context(extra)", async () => {
    const client = await connect(createOrdersServer());
    expect((await call(client, "get_order", { orderId: "SO-1002" })).structuredContent).toEqual({ orderId: "SO-1002", status: "shipped" });
    expect((await call(client, "cancel_order", { orderId: "SO-1003" }, { idempotencyKey: "k" }))._meta).toEqual({ [EFFECT_META_KEY]: { version: 1, outcome: "pending", operationRef: "op_123" } });
    expect(seen.at(-1)).toMatchObject({ idempotencyKey: "k", authorization: "Bearer sk_shop" });
    await client.close();
  });
});
