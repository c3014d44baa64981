// search_products: products matching the customer's words, with picture, price and currency for cards.
import { defineTool } from "@caplo/tools";
import { shopHeaders, shopUrl } from "./shop.ts";

type Product = { productId: string; name: string; description: string; price: number; currency: string; badge: string; imageUrl: string; url: string };
type Input = { query?: string; category?: "tops" | "outerwear" | "shoes" | "accessories" };
type Output = { products: Product[] };

export default defineTool<Input, Output>({
  name: "search_products",
  description: "Search the shop's products by words (for example 'wool' or 'jacket') and/or category. Returns up to 20 products with prices.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", maxLength: 100, description: "Words to search for" },
      category: { type: "string", enum: ["tops", "outerwear", "shoes", "accessories"] },
    },
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      products: {
        type: "array",
        maxItems: 20,
        items: {
          type: "object",
          properties: {
            productId: { type: "string" },
            name: { type: "string" },
            description: { type: "string" },
            price: { type: "number" },
            currency: { type: "string", pattern: "^[A-Z]{3}$" },
            badge: { type: "string" },
            imageUrl: { type: "string", format: "uri" },
            url: { type: "string", format: "uri" },
          },
          required: ["productId", "name", "description", "price", "currency", "badge", "imageUrl", "url"],
        },
      },
    },
    required: ["products"],
  },
  async handler({ query, category }, { secrets, signal, log }) {
    const search = new URLSearchParams({ ...(query && { q: query }), ...(category && { category }) });
    const response = await fetch(shopUrl(secrets, `/products?${search}`), { headers: shopHeaders(secrets), signal });
    if (!response.ok) throw new Error(`product search failed with ${response.status}`);
    const body = (await response.json()) as { products: (Product & { category: string })[] };
    log.info("products found", { count: body.products.length });
    return {
      products: body.products.slice(0, 20).map(({ productId, name, description, price, currency, badge, imageUrl, url }) => ({ productId, name, description, price, currency, badge, imageUrl, url })),
    };
  },
});
