// Generates the settings tables of docs/operators/configuration.md from the configuration's schema
// (server/src/config), so every CAPLO_* setting is described once. Run `npx tsx scripts/gen-config-doc.ts`;
// a test fails when the page drifts. Only the part between the two markers is generated; the prose stays.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SETTINGS } from "../server/src/config/index.ts";

export const CONFIG_DOC = join(dirname(fileURLToPath(import.meta.url)), "..", "docs", "operators", "configuration.md");
export const BEGIN = "<!-- settings: generated from server/src/config by `npx tsx scripts/gen-config-doc.ts`; edit the schema, not this table -->";
export const END = "<!-- end of the generated settings -->";

/** A table cell: pipes escaped (inside code too, as GFM tables need), and <placeholders> not read as HTML outside code. */
const cell = (text: string) =>
  text
    .split(/(`[^`]*`)/)
    .map((part) => (part.startsWith("`") ? part : part.replaceAll("<", "&lt;").replaceAll(">", "&gt;")))
    .join("")
    .replaceAll("|", "\\|")
    .replaceAll("\n", " ");
const code = (text: string) => `\`${text.replaceAll("`", "")}\``;

/** The generated part: one table per area. */
export function settingsTables(): string {
  const areas = [...new Set(SETTINGS.map((entry) => entry.area))];
  const parts = areas.map((area) => {
    const rows = SETTINGS.filter((entry) => entry.area === area).map(({ meta }) => {
      const value = `${meta.rule}, e.g. ${code(meta.example)}${meta.checkedBy ? ` (checked at start by ${meta.checkedBy.replace(/ \(.*\)$/, "")})` : ""}`;
      return `| ${[code(meta.name), meta.flag ? code(meta.flag) : "", meta.commands.join(", "), value, meta.default, meta.doc].map(cell).join(" | ")} |`;
    });
    return [`#### ${area}`, "", "| variable | flag | used by | value | default | what it sets |", "|---|---|---|---|---|---|", ...rows].join("\n");
  });
  return parts.join("\n\n");
}

/** The page with its generated part replaced (the markers must be there, in order). */
export function configDocText(page = readFileSync(CONFIG_DOC, "utf8")): string {
  const start = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (start === -1 || end < start) throw new Error(`${CONFIG_DOC}: the markers of the generated settings are missing`);
  return `${page.slice(0, start + BEGIN.length)}\n\n${settingsTables()}\n\n${page.slice(end)}`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(CONFIG_DOC, configDocText());
  console.log(`wrote ${CONFIG_DOC}`);
}
