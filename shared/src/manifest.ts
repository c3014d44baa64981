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
const pointer = z
  .string()
  .regex(L.JSON_POINTER_PATTERN, "a JSON pointer to one direct property, such as /orderId")
  .describe("JSON pointer to one direct property of the tool's schema.");
const int = (min: number, max: number) => z.int().min(min).max(max);

export const subjectSchema = z
  .strictObject({
    policy: z.literal("verified_required"),
    selector: z
      .string()
      .regex(L.SELECTOR_PATTERN)
      .describe("An optional input property the runner fills with the subject's resource reference and refuses from the model.")
      .optional(),
  })
  .meta({ description: "The tool acts for a verified customer." });

export const optionSchema = z.strictObject({
  value: z.string().max(L.OPTION_VALUE_MAX),
  label: plainText(L.LABEL_MAX),
});

export const presentationFieldSchema = z.strictObject({
  path: pointer,
  label: plainText(L.LABEL_MAX),
  display: z.enum(L.DISPLAYS).describe("last4 shows only the final four characters."),
  editable: z.boolean().describe("The customer may change this string input before review.").optional(),
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
  role: z
    .enum(L.COLUMN_ROLES)
    .describe("How the layout shows the column. image and link need https URLs, money a currency, time a date or date-time string, status a string enum mapped by statuses, and latitude and longitude (map) numbers in degrees.")
    .optional(),
  currency: currencySchema.describe("The ISO 4217 currency of a money column: a sibling string property of the item, or a fixed code.").optional(),
  statuses: z.record(z.string(), z.enum(L.TIMELINE_STATES)).describe("The timeline state of every enum value of a status column.").optional(),
});

export const actionSchema = z.strictObject({
  kind: z.enum(L.ACTION_KINDS),
  label: plainText(L.ACTION_LABEL_MAX),
  template: plainText(L.ACTION_TEMPLATE_MAX).describe("The visitor message; {name} inserts the item's value of the listed column name.").optional(),
  path: pointer.optional(),
});

export const pageSchema = z.strictObject({
  label: z.string().max(L.PAGE_LABEL_MAX).regex(L.PAGE_LABEL_PATTERN),
  display: z.enum(L.PAGE_DISPLAYS),
  origins: z.array(z.string().regex(L.PAGE_ORIGIN_PATTERN)).min(L.PAGE_ORIGINS_MIN).max(L.PAGE_ORIGINS_MAX),
});

