// Builds the docs site (server/src/docs/site.ts) into dist/docs-site, which `caplo serve` and the demo serve
// at /docs/. `npm install` runs it and goes on with a warning if it fails; `npm run docs:build` (--strict)
// fails instead.
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
try {
  execFileSync(process.execPath, [join(root, "node_modules", "tsx", "dist", "cli.mjs"), join(root, "server", "src", "docs", "site.ts")], { cwd: root, stdio: "inherit" });
} catch {
  if (process.argv.includes("--strict")) process.exit(1);
  console.warn("caplo: the docs site did not build (see above); /docs will say so. Try again with npm run docs:build.");
}
