// The caplo.yaml and agent.yaml reference pages of the docs site, written from their JSON Schemas (the
// schemas are generated from the zod definitions in shared/), so the reference never says other than
// what the parser enforces.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

type Schema = {
  type?: string | string[];
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  additionalProperties?: Schema | boolean;
  propertyNames?: Schema;
  $ref?: string;
  title?: string;
};

type Row = { path: string; type: string; required: boolean; rules: string[]; description: string };

const SCHEMAS = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "schemas");

/** caplo.yaml's JSON Schema as published (schemas/caplo.schema.json; a test keeps it equal to the zod schemas). */
export function manifestJsonSchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(join(SCHEMAS, "caplo.schema.json"), "utf8")) as Record<string, unknown>;
}

/** agent.yaml's JSON Schema as published (schemas/agent.schema.json, `caplo agent schema`; tests/agents keeps it equal to the zod schema). */
export function agentJsonSchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(join(SCHEMAS, "agent.schema.json"), "utf8")) as Record<string, unknown>;
}

function typeOf(schema: Schema): string {
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.enum) return schema.enum.map((value) => `\`${JSON.stringify(value)}\``).join(" \\| ");
  if (schema.type === "array") return `array of ${schema.items ? typeOf(schema.items) : "any"}`;
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return [...new Set(variants.map(typeOf))].join(" or ");
  if (Array.isArray(schema.type)) return schema.type.join(" or ");
  return schema.type ?? "any";
}

function rulesOf(schema: Schema): string[] {
  const rules: string[] = [];
  const target = schema.type === "array" && schema.items ? schema.items : schema;
  if (schema.minItems !== undefined) rules.push(`at least ${schema.minItems} items`);
  if (schema.maxItems !== undefined) rules.push(`at most ${schema.maxItems} items`);
  if (target.minLength !== undefined) rules.push(`at least ${target.minLength} characters`);
  if (target.maxLength !== undefined) rules.push(`at most ${target.maxLength} characters`);
  if (target.minimum !== undefined) rules.push(`≥ ${target.minimum}`);
  if (target.exclusiveMinimum !== undefined) rules.push(`> ${target.exclusiveMinimum}`);
  if (target.maximum !== undefined) rules.push(`≤ ${target.maximum}`);
  if (target.pattern !== undefined) rules.push(`pattern \`${target.pattern.replaceAll("|", "\\|")}\``);
  if (schema.default !== undefined) rules.push(`default \`${JSON.stringify(schema.default)}\``);
  return rules;
}

/** Every field of an object schema (and of the objects inside it), depth first, as table rows. */
function rows(schema: Schema, prefix: string, out: Row[]): Row[] {
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  for (const [name, field] of Object.entries(properties)) {
    const path = prefix ? `${prefix}.${name}` : name;
    out.push({ path, type: typeOf(field), required: required.has(name), rules: rulesOf(field), description: field.description ?? "" });
    for (const nested of objectsInside(field)) rows(nested.schema, `${path}${nested.suffix}`, out);
  }
  return out;
}

/** The object schemas a field holds: itself, its array items, its variants, its map values. */
function objectsInside(field: Schema): Array<{ schema: Schema; suffix: string }> {
  if (field.properties) return [{ schema: field, suffix: "" }];
  if (field.type === "array" && field.items) return objectsInside(field.items).map((inner) => ({ ...inner, suffix: `[]${inner.suffix}` }));
  if (typeof field.additionalProperties === "object") return objectsInside(field.additionalProperties).map((inner) => ({ ...inner, suffix: `.<key>${inner.suffix}` }));
  const variants = field.anyOf ?? field.oneOf;
  if (variants) return variants.flatMap(objectsInside);
  return [];
}

function table(list: Row[]): string {
  // A field that several variants share is listed once, with its rules merged.
  const merged = new Map<string, Row>();
  for (const row of list) {
    const seen = merged.get(row.path);
    if (!seen) merged.set(row.path, { ...row, rules: [...row.rules] });
    else {
      for (const rule of row.rules) if (!seen.rules.includes(rule)) seen.rules.push(rule);
      if (!seen.description) seen.description = row.description;
      if (seen.type !== row.type && !seen.type.split(" or ").includes(row.type)) seen.type = `${seen.type} or ${row.type}`;
      seen.required = seen.required && row.required;
    }
  }
  const escape = (text: string) => text.replaceAll("\n", " ").replaceAll("|", "\\|");
  const lines = ["| field | type | required | rules | what it is |", "|---|---|---|---|---|"];
  for (const row of merged.values()) {
    lines.push(`| \`${row.path}\` | ${escape(row.type)} | ${row.required ? "yes" : "no"} | ${escape(row.rules.join("; "))} | ${escape(row.description)} |`);
  }
  return lines.join("\n");
}

/**
 * The schema with every local `$ref` ("#/$defs/Name") replaced by what it names (agent.yaml's schema names
 * the handoff and the template once, in $defs), so their fields are listed where they are used.
 */
function inlineRefs(schema: unknown, defs: Record<string, unknown>, depth = 0): unknown {
  if (Array.isArray(schema)) return schema.map((item) => inlineRefs(item, defs, depth));
  if (!schema || typeof schema !== "object") return schema;
  const { $ref, $defs: _defs, ...rest } = schema as Record<string, unknown> & { $ref?: string };
  const named = typeof $ref === "string" ? /^#\/\$defs\/(.+)$/.exec($ref)?.[1] : undefined;
  if ($ref !== undefined && (named === undefined || !(named in defs) || depth > 20)) throw new Error(`reference: cannot inline $ref ${String($ref)}`);
  const base = named === undefined ? {} : (inlineRefs(defs[named], defs, depth + 1) as Record<string, unknown>);
  const own = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, inlineRefs(value, defs, depth)]));
  return { ...base, ...own };
}

/** The reference page of one file format, in Markdown. */
export function referencePage(options: { title: string; intro: string; schema: Record<string, unknown>; schemaPath: string }): string {
  const root = inlineRefs(options.schema, (options.schema.$defs ?? {}) as Record<string, unknown>) as Schema;
  const variants = root.anyOf ?? root.oneOf ?? [root];
  const sections = variants.map((variant, index) => {
    const kind = variant.properties?.type?.const ?? variant.properties?.kind?.const;
    const heading = variants.length > 1 ? `## Variant ${index + 1}${kind ? `: \`${String(kind)}\`` : ""}\n\n${variant.description ?? ""}\n\n` : "";
    return `${heading}${table(rows(variant, "", []))}`;
  });
  return [
    `# ${options.title}`,
    "",
    options.intro,
    "",
    `Generated from the JSON Schema [${options.schemaPath}](${options.schemaPath}) (JSON Schema 2020-12), itself generated from the zod definitions the parser uses: every rule here is enforced.`,
    "",
    ...sections.flatMap((section) => [section, ""]),
  ].join("\n");
}
