// The demo shop API as a module: startShopApi and its seed data, for the demo command and tests.
export { startShopApi, DEFAULT_API_KEY, DEFAULT_PUBLIC_URL, type ShopApi, type ShopApiOptions } from "./server.ts";
export { CUSTOMERS, ORDERS, PLANS, PRODUCTS, STORES, HELP_ARTICLES, SERVICES } from "./data.ts";
export { renderPdf } from "./pdf.ts";
export { startDemoShop, DEMO_SHOP_PORT, DEMO_SHOP_HOST, DEMO_PACKAGES_DIR, type DemoShop } from "./demo.ts";
