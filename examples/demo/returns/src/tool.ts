// list_returns: the returns of one order, as a list with status and a link to the return label.
import { defineTool } from "@caplo/tools";
import { shopHeaders, shopUrl } from "./shop.ts";

type Return = { returnId: string; reason: string; status: string; createdAt: string; labelUrl: string };
type Input = { orderId: string };
type Output = { orderId: string; returns: Return[] };

export default defineTool<Input, Output>({
  name: "list_returns",
  description: "List the returns of an order, for example SO-1004: why, their status, and the return label.",
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
      returns: {
        type: "array",
        maxItems: 20,
        items: {
          type: "object",
          properties: {
            returnId: { type: "string" },
            reason: { type: "string" },
            status: { type: "string", enum: ["requested", "received", "refunded"] },
            createdAt: { type: "string", format: "date-time" },
            labelUrl: { type: "string", format: "uri" },
          },
          required: ["returnId", "reason", "status", "createdAt", "labelUrl"],
        },
      },
    },
    required: ["orderId", "returns"],
  },
  async handler({ orderId }, { secrets, signal }) {
    const response = await fetch(shopUrl(secrets, `/returns?${new URLSearchParams({ orderId })}`), { headers: shopHeaders(secrets), signal });
    if (!response.ok) throw new Error(`returns lookup failed with ${response.status}`);
    const body = (await response.json()) as { returns: (Return & { orderId: string })[] };
    return { orderId, returns: body.returns.map(({ returnId, reason, status, createdAt, labelUrl }) => ({ returnId, reason, status, createdAt, labelUrl })) };
  },
});
