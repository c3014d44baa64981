// The seeds' function package, exactly as "Define tools and use the call context" shows it.
import { defineTool } from "@caplo/tools";

type Input = { orderId: string };
type Output = { orderId: string; status: string; total: number; currency: string };

export default defineTool<Input, Output>({
  name: "get_order",
  description: "Look up an order by its number, for example SO-1002. Returns its status and total.",
  inputSchema: {
    type: "object",
    properties: { orderId: { type: "string", pattern: "^SO-[0-9]{4}$", description: "Order number" } },
    required: ["orderId"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      orderId: { type: "string" },
      status: { type: "string", enum: ["processing", "shipped", "delivered", "cancelled"] },
      total: { type: "number" },
      currency: { type: "string" },
    },
    required: ["orderId", "status", "total", "currency"],
  },
  async handler({ orderId }, { secrets, signal, log }) {
    const response = await fetch(`https://api.shop.example/orders/${encodeURIComponent(orderId)}`, {
      headers: { authorization: `Bearer ${secrets.get("SHOP_API_KEY")}` },
      signal,
    });
    if (!response.ok) throw new Error(`order lookup failed with ${response.status}`);
    const order = await response.json();
    log.info("order found", { orderId, status: order.status });
    return { orderId: order.id, status: order.status, total: order.total, currency: order.currency };
  },
});
