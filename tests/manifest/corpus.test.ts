// The corpus of valid and invalid caplo.yaml files runs through both the zod schema (parseManifest) and
// a standard JSON Schema validator (Ajv 2020-12 on the checked-in caplo.schema.json): same verdicts.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { parseManifest } from "@caplo/shared";
import { validateWithAjv } from "./jsonSchemaValidator.ts";

const corpus = join(import.meta.dirname, "corpus");
const files = (kind: "valid" | "invalid") => readdirSync(join(corpus, kind)).filter((file) => file.endsWith(".yaml")).sort();

/** The YAML value, or undefined when the text is not YAML at all (then no JSON validator can run). */
function yamlValue(text: string): { value: unknown } | undefined {
  try {
    return { value: parseYaml(text) };
  } catch {
    return undefined;
  }
}

describe("valid manifests pass zod and JSON Schema alike", () => {
  it.each(files("valid"))("%s", (file) => {
    const text = readFileSync(join(corpus, "valid", file), "utf8");
    const result = parseManifest(text);
    expect(result.ok ? [] : result.errors).toEqual([]);
    expect(validateWithAjv(yamlValue(text)!.value), JSON.stringify(validateWithAjv.errors)).toBe(true);
  });
});

describe("invalid manifests fail zod and JSON Schema alike, with the expected code and path", () => {
  it.each(files("invalid"))("%s", (file) => {
    const text = readFileSync(join(corpus, "invalid", file), "utf8");
    const expectLine = /^# expect: (\S+) ?(\S*)$/m.exec(text);
    expect(expectLine, "every invalid corpus file starts with '# expect: <code> <path>'").not.toBeNull();
    const [, code, path] = expectLine!;
    const result = parseManifest(text);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toContainEqual(expect.objectContaining({ code, path }));
    const parsed = yamlValue(text);
    if (parsed) expect(validateWithAjv(parsed.value)).toBe(false);
  });
});
