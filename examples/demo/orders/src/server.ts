// The orders MCP package: get_order, list_orders, cancel_order (a write with typed outcomes in _meta
// and a caplo/status check) and add_order_note (a write that needs no confirmation).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { EFFECT_META_KEY, EFFECT_OUTCOME_CAPABILITY, OPERATION_STATUS_CAPABILITY, STATUS_METHOD, context } from "@caplo/tools";
import { z } from "zod";
import { shopHeaders, shopUrl } from "./shop.ts";

const orderId = z.string().regex(/^SO-[0-9]{4}$/).describe("Order number, for example SO-1002");
const orderStatus = z.enum(["processing", "shipped", "delivered", "cancelled"]);

type ShopOrder = { id: string; status: string; total: number; currency: string; placedAt: string; itemCount: number; paymentCard: string };

/** A write result that tells Caplo what happened: applied, not_applied or pending. */
function outcome(
  kind: "applied" | "not_applied" | "pending",
  text: string,
  structuredContent?: Record<string, unknown>,
  operationRef?: string,
): CallToolResult {
  return {
    content: [{ type: "text", text }],
    ...(structuredContent ? { structuredContent } : {}),
    ...(kind === "not_applied" ? { isError: true } : {}),
    _meta: { [EFFECT_META_KEY]: { version: 1, outcome: kind, ...(operationRef ? { operationRef } : {}) } },
  };
}

/** An amount as the customer reads it, for example €39.80 (a receipt shows values as they are). */
const moneyText = (amount: number, currency: string) => new Intl.NumberFormat("en-IE", { style: "currency", currency }).format(amount);

function cancelled(body: { orderId: string; status: string; refundAmount?: number; currency?: string; refundCard?: string }) {
  return {
    orderId: body.orderId,
    status: body.status,
    ...(body.refundAmount !== undefined ? { refundAmount: body.refundAmount } : {}),
    ...(body.currency ? { currency: body.currency } : {}),
    ...(body.refundAmount !== undefined && body.currency ? { refund: moneyText(body.refundAmount, body.currency) } : {}),
    ...(body.refundCard ? { refundCard: body.refundCard } : {}),
  };
}

/** The caplo/status request (STATUS_METHOD): params name and operationRef, the call context in _meta. */
const statusRequestSchema = z.object({
  method: z.literal(STATUS_METHOD),
  params: z.object({ name: z.string(), operationRef: z.string().optional(), _meta: z.record(z.string(), z.unknown()).optional() }),
});

