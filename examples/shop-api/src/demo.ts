// What the demo command needs to run the example packages against a local shop API: the shop itself,
// the secret values the packages read, the operator's egress map, and the package folders.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { startShopApi, type ShopApi, type ShopApiOptions } from "./server.ts";

/** The demo shop's default port: the help package's page origins name it (http://127.0.0.1:4100). */
export const DEMO_SHOP_PORT = 4100;
/** The egress host every demo package declares. */
export const DEMO_SHOP_HOST = "shop.caplo.test";
export const DEMO_PACKAGES_DIR = join(import.meta.dirname, "..", "..", "demo");

export type DemoShop = {
  shop: ShopApi;
  /** Workspace secret values for the packages (on `caplo serve`: CAPLO_SECRET_<NAME>). */
  secrets: { SHOP_API_KEY: string; SHOP_API_URL: string };
  /** The runner's CAPLO_EGRESS_RESOLVE value that sends shop.caplo.test to this shop. */
  egressResolve: string;
  /** The example packages' folders, to build and load. */
  packageDirs: string[];
};

/**
 * Starts the shop API for the demo on 127.0.0.1 (port 4100 unless given), with public links on its own
 * address so that a browser on this machine can open pictures and help pages.
 */
export async function startDemoShop(options: Omit<ShopApiOptions, "host" | "publicUrl"> = {}): Promise<DemoShop> {
  const port = options.port ?? DEMO_SHOP_PORT;
  const shop = await startShopApi({ ...options, port, host: "127.0.0.1", publicUrl: "self" });
  const actualPort = new URL(shop.url).port;
  return {
    shop,
    // Plain HTTP through the egress proxy's tunnel: the mapped shop API does not speak TLS.
    secrets: { SHOP_API_KEY: shop.apiKey, SHOP_API_URL: `http://${DEMO_SHOP_HOST}` },
    egressResolve: `${DEMO_SHOP_HOST}=127.0.0.1:${actualPort}`,
    packageDirs: readdirSync(DEMO_PACKAGES_DIR, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(DEMO_PACKAGES_DIR, entry.name))
      .sort(),
  };
}
