// compare_plans: the membership plans, for the comparison layout (up to four side by side).
import { defineTool } from "@caplo/tools";
import { shopHeaders, shopUrl } from "./shop.ts";

type Plan = { planId: string; name: string; badge: string; monthlyPrice: number; deliveries: string; returnsWindowDays: number; support: string; description: string };
type Input = { focus?: "price" | "delivery" | "returns" };
type Output = { plans: Plan[] };

export default defineTool<Input, Output>({
  name: "compare_plans",
  description: "Compare the shop's membership plans (Basic, Plus, Premium): monthly price, delivery, returns window and support.",
  inputSchema: {
    type: "object",
    properties: { focus: { type: "string", enum: ["price", "delivery", "returns"], description: "What the customer cares about most; orders the plans by it" } },
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      plans: {
        type: "array",
        maxItems: 4,
        items: {
          type: "object",
          properties: {
            planId: { type: "string" },
            name: { type: "string" },
            badge: { type: "string" },
            monthlyPrice: { type: "number" },
            deliveries: { type: "string" },
            returnsWindowDays: { type: "integer" },
            support: { type: "string" },
            description: { type: "string" },
          },
          required: ["planId", "name", "badge", "monthlyPrice", "deliveries", "returnsWindowDays", "support", "description"],
        },
      },
    },
    required: ["plans"],
  },
  async handler({ focus }, { secrets, signal }) {
    const response = await fetch(shopUrl(secrets, "/plans"), { headers: shopHeaders(secrets), signal });
    if (!response.ok) throw new Error(`plan lookup failed with ${response.status}`);
    const body = (await response.json()) as { plans: Plan[] };
    const plans = body.plans.map(({ planId, name, badge, monthlyPrice, deliveries, returnsWindowDays, support, description }) => ({ planId, name, badge, monthlyPrice, deliveries, returnsWindowDays, support, description }));
    if (focus === "returns") plans.sort((a, b) => b.returnsWindowDays - a.returnsWindowDays);
    if (focus === "price") plans.sort((a, b) => a.monthlyPrice - b.monthlyPrice);
    return { plans: plans.slice(0, 4) };
  },
});
