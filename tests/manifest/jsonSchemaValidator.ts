// The standard JSON Schema validator the tests hold the generated caplo.schema.json against: Ajv's
// draft 2020-12 build with ajv-formats, compiled once from the checked-in file.
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { SCHEMA_FILE } from "../../scripts/gen-schema.ts";

// ajv-formats is CommonJS: its default export arrives as the module object under some loaders.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);
export const checkedInSchema = JSON.parse(readFileSync(SCHEMA_FILE, "utf8")) as Record<string, unknown>;
export const validateWithAjv = ajv.compile(checkedInSchema);
