// find_slots: free appointment slots as choices. When the customer has not said which service or
// store, it asks with one tapped question each, and searches them all where nobody can answer.
import { defineTool } from "@caplo/tools";
import { shopHeaders, shopUrl } from "./shop.ts";

const SERVICES = [
  { const: "fitting", title: "Fitting" },
  { const: "tailoring", title: "Tailoring" },
  { const: "styling", title: "Styling session" },
] as const;
const STORES = [
  { const: "ST-LJ1", title: "Ljubljana Center" },
  { const: "ST-LJ2", title: "Ljubljana BTC" },
  { const: "ST-MB1", title: "Maribor" },
] as const;

type Service = (typeof SERVICES)[number]["const"];
type StoreId = (typeof STORES)[number]["const"];
type Input = { service?: Service; storeId?: StoreId; date?: string };
type Slot = { slotId: string; label: string; start: string; storeName: string; service: string };
type Output = { slots: Slot[] };

// Every store is in Slovenia: a slot reads in the stores' own time, as the customer will walk in.
const dayFormat = new Intl.DateTimeFormat("en-GB", { weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", timeZone: "Europe/Ljubljana" });

export default defineTool<Input, Output>({
  name: "find_slots",
  description:
    "Find free appointment slots in the next five days for a fitting, tailoring or styling session in a store. Leave service or store out if the customer has not said; the tool asks them.",
  inputSchema: {
    type: "object",
    properties: {
      service: { type: "string", enum: SERVICES.map((entry) => entry.const), description: "What the appointment is for" },
      storeId: { type: "string", enum: STORES.map((entry) => entry.const), description: "The store: ST-LJ1 Ljubljana Center, ST-LJ2 Ljubljana BTC, ST-MB1 Maribor" },
      date: { type: "string", pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description: "Only this day (YYYY-MM-DD)" },
    },
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      slots: {
        type: "array",
        maxItems: 10,
        items: {
          type: "object",
          properties: {
            slotId: { type: "string" },
            label: { type: "string" },
            start: { type: "string", format: "date-time" },
            storeName: { type: "string" },
            service: { type: "string" },
          },
          required: ["slotId", "label", "start", "storeName", "service"],
        },
      },
    },
    required: ["slots"],
  },
  async handler(args, ctx) {
    const { secrets, signal, log } = ctx;
    let { service, storeId } = args;
    // Ask only where the visitor can answer; otherwise search every service or store.
    if (!service && ctx.canElicit) {
      const answer = await ctx.elicit({
        message: "What would you like to book?",
        requestedSchema: { type: "object", properties: { service: { type: "string", title: "Service", oneOf: [...SERVICES] } }, required: ["service"] },
      });
      if (answer.action === "accept") service = answer.content?.service as Service;
    }
    if (!storeId && ctx.canElicit) {
      const answer = await ctx.elicit({
        message: "Which store suits you?",
        requestedSchema: { type: "object", properties: { storeId: { type: "string", title: "Store", oneOf: [...STORES] } }, required: ["storeId"] },
      });
      if (answer.action === "accept") storeId = answer.content?.storeId as StoreId;
    }
    const query = new URLSearchParams({ limit: "10", ...(service && { service }), ...(storeId && { storeId }), ...(args.date && { date: args.date }) });
    const response = await fetch(shopUrl(secrets, `/slots?${query}`), { headers: shopHeaders(secrets), signal });
    if (!response.ok) throw new Error(`slot search failed with ${response.status}`);
    const body = (await response.json()) as { slots: { slotId: string; start: string; storeName: string; service: string }[] };
    log.info("slots found", { count: body.slots.length, service: service ?? "any", storeId: storeId ?? "any" });
    return {
      slots: body.slots.map((slot) => ({
        slotId: slot.slotId,
        label: `${dayFormat.format(new Date(slot.start))}, ${slot.service}`,
        start: slot.start,
        storeName: slot.storeName,
        service: slot.service,
      })),
    };
  },
});
