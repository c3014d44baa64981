// The seeds' write tool, exactly as "Write tools safely" shows it: the handler reports applied, pending
// or rejected (and throws when unsure), and the status handler answers status checks.
import { applied, defineTool, pending, rejected } from "@caplo/tools";

export default defineTool({
  name: "cancel_order",
  description: "Cancel an order that has not shipped yet, by its number, for example SO-1002.",
  inputSchema: {
    type: "object",
    properties: { orderId: { type: "string", pattern: "^SO-[0-9]{4}$", description: "Order number" } },
    required: ["orderId"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: { orderId: { type: "string" }, status: { type: "string" } },
    required: ["orderId", "status"],
  },
  async handler({ orderId }, { secrets, signal, idempotencyKey }) {
    const response = await fetch(`https://api.shop.example/orders/${encodeURIComponent(orderId)}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${secrets.get("SHOP_API_KEY")}`, "idempotency-key": idempotencyKey ?? "" },
      signal,
    });
    const body = await response.json();
    if (response.status === 200) return { orderId, status: body.status };
    if (response.status === 202) return pending(body.operationId, "The cancellation is being processed.");
    if (response.status === 409) return rejected(body.reason ?? "This order can no longer be cancelled.");
    throw new Error(`cancel failed with ${response.status}`);
  },
  async status({ operationRef }, { secrets, signal, idempotencyKey }) {
    const query = new URLSearchParams({ key: idempotencyKey ?? "", ...(operationRef && { operation: operationRef }) });
    const response = await fetch(`https://api.shop.example/operations?${query}`, {
      headers: { authorization: `Bearer ${secrets.get("SHOP_API_KEY")}` },
      signal,
    });
    if (!response.ok) throw new Error(`status lookup failed with ${response.status}`);
    const body = await response.json();
    if (body.status === "applied") return applied({ orderId: body.orderId, status: "cancelled" });
    if (body.status === "not_applied") return rejected("The order was not cancelled.");
    if (body.status === "pending") return pending(body.operationId);
    throw new Error(`unexpected status ${body.status}`);
  },
});
