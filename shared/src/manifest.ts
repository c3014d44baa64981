// caplo.yaml, the tool package manifest, as zod schemas: the one definition that validation, the
// generated JSON Schema (schemas/caplo.schema.json), the build and every renderer use.
// Every object is strict ("Other fields are refused"). Rules that depend on another field (a field
// only for function packages, confirmation only on writes, files and page only on reads) are written
// as variants, so the JSON Schema says them too.
import { z } from "zod";
import * as L from "./limits.ts";

/** Where editors load the caplo.yaml JSON Schema from (`# yaml-language-server: $schema=...`). */
export const MANIFEST_SCHEMA_URL = "https://docs.caplo.si/schemas/caplo.schema.json";

const plainText = (max: number) =>
  z.string().max(max).regex(L.PLAIN_TEXT_PATTERN, "plain text: no markup, control characters, or surrounding whitespace");
const pointer = z.string().regex(L.JSON_POINTER_PATTERN, "a JSON pointer to one direct property, such as /orderId");
const int = (min: number, max: number) => z.int().min(min).max(max);

export const subjectSchema = z
  .strictObject({
    policy: z.literal("verified_required"),
    selector: z.string().regex(L.SELECTOR_PATTERN).optional(),
  })
  .meta({ description: "The tool acts for a verified customer." });

export const optionSchema = z.strictObject({
  value: z.string().max(L.OPTION_VALUE_MAX),
  label: plainText(L.LABEL_MAX),
});

export const presentationFieldSchema = z.strictObject({
  path: pointer,
  label: plainText(L.LABEL_MAX),
  display: z.enum(L.DISPLAYS),
  editable: z.boolean().optional(),
  input: z.enum(L.FIELD_INPUTS).optional(),
  options: z.array(optionSchema).min(1).max(L.OPTIONS_MAX).optional(),
});

export const receiptFieldSchema = z.strictObject({
  path: pointer,
  label: plainText(L.LABEL_MAX),
  display: z.enum(L.DISPLAYS),
});

export const receiptSchema = z
  .strictObject({ fields: z.array(receiptFieldSchema).min(1).max(L.RECEIPT_FIELDS_MAX) })
  .meta({ description: "Display fields selected from structuredContent; never decides whether the operation succeeded." });

export const currencySchema = z.strictObject({
  path: pointer.optional(),
  code: z.string().regex(L.CURRENCY_CODE_PATTERN).optional(),
});

export const columnSchema = z.strictObject({
  path: pointer,
  label: plainText(L.LABEL_MAX),
  display: z.enum(L.DISPLAYS),
  role: z.enum(L.COLUMN_ROLES).optional(),
  currency: currencySchema.optional(),
  statuses: z.record(z.string(), z.enum(L.TIMELINE_STATES)).optional(),
});

export const actionSchema = z.strictObject({
  kind: z.enum(L.ACTION_KINDS),
  label: plainText(L.ACTION_LABEL_MAX),
  template: plainText(L.ACTION_TEMPLATE_MAX).optional(),
  path: pointer.optional(),
});

export const pageSchema = z.strictObject({
  label: z.string().max(L.PAGE_LABEL_MAX).regex(L.PAGE_LABEL_PATTERN),
  display: z.enum(L.PAGE_DISPLAYS),
  origins: z.array(z.string().regex(L.PAGE_ORIGIN_PATTERN)).min(L.PAGE_ORIGINS_MIN).max(L.PAGE_ORIGINS_MAX),
});

const resultShape = {
  path: pointer.optional(),
  title: plainText(L.TITLE_MAX),
  columns: z.array(columnSchema).min(1).max(L.COLUMNS_MAX_WIDE),
  actions: z.array(actionSchema).min(1).max(L.ACTIONS_MAX).optional(),
};
/** A read tool's result may use any layout, page included. */
export const readResultSchema = z.strictObject({
  ...resultShape,
  layout: z.enum(L.LAYOUTS),
  page: pageSchema.optional(),
});
/** A write tool's result may not be a page (read tools only). */
export const writeResultSchema = z.strictObject({
  ...resultShape,
  layout: z.enum(L.LAYOUTS.filter((layout) => layout !== "page") as [Exclude<(typeof L.LAYOUTS)[number], "page">, ...Exclude<(typeof L.LAYOUTS)[number], "page">[]]),
});

export const filesSchema = z.strictObject({
  accept: z.array(z.enum(L.FILE_TYPES)).min(1).max(L.FILE_ACCEPT_MAX),
  maxBytes: int(L.FILE_MAX_BYTES_MIN, L.FILE_MAX_BYTES_MAX),
});

const presentationShape = {
  schemaVersion: z.literal(1),
  title: plainText(L.TITLE_MAX),
  fields: z.array(presentationFieldSchema).min(1).max(L.PRESENTATION_FIELDS_MAX),
  receipt: receiptSchema.optional(),
};
export const readPresentationSchema = z.strictObject({
  ...presentationShape,
  result: readResultSchema.optional(),
  files: filesSchema.optional(),
});
export const writePresentationSchema = z.strictObject({
  ...presentationShape,
  result: writeResultSchema.optional(),
});

export const progressSchema = z.strictObject({
  label: z.string().regex(L.PROGRESS_LABEL_PATTERN, "3 to 40 characters, no trailing punctuation, no links"),
  spoken: z.string().regex(L.PROGRESS_SPOKEN_PATTERN, "one sentence of 3 to 90 characters ending with a full stop").optional(),
});

