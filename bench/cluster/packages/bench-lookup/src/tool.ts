// The benchmarks' read tool: a fixed answer, so the time measured is Caplo's, not a backend's.
import { defineTool } from "@caplo/tools";

export default defineTool({
  name: "get_order",
  description: "Look up one order by its number, for example SO-1002.",
  inputSchema: {
    type: "object",
    properties: { orderId: { type: "string", pattern: "^SO-[0-9]{4}$" } },
    required: ["orderId"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: { orderId: { type: "string" }, status: { type: "string" } },
    required: ["orderId", "status"],
  },
  async handler({ orderId }) {
    return { orderId, status: "shipped" };
  },
});
