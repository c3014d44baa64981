// Team console bundle: `npx tsx bench/console/size.ts`. Builds console/dist (when stale) with the same Vite
// config `caplo serve` serves, and prints each file's raw and gzip -9 size, the total a member's browser
// downloads at sign-in (the widget's reused conversation components included). Aim: at most
// 100 KB gzip in all (issue #16).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { buildConsole, ROOT } from "../../tests/console/build.ts";

const AIM_KB = 100;
await buildConsole();
const dist = join(ROOT, "console", "dist");
const files = ["index.html", ...readdirSync(join(dist, "assets")).map((name) => `assets/${name}`)];
const gz = (file: string) => gzipSync(readFileSync(join(dist, file)), { level: 9 }).length;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
let total = 0;
console.log("team console bundle (gzip -9)");
for (const file of files) {
  const size = gz(file);
  total += size;
  console.log(`  ${file.padEnd(34)} ${kb(statSync(join(dist, file)).size).padStart(9)} raw ${kb(size).padStart(9)} gzip`);
}
console.log(`  ${"total".padEnd(34)} ${"".padStart(13)} ${kb(total).padStart(9)} gzip  (aim: at most ${AIM_KB} KB: ${total <= AIM_KB * 1024 ? "within" : "OVER"})`);