const resultShape = {
  path: pointer.describe("The array property of the items; for a detail or a page, a direct object property, or omitted for the output itself.").optional(),
  title: plainText(L.TITLE_MAX),
  columns: z.array(columnSchema).min(1).max(L.COLUMNS_MAX_WIDE).describe("At most 6, or 12 for a detail, comparison or map."),
  actions: z
    .array(actionSchema)
    .min(1)
    .max(L.ACTIONS_MAX)
    .describe("Item controls: up to two on cards, a detail, a comparison or a map, and exactly one reply on choices. A reply sends a visitor message; a link opens a page. Neither calls a tool.")
    .optional(),
};
/** A read tool's result may use any layout, page included. */
export const readResultSchema = z.strictObject({
  ...resultShape,
  layout: z.enum(L.LAYOUTS),
  page: pageSchema
    .describe("Layout page only. How the link opens: label is its button; display panel opens it in a sandboxed panel over the chat, tab in a new browser tab. The link, and any message the page posts, must come from one of origins.")
    .optional(),
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
const filesDescription =
  "Read tools only. The tool may return files for the visitor as MCP embedded resources with a blob; at most 3 files per result.";
const resultDescription =
  "Items of structuredContent shown with the reply: a list, table, cards, choices, comparison, timeline or map of one array property, or one object as a detail or a page (read tools only).";
export const readPresentationSchema = z.strictObject({
  ...presentationShape,
  result: readResultSchema.describe(resultDescription).optional(),
  files: filesSchema.describe(filesDescription).optional(),
});
export const writePresentationSchema = z.strictObject({
  ...presentationShape,
  result: writeResultSchema.describe(resultDescription).optional(),
});

export const progressSchema = z.strictObject({
  label: z.string().regex(L.PROGRESS_LABEL_PATTERN, "3 to 40 characters, no trailing punctuation, no links"),
  spoken: z.string().regex(L.PROGRESS_SPOKEN_PATTERN, "one sentence of 3 to 90 characters ending with a full stop").optional(),
});

export const elicitationSchema = z.strictObject({
  style: z
    .enum(L.ELICITATION_STYLES)
    .default("form")
    .describe("form (default) shows each request as a form on the website widget; questions asks one tapped question per request, on every channel."),
  fields: z
    .array(z.strictObject({ name: z.string().regex(L.ELICITATION_FIELD_PATTERN) }))
    .min(1)
    .max(L.ELICITATION_FIELDS_MAX),
});

const timeoutSeconds = int(L.TIMEOUT_SECONDS_MIN, L.TIMEOUT_SECONDS_MAX).describe("From 1 to 30.");
const EFFECT_DESCRIPTION = "read only looks things up; write changes data or triggers an action.";
const PRESENTATION_DESCRIPTION =
  "Public form and receipt metadata. Only listed fields are ever shown; it grants no execution and exposes no other argument. The build checks every path against the tool's schemas.";
const PROGRESS_DESCRIPTION = "Static customer-facing status while the tool runs. Frozen with the release and never interpolated.";

/** The policy fields of a read tool (an MCP tools entry, or a function package's top level). */
const readPolicyShape = {
  effect: z.literal("read").describe(EFFECT_DESCRIPTION),
  timeoutSeconds,
  subject: subjectSchema.optional(),
  presentation: readPresentationSchema.describe(PRESENTATION_DESCRIPTION).optional(),
  progress: progressSchema.describe(PROGRESS_DESCRIPTION).optional(),
  elicitation: elicitationSchema
    .describe("Read tools only. While it runs, the tool may ask the visitor for missing details with MCP form elicitation; a request may name only these fields.")
    .optional(),
};
/** The policy fields of a write tool. confirmation: required is the default. */
const writePolicyShape = {
  effect: z.literal("write").describe(EFFECT_DESCRIPTION),
  timeoutSeconds,
  confirmation: z
    .enum(["required", "none"])
    .default("required")
    .describe("Write tools only. required (the default) runs the tool only after the customer confirms the call in a later turn."),
  subject: subjectSchema.optional(),
  presentation: writePresentationSchema.describe(PRESENTATION_DESCRIPTION).optional(),
  progress: progressSchema.describe(PROGRESS_DESCRIPTION).optional(),
};

export const toolNameSchema = z
  .string()
  .regex(L.TOOL_NAME_PATTERN, "lowercase letters, digits and underscores, starting with a letter, at most 48 characters")
  .describe("The tool name as the server lists it.");
export const readToolPolicySchema = z.strictObject({ name: toolNameSchema, ...readPolicyShape });
export const writeToolPolicySchema = z.strictObject({ name: toolNameSchema, ...writePolicyShape });
export const toolPolicySchema = z.discriminatedUnion("effect", [readToolPolicySchema, writeToolPolicySchema]);

const packageShape = {
  apiVersion: z.string().regex(L.API_VERSION_PATTERN, "v1, v1.0 or v1.0.0").describe("v1, v1.0, and v1.0.0 resolve to the latest matching schema."),
  kind: z.literal("ToolPackage"),
  name: z
    .string()
    .regex(L.PACKAGE_NAME_PATTERN, "lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters")
    .describe("Unique per workspace, and used in tool names."),
  description: z.string().max(L.PACKAGE_DESCRIPTION_MAX).describe("At most 500 characters.").optional(),
  entry: z
    .string()
    .regex(L.ENTRY_PATTERN, "a relative .ts, .mts, .js or .mjs module inside the package")
    .describe("Module that exports createServer() (mcp) or a default defineTool() (function)."),
  runtime: z.enum(L.RUNTIMES),
  egress: z
    .array(z.string().regex(L.EGRESS_HOST_PATTERN, "an exact host name or a *.suffix wildcard"))
    .max(L.EGRESS_MAX)
    .describe("Exact hosts or *.suffix wildcards. Empty or absent means no network.")
    .optional(),
  secrets: z
    .array(z.string().regex(L.SECRET_NAME_PATTERN))
    .max(L.SECRETS_MAX)
    .describe("Secret names; values are configured per workspace and passed per call.")
    .optional(),
  tests: z.string().min(1).default(L.DEFAULT_TESTS_GLOB).describe("Glob of fixture files relative to the package root."),
};

export const mcpPackageSchema = z.strictObject({
  ...packageShape,
  type: z.literal("mcp"),
  tools: z
    .array(toolPolicySchema)
    .min(L.MCP_TOOLS_MIN)
    .max(L.MCP_TOOLS_MAX)
    .describe("Effect and timeout for every tool the server lists (mcp only)."),
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
