// Generates schemas/caplo.schema.json (JSON Schema 2020-12) from the caplo.yaml zod schemas in shared/,
// so the format is written once. Run `npx tsx scripts/gen-schema.ts`; a test fails when the file drifts.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { z } from "zod";
import { MANIFEST_SCHEMA_URL, manifestSchema } from "@caplo/shared";

/** Where editors find the schema (the `# yaml-language-server: $schema=` line of caplo.yaml). */
export const SCHEMA_URL = MANIFEST_SCHEMA_URL;
export const SCHEMA_FILE = join(dirname(fileURLToPath(import.meta.url)), "..", "schemas", "caplo.schema.json");

/** The JSON Schema of caplo.yaml as the author writes it (input side: defaulted fields are optional). */
export function generateSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(manifestSchema, { target: "draft-2020-12", io: "input" }) as Record<string, unknown>;
  const { $schema, ...rest } = generated;
  return { $schema, $id: SCHEMA_URL, ...rest };
}

/** The file's exact text: two-space JSON and a final newline. */
export function schemaText(): string {
  return `${JSON.stringify(generateSchema(), null, 2)}\n`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(SCHEMA_FILE, schemaText());
  console.log(`wrote ${SCHEMA_FILE}`);
}