export const elicitationSchema = z.strictObject({
  style: z.enum(L.ELICITATION_STYLES).default("form"),
  fields: z
    .array(z.strictObject({ name: z.string().regex(L.ELICITATION_FIELD_PATTERN) }))
    .min(1)
    .max(L.ELICITATION_FIELDS_MAX),
});

const timeoutSeconds = int(L.TIMEOUT_SECONDS_MIN, L.TIMEOUT_SECONDS_MAX);

/** The policy fields of a read tool (an MCP tools entry, or a function package's top level). */
const readPolicyShape = {
  effect: z.literal("read"),
  timeoutSeconds,
  subject: subjectSchema.optional(),
  presentation: readPresentationSchema.optional(),
  progress: progressSchema.optional(),
  elicitation: elicitationSchema.optional(),
};
/** The policy fields of a write tool. confirmation: required is the default. */
const writePolicyShape = {
  effect: z.literal("write"),
  timeoutSeconds,
  confirmation: z.enum(["required", "none"]).default("required"),
  subject: subjectSchema.optional(),
  presentation: writePresentationSchema.optional(),
  progress: progressSchema.optional(),
};

export const toolNameSchema = z.string().regex(L.TOOL_NAME_PATTERN, "lowercase letters, digits and underscores, starting with a letter, at most 48 characters");
export const readToolPolicySchema = z.strictObject({ name: toolNameSchema, ...readPolicyShape });
export const writeToolPolicySchema = z.strictObject({ name: toolNameSchema, ...writePolicyShape });
export const toolPolicySchema = z.discriminatedUnion("effect", [readToolPolicySchema, writeToolPolicySchema]);

const packageShape = {
  apiVersion: z.string().regex(L.API_VERSION_PATTERN, "v1, v1.0 or v1.0.0"),
  kind: z.literal("ToolPackage"),
  name: z.string().regex(L.PACKAGE_NAME_PATTERN, "lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters"),
  description: z.string().max(L.PACKAGE_DESCRIPTION_MAX).optional(),
  entry: z.string().regex(L.ENTRY_PATTERN, "a relative .ts, .mts, .js or .mjs module inside the package"),
  runtime: z.enum(L.RUNTIMES),
  egress: z
    .array(z.string().regex(L.EGRESS_HOST_PATTERN, "an exact host name or a *.suffix wildcard"))
    .max(L.EGRESS_MAX)
    .optional(),
  secrets: z.array(z.string().regex(L.SECRET_NAME_PATTERN)).max(L.SECRETS_MAX).optional(),
  tests: z.string().min(1).default(L.DEFAULT_TESTS_GLOB),
};

export const mcpPackageSchema = z.strictObject({
  ...packageShape,
  type: z.literal("mcp"),
  tools: z.array(toolPolicySchema).min(L.MCP_TOOLS_MIN).max(L.MCP_TOOLS_MAX),
});
export const functionReadPackageSchema = z.strictObject({ ...packageShape, type: z.literal("function"), ...readPolicyShape });
export const functionWritePackageSchema = z.strictObject({ ...packageShape, type: z.literal("function"), ...writePolicyShape });

/** The whole caplo.yaml. Use parseManifest (manifestParse.ts) for precise, located errors. */
export const manifestSchema = z
  .union([mcpPackageSchema, functionReadPackageSchema, functionWritePackageSchema])
  .meta({ title: "caplo.yaml (tool package)", description: "A Caplo tool package manifest." });

export type Manifest = z.output<typeof manifestSchema>;
export type ManifestInput = z.input<typeof manifestSchema>;
export type McpManifest = z.output<typeof mcpPackageSchema>;
export type FunctionManifest = z.output<typeof functionReadPackageSchema> | z.output<typeof functionWritePackageSchema>;
export type ToolPolicy = z.output<typeof toolPolicySchema>;
export type ReadToolPolicy = z.output<typeof readToolPolicySchema>;
export type WriteToolPolicy = z.output<typeof writeToolPolicySchema>;
export type Presentation = z.output<typeof readPresentationSchema> | z.output<typeof writePresentationSchema>;
export type PresentationField = z.output<typeof presentationFieldSchema>;
export type ReceiptField = z.output<typeof receiptFieldSchema>;
export type ResultPresentation = z.output<typeof readResultSchema>;
export type Column = z.output<typeof columnSchema>;
export type Action = z.output<typeof actionSchema>;
export type PagePresentation = z.output<typeof pageSchema>;
export type FilesPresentation = z.output<typeof filesSchema>;
export type Progress = z.output<typeof progressSchema>;
export type Elicitation = z.output<typeof elicitationSchema>;
export type Subject = z.output<typeof subjectSchema>;
export type Layout = (typeof L.LAYOUTS)[number];
export type ColumnRole = (typeof L.COLUMN_ROLES)[number];
export type Effect = "read" | "write";

/** The policy of every tool of a manifest, in one shape: a function package's top level becomes one entry. */
export function toolPolicies(manifest: Manifest, functionToolName?: string): ToolPolicy[] {
  if (manifest.type === "mcp") return manifest.tools;
  const { apiVersion, kind, name, description, entry, runtime, egress, secrets, tests, type, ...policy } = manifest;
  return [{ ...policy, name: functionToolName ?? name.replaceAll("-", "_") } as ToolPolicy];
}

/** The name the model sees: `<package>__<tool>`, dashes in the package name turned into underscores. */
export function modelToolName(packageName: string, toolName: string): string {
  return `${packageName.replaceAll("-", "_")}__${toolName}`;
}
