// The demo packages as the demo runs them against the shop it started. A package whose page origins
// name the shop's default local address (http://127.0.0.1:4100, http://localhost:4100: the help
// articles) is built from a copy whose caplo.yaml names the port the shop really has, so the widget opens
// the help pages whatever --shop-port chose. A copy is an ordinary package build: the release pins it.
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { DEMO_SHOP_PORT } from "../../../examples/shop-api/src/demo.ts";

/** http://127.0.0.1:4100 or http://localhost:4100, not followed by another digit of a longer port. */
const DEFAULT_LOCAL_ORIGIN = new RegExp(`(http://(?:127\\.0\\.0\\.1|localhost)):${DEMO_SHOP_PORT}(?![0-9])`, "g");

/** The manifest text with the shop's default local origins moved to `port`. */
export function withShopPort(manifestText: string, port: number): string {
  return manifestText.replace(DEFAULT_LOCAL_ORIGIN, `$1:${port}`);
}

export type DemoPackageDirs = { dirs: string[]; copied: string[]; remove: () => void };

/**
 * The folders to build: each package's own, or for one whose caplo.yaml names the default local shop
 * origin while the shop runs on another port, a copy under `copyRoot/shop-<port>/<name>` with the port
 * rewritten. `remove` deletes the copies (when the demo stops).
 */
export function demoPackageDirs(dirs: readonly string[], shopPort: number, copyRoot: string): DemoPackageDirs {
  const target = join(copyRoot, `shop-${shopPort}`);
  const copied: string[] = [];
  const result = dirs.map((dir) => {
    const manifest = readFileSync(join(dir, "caplo.yaml"), "utf8");
    const rewritten = withShopPort(manifest, shopPort);
    if (rewritten === manifest) return dir;
    const copy = join(target, basename(dir));
    rmSync(copy, { recursive: true, force: true });
    mkdirSync(target, { recursive: true });
    // Build output and test logs of the original are not part of the package.
    cpSync(dir, copy, { recursive: true, filter: (source) => !/[/\\](node_modules|\.caplo)$/.test(source) });
    writeFileSync(join(copy, "caplo.yaml"), rewritten);
    copied.push(copy);
    return copy;
  });
  return {
    dirs: result,
    copied,
    remove: () => {
      if (copied.length > 0 && existsSync(target)) rmSync(target, { recursive: true, force: true });
    },
  };
}
