// find_stores: the shop's stores, optionally in one city, with coordinates for the map layout.
import { defineTool } from "@caplo/tools";
import { shopHeaders, shopUrl } from "./shop.ts";

type Store = { storeId: string; name: string; address: string; latitude: number; longitude: number; opens: string; phone: string; url: string };
type Input = { city?: string };
type Output = { stores: Store[] };

export default defineTool<Input, Output>({
  name: "find_stores",
  description: "List the shop's stores (optionally in one city) with address, opening hours, phone and map position.",
  inputSchema: {
    type: "object",
    properties: { city: { type: "string", maxLength: 60, description: "Only stores in this city, for example Ljubljana" } },
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      stores: {
        type: "array",
        maxItems: 20,
        items: {
          type: "object",
          properties: {
            storeId: { type: "string" },
            name: { type: "string" },
            address: { type: "string" },
            latitude: { type: "number", minimum: -90, maximum: 90 },
            longitude: { type: "number", minimum: -180, maximum: 180 },
            opens: { type: "string" },
            phone: { type: "string" },
            url: { type: "string", format: "uri" },
          },
          required: ["storeId", "name", "address", "latitude", "longitude", "opens", "phone", "url"],
        },
      },
    },
    required: ["stores"],
  },
  async handler({ city }, { secrets, signal, log }) {
    const query = city ? `?${new URLSearchParams({ city })}` : "";
    const response = await fetch(shopUrl(secrets, `/stores${query}`), { headers: shopHeaders(secrets), signal });
    if (!response.ok) throw new Error(`store lookup failed with ${response.status}`);
    const body = (await response.json()) as { stores: (Store & { city: string })[] };
    log.info("stores found", { count: body.stores.length });
    return {
      stores: body.stores.map(({ storeId, name, address, latitude, longitude, opens, phone, url }) => ({ storeId, name, address, latitude, longitude, opens, phone, url })),
    };
  },
});
