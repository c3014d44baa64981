// A command's --help text of its settings, generated from the one schema (SETTINGS), so the terminal and
// the operators' table (docs/operators/configuration.md) never say different things.
import { SETTINGS } from "./config.ts";
import type { Command } from "./setting.ts";

const WIDTH = 108;
const INDENT = "      ";

/** Markdown of the table's sentences as terminal text: no backticks, a link's words without its target. */
const plain = (text: string) => text.replaceAll("`", "").replace(/\[([^\]]+)\]\([^)]+\)/g, "$1");

/** Words wrapped to lines of at most WIDTH characters: the first line at `first`, the rest at INDENT. */
function wrap(text: string, first = INDENT): string[] {
  const lines: string[] = [];
  let line = first;
  const indent = INDENT;
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line.trim().length > 0 && line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = indent;
    }
    line += line.trim().length > 0 ? ` ${word}` : word;
  }
  if (line.trim().length > 0) lines.push(line);
  return lines;
}

/** The flags of `command`'s settings (a flag marked for another command is left out), each naming its variables. */
export function flagsHelp(command: Command): string {
  const flags = new Map<string, { names: string[]; doc: string; default: string }>();
  for (const { meta } of SETTINGS) {
    if (!meta.flag || !meta.commands.includes(command) || /\((?!repeatable)[a-z ]+\)$/.test(meta.flag)) continue;
    const flag = meta.flag;
    const known = flags.get(flag);
    // Several variables for one flag (--db): the last is the fallback, and its default is the flag's.
    if (known) Object.assign(known, { names: [...known.names, meta.name], default: meta.default });
    else flags.set(flag, { names: [meta.name], doc: meta.doc, default: meta.default });
  }
  return [...flags]
    .flatMap(([flag, entry]) => {
      const fallback = entry.default === "—" ? "" : `; default ${plain(entry.default)}`;
      return [...wrap(`${flag} (${entry.names.join(", else ")}${fallback})`, "  "), ...wrap(plain(entry.doc))];
    })
    .join("\n");
}

/** Every setting `command` reads, by area: the variable, its rule and default, and what it sets. */
export function settingsHelp(command: Command): string {
  const out: string[] = [];
  let area = "";
  for (const { area: settingArea, meta } of SETTINGS) {
    if (!meta.commands.includes(command)) continue;
    if (settingArea !== area) {
      area = settingArea;
      out.push(`${out.length > 0 ? "\n" : ""}${area}:`);
    }
    const fallback = meta.default === "—" ? "" : `; default ${plain(meta.default)}`;
    out.push(...wrap(`${meta.name} (${plain(meta.rule)}${fallback})`, "  "), ...wrap(plain(meta.doc)));
  }
  return out.join("\n");
}
