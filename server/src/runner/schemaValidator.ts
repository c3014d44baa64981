// Validates tool arguments and results against the tool's JSON Schemas (draft-07 or 2020-12, as the
// schema says), with errors located by JSON pointer so the model can correct the argument it got wrong.
import { createRequire } from "node:module";
import type { ErrorObject, ValidateFunction } from "ajv";

type AjvInstance = {
  compile: (schema: object) => ValidateFunction;
};
type AjvConstructor = new (options: Record<string, unknown>) => AjvInstance;

const require = createRequire(import.meta.url);
const Ajv07 = (require("ajv") as { default: AjvConstructor }).default;
const Ajv2020 = (require("ajv/dist/2020") as { default: AjvConstructor }).default;
const addFormats = (require("ajv-formats") as { default: (ajv: AjvInstance) => void }).default;

export type SchemaIssue = { code: string; path: string; message: string };

const options = { allErrors: true, strict: false, validateFormats: true };
const draft07 = new Ajv07(options);
const draft2020 = new Ajv2020(options);
addFormats(draft07);
addFormats(draft2020);

const cache = new Map<string, ValidateFunction>();

function compile(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = cache.get(key);
  if (!validate) {
    const dialect = typeof schema.$schema === "string" && schema.$schema.includes("2020-12") ? draft2020 : draft07;
    const { $schema: _ignored, ...rest } = schema;
    validate = dialect.compile(dialect === draft2020 ? schema : rest);
    cache.set(key, validate);
  }
  return validate;
}

function describe(error: ErrorObject): SchemaIssue {
  const params = error.params as Record<string, unknown>;
  let path = error.instancePath || "/";
  if (error.keyword === "required" && typeof params.missingProperty === "string") {
    path = `${error.instancePath}/${params.missingProperty}`;
    return { code: "required", path, message: `${path} is required` };
  }
  if (error.keyword === "additionalProperties" && typeof params.additionalProperty === "string") {
    path = `${error.instancePath}/${params.additionalProperty}`;
    return { code: "additional_property", path, message: `${path} is not allowed` };
  }
  return { code: error.keyword, path, message: `${path} ${error.message ?? "is invalid"}` };
}

/** Validates `value` against `schema`; an empty list means valid. */
export function validateAgainst(schema: Record<string, unknown>, value: unknown): SchemaIssue[] {
  let validate: ValidateFunction;
  try {
    validate = compile(schema);
  } catch (error) {
    return [{ code: "schema_invalid", path: "/", message: `the tool's schema cannot be compiled: ${(error as Error).message}` }];
  }
  if (validate(value)) return [];
  return (validate.errors ?? []).map(describe);
}
