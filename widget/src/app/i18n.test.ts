import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { en, fill, LOCALES, pickStrings } from "./i18n.ts";

const placeholders = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

describe("locale table", () => {
  test("every locale has every string, with the same placeholders as English", () => {
    for (const [name, strings] of Object.entries(LOCALES)) {
      for (const [key, value] of Object.entries(en)) {
        const other = (strings as Record<string, unknown>)[key];
        if (typeof value === "string") {
          expect(typeof other, `${name}.${key}`).toBe("string");
          expect(placeholders(other as string), `${name}.${key}`).toEqual(placeholders(value));
        } else {
          expect(Object.keys(other as object).sort(), `${name}.${key}`).toEqual(Object.keys(value).sort());
        }
      }
    }
  });

  test("every string is shown somewhere (a string no component uses is bytes every visitor downloads for nothing)", () => {
    const root = join(import.meta.dirname, "..", "..", "..");
    const files = (dir: string): string[] => readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : /\.tsx?$/.test(name) && !/\.test\.|i18n\.ts$/.test(name) ? [join(dir, name)] : []));
    const code = [...files(join(root, "widget", "src", "app")), ...files(join(root, "console", "src"))].map((file) => readFileSync(file, "utf8")).join("\n");
    expect(Object.keys(en).filter((key) => !new RegExp(`\\.${key}\\b`).test(code))).toEqual([]);
  });

  test("a locale is picked by its language, falling back to English", () => {
    expect(pickStrings("sl-SI").send).toBe("Pošlji");
    expect(pickStrings("de-AT").send).toBe("Senden");
    expect(pickStrings("fr-FR").send).toBe("Send");
    expect(pickStrings(undefined).send).toBe("Send");
  });

  test("placeholders are filled as text", () => {
    expect(fill("At most {max} characters", { max: 4000 })).toBe("At most 4000 characters");
    expect(fill("{a} {b}", { a: "<b>" })).toBe("<b> {b}");
  });
});
