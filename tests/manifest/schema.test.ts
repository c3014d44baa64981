// schemas/caplo.schema.json is generated from the zod schemas: this fails when the checked-in file drifts.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SCHEMA_FILE, SCHEMA_URL, schemaText } from "../../scripts/gen-schema.ts";
import { checkedInSchema } from "./jsonSchemaValidator.ts";

describe("generated JSON Schema", () => {
  it("matches the zod schemas exactly (run `npx tsx scripts/gen-schema.ts` after changing shared/src/manifest.ts)", () => {
    expect(readFileSync(SCHEMA_FILE, "utf8")).toBe(schemaText());
  });

  it("is draft 2020-12 with the id editors load from the yaml-language-server line", () => {
    expect(checkedInSchema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(checkedInSchema.$id).toBe(SCHEMA_URL);
  });
});
