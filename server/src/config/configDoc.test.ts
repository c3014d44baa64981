// The operators' settings tables are generated from the schema, and every CAPLO_* variable the code
// names is a setting of the schema (or a family member, or set by Caplo itself for its own processes).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_DOC, configDocText } from "../../../scripts/gen-config-doc.ts";
import { readConfig, SETTINGS } from "./index.ts";

const SERVER = join(import.meta.dirname, "..");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : /\.ts$/.test(entry.name) && !/\.test\.ts$/.test(entry.name) ? [join(dir, entry.name)] : [],
  );
}

describe("docs/operators/configuration.md", () => {
  it("holds the settings tables exactly as generated from the schema (npx tsx scripts/gen-config-doc.ts)", () => {
    expect(readFileSync(CONFIG_DOC, "utf8")).toBe(configDocText());
  });

  it("lists every setting by name", () => {
    const page = readFileSync(CONFIG_DOC, "utf8");
    for (const { meta } of SETTINGS) expect(page, meta.name).toContain(`| \`${meta.name}\` |`);
  });
});

describe("the schema", () => {
  it("defines every CAPLO_* variable the server's code names", () => {
    const named = new Set<string>();
    // (This folder is left out: it names typos on purpose, in comments and messages.)
    for (const file of sources(SERVER).filter((path) => !path.startsWith(import.meta.dirname))) for (const match of readFileSync(file, "utf8").matchAll(/\bCAPLO_[A-Z0-9_]*[A-Z0-9]\b/g)) named.add(match[0]);
    // Each is read as known: no warning for it (families: an example member, as CAPLO_SECRET_SHOP_API_KEY).
    const unknown = [...named].filter((name) => readConfig({ [name]: "" }).warnings.length > 0);
    expect(unknown).toEqual([]);
  });
});
