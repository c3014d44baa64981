// `caplo demo` starts its server through the composition root (app/server.ts), as `caplo serve` does, and
// imports nothing of the CLI: no module the demo loads, directly or through what that loads (static or
// dynamic imports), is under server/src/cli.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";

const DEMO = new URL(".", import.meta.url).pathname;
const CLI = resolve(DEMO, "..", "cli") + sep;

/** Every module reachable from `entries` by relative imports, with the module that first imported it. */
function reachable(entries: string[]): Map<string, string> {
  const from = new Map<string, string>(entries.map((entry) => [entry, "(entry)"]));
  const queue = [...entries];
  for (let file = queue.shift(); file; file = queue.shift()) {
    const source = readFileSync(file, "utf8");
    for (const match of source.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)["'](\.[^"']+)["']/g)) {
      const target = resolve(dirname(file), match[1]!);
      if (from.has(target) || !existsSync(target)) continue;
      from.set(target, file);
      queue.push(target);
    }
  }
  return from;
}

describe("the demo and the CLI", () => {
  it("no module the demo loads is the CLI's", () => {
    const entries = readdirSync(DEMO).filter((name) => name.endsWith(".ts") && !name.endsWith(".test.ts")).map((name) => join(DEMO, name));
    const modules = reachable(entries);
    expect(modules.size).toBeGreaterThan(50);
    const cli = [...modules].filter(([file]) => file.startsWith(CLI)).map(([file, importer]) => `${importer} imports ${file}`);
    expect(cli).toEqual([]);
  });
});