export function createServer() {
  // logging lets context(extra).log send log lines; the experimental capabilities tell Caplo that write
  // results carry their outcome in _meta and that this server answers caplo/status.
  const server = new McpServer(
    { name: "orders", version: "1.0.0" },
    { capabilities: { tools: {}, logging: {}, experimental: { ...EFFECT_OUTCOME_CAPABILITY, ...OPERATION_STATUS_CAPABILITY } } },
  );

  server.registerTool(
    "get_order",
    {
      description: "Look up one order by its number, for example SO-1002: status, total, when it was placed and how many items.",
      inputSchema: z.strictObject({ orderId }),
      outputSchema: {
        orderId: z.string(),
        status: orderStatus,
        total: z.number(),
        currency: z.string(),
        placedAt: z.iso.datetime(),
        itemCount: z.number().int(),
        paymentCard: z.string(),
      },
    },
    async ({ orderId }, extra) => {
      const { secrets, signal, log } = context(extra);
      const response = await fetch(shopUrl(secrets, `/orders/${encodeURIComponent(orderId)}`), { headers: shopHeaders(secrets), signal });
      if (response.status === 404) {
        return { isError: true, content: [{ type: "text", text: `There is no order ${orderId}. Check the number and try again.` }] };
      }
      if (!response.ok) throw new Error(`order lookup failed with ${response.status}`);
      const order = (await response.json()) as ShopOrder;
      log.info("order found", { orderId, status: order.status });
      const result = { orderId: order.id, status: order.status as z.infer<typeof orderStatus>, total: order.total, currency: order.currency, placedAt: order.placedAt, itemCount: order.itemCount, paymentCard: order.paymentCard };
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
    },
  );

  server.registerTool(
    "list_orders",
    {
      description: "List a customer's orders by the email address they ordered with, newest last.",
      inputSchema: z.strictObject({ email: z.string().email().max(254).describe("The email address the customer ordered with") }),
      outputSchema: {
        orders: z.array(
          z.object({ orderId: z.string(), status: orderStatus, total: z.number(), currency: z.string(), placedAt: z.iso.datetime() }),
        ),
      },
    },
    async ({ email }, extra) => {
      const { secrets, signal, log } = context(extra);
      const response = await fetch(shopUrl(secrets, `/orders?${new URLSearchParams({ email })}`), { headers: shopHeaders(secrets), signal });
      if (response.status === 404) return { isError: true, content: [{ type: "text", text: "No customer has that email address." }] };
      if (!response.ok) throw new Error(`order list failed with ${response.status}`);
      const body = (await response.json()) as { orders: ShopOrder[] };
      log.info("orders listed", { count: body.orders.length });
      const result = {
        orders: body.orders.map((order) => ({ orderId: order.id, status: order.status as z.infer<typeof orderStatus>, total: order.total, currency: order.currency, placedAt: order.placedAt })),
      };
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
    },
  );

  server.registerTool(
    "cancel_order",
    {
      description: "Cancel an order that has not shipped yet. The customer reviews and confirms before it runs.",
      inputSchema: z.strictObject({ orderId, reason: z.string().max(200).optional().describe("Why the customer cancels, in their words") }),
      outputSchema: {
        orderId: z.string(),
        status: z.string(),
        refundAmount: z.number().optional(),
        currency: z.string().optional(),
        refund: z.string().optional(),
        refundCard: z.string().optional(),
      },
    },
    async ({ orderId, reason }, extra) => {
      const { secrets, signal, idempotencyKey, log } = context(extra);
      const response = await fetch(shopUrl(secrets, `/orders/${encodeURIComponent(orderId)}/cancel`), {
        method: "POST",
        headers: shopHeaders(secrets, { "idempotency-key": idempotencyKey ?? "", "content-type": "application/json" }),
        body: JSON.stringify(reason ? { reason } : {}),
        signal,
      });
      if (response.status === 200) {
        const body = cancelled((await response.json()) as Parameters<typeof cancelled>[0]);
        log.info("order cancelled", { orderId });
        return outcome("applied", `Order ${orderId} is cancelled.`, body);
      }
      if (response.status === 202) {
        const body = (await response.json()) as { operationId: string };
        log.info("cancellation pending", { orderId });
        return outcome("pending", "The cancellation is being processed.", { orderId, status: "pending" }, body.operationId);
      }
      if (response.status === 409) {
        const body = (await response.json()) as { reason?: string };
        return outcome("not_applied", body.reason ?? "This order can no longer be cancelled.");
      }
      // 500, 422, a hang cut off by the deadline: the change may or may not have happened.
      throw new Error(`cancel failed with ${response.status}`);
    },
  );

  server.registerTool(
    "add_order_note",
    {
      description: "Add a delivery note to an order, for example where to leave the parcel.",
      inputSchema: z.strictObject({ orderId, text: z.string().min(1).max(500).describe("The note, in the customer's words") }),
      outputSchema: { orderId: z.string(), noteCount: z.number().int(), note: z.string().optional() },
    },
    async ({ orderId, text }, extra) => {
      const { secrets, signal, idempotencyKey } = context(extra);
      const response = await fetch(shopUrl(secrets, `/orders/${encodeURIComponent(orderId)}/notes`), {
        method: "POST",
        headers: shopHeaders(secrets, { "idempotency-key": idempotencyKey ?? "", "content-type": "application/json" }),
        body: JSON.stringify({ text }),
        signal,
      });
      if (response.status === 404) return outcome("not_applied", `There is no order ${orderId}.`);
      if (response.status !== 201) throw new Error(`adding the note failed with ${response.status}`);
      const body = (await response.json()) as { orderId: string; noteCount: number };
      // The note as the shop took it: the customer's receipt shows it (no card showed it before it ran).
      return outcome("applied", "The note is on the order.", { orderId: body.orderId, noteCount: body.noteCount, note: text });
    },
  );

  // Status checks for pending or unknown writes: Caplo sends caplo/status with the tool name, the
  // operationRef a pending result gave (if any) and the original idempotency key in the call context.
  server.server.setRequestHandler(statusRequestSchema, async (request, extra) => {
    try {
      return await checkStatus(request.params.name, request.params.operationRef, context(extra));
    } catch (error) {
      // The shop could not tell: an error result, so the write stays unknown until the next check.
      return { isError: true, content: [{ type: "text", text: error instanceof Error ? error.message : String(error) }] };
    }
  });

  return server;
}

/** One status check: what the shop says about the write with this idempotency key (and operation id). */
async function checkStatus(name: string, operationRef: string | undefined, { secrets, signal, idempotencyKey }: ReturnType<typeof context>): Promise<CallToolResult> {
  if (name !== "cancel_order" && name !== "add_order_note") throw new Error(`no status check for ${name}`);
  const query = new URLSearchParams({ key: idempotencyKey ?? "", ...(operationRef && { operation: operationRef }) });
  const response = await fetch(shopUrl(secrets, `/operations?${query}`), { headers: shopHeaders(secrets), signal });
  if (!response.ok) throw new Error(`status lookup failed with ${response.status}`);
  const body = (await response.json()) as { status: string; operationId: string; target: string; reason?: string; result?: Record<string, unknown> };
  if (body.status === "applied") {
    const result = name === "cancel_order" ? cancelled({ orderId: body.target, status: "cancelled", ...(body.result ?? {}) }) : { orderId: body.target, ...(body.result ?? {}) };
    return outcome("applied", name === "cancel_order" ? `Order ${body.target} is cancelled.` : "The note is on the order.", result);
  }
  if (body.status === "not_applied") return outcome("not_applied", body.reason ?? "The order was not cancelled.");
  if (body.status === "pending") return outcome("pending", "The cancellation is still being processed.", { orderId: body.target, status: "pending" }, body.operationId);
  throw new Error(`unexpected status ${body.status}`);
}
