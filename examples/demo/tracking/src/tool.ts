// track_order: an order's tracking events as timeline steps. Without an order number it asks the
// visitor in a form where it can, and otherwise tells the model to ask.
import { defineTool } from "@caplo/tools";
import { shopHeaders, shopUrl } from "./shop.ts";

const ORDER_ID = /^SO-[0-9]{4}$/;
type Step = { label: string; status: "completed" | "in_progress" | "pending" | "failed"; at?: string; location: string };
type Input = { orderId?: string };
type Output = { orderId: string; carrier?: string; trackingNumber?: string; steps: Step[] };

export default defineTool<Input, Output>({
  name: "track_order",
  description: "Show where an order is: each delivery step, done, current or still to come. Use it for 'where is my parcel' questions.",
  inputSchema: {
    type: "object",
    properties: { orderId: { type: "string", pattern: ORDER_ID.source, description: "Order number, for example SO-1003" } },
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      orderId: { type: "string" },
      carrier: { type: "string" },
      trackingNumber: { type: "string" },
      steps: {
        type: "array",
        maxItems: 12,
        items: {
          type: "object",
          properties: {
            label: { type: "string" },
            status: { type: "string", enum: ["completed", "in_progress", "pending", "failed"] },
            at: { type: "string", format: "date-time" },
            location: { type: "string" },
          },
          required: ["label", "status", "location"],
        },
      },
    },
    required: ["orderId", "steps"],
  },
  async handler(args, ctx) {
    const { secrets, signal, log } = ctx;
    let orderId = args.orderId;
    if (!orderId && ctx.canElicit) {
      const answer = await ctx.elicit({
        message: "Which order should I track?",
        requestedSchema: {
          type: "object",
          properties: { orderId: { type: "string", title: "Order number", description: "For example SO-1003", minLength: 7, maxLength: 7 } },
          required: ["orderId"],
        },
      });
      if (answer.action === "accept" && typeof answer.content?.orderId === "string") orderId = answer.content.orderId.trim().toUpperCase();
    }
    if (!orderId || !ORDER_ID.test(orderId)) throw new Error("An order number (for example SO-1003) is needed: ask the customer for it.");
    const response = await fetch(shopUrl(secrets, `/orders/${encodeURIComponent(orderId)}/tracking`), { headers: shopHeaders(secrets), signal });
    if (response.status === 404) throw new Error(`There is no order ${orderId}.`);
    if (!response.ok) throw new Error(`tracking failed with ${response.status}`);
    const body = (await response.json()) as { orderId: string; carrier: string | null; trackingNumber: string | null; events: { label: string; status: Step["status"]; at: string | null; location: string }[] };
    log.info("tracking read", { orderId, steps: body.events.length });
    return {
      orderId: body.orderId,
      ...(body.carrier ? { carrier: body.carrier } : {}),
      ...(body.trackingNumber ? { trackingNumber: body.trackingNumber } : {}),
      steps: body.events.map((event) => ({ label: event.label, status: event.status, ...(event.at ? { at: event.at } : {}), location: event.location })),
    };
  },
});
