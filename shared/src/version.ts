// A built, immutable tool package version: what `caplo tool build` freezes and prints, what the runner
// loads and what an agent release pins. Its id is the content hash of the package's files.
import { z } from "zod";
import { manifestSchema, toolPolicySchema } from "./manifest.ts";

const jsonSchemaObject = z.record(z.string(), z.unknown());

export const builtToolSchema = z.object({
  /** The tool's name in the package (the MCP tool name). */
  name: z.string(),
  /** `<package>__<tool>`, what the model sees. */
  modelName: z.string(),
  description: z.string(),
  inputSchema: jsonSchemaObject,
  outputSchema: jsonSchemaObject.optional(),
  /** effect, timeoutSeconds, confirmation, subject, presentation, progress, elicitation from caplo.yaml. */
  policy: toolPolicySchema,
  /** Whether a function tool defines `status`, or an MCP server advertised OPERATION_STATUS_CAPABILITY. */
  hasStatus: z.boolean(),
});
export type BuiltTool = z.infer<typeof builtToolSchema>;

export const packageVersionSchema = z.object({
  /** `<name>@sha256:<hex>`: the package name and the content hash of its files. */
  id: z.string(),
  name: z.string(),
  type: z.enum(["function", "mcp"]),
  /** sha256 hex of the package's files (sorted paths and bytes), excluding node_modules. */
  contentHash: z.string().regex(/^[0-9a-f]{64}$/),
  /** Absolute path of the package folder this version was built from (or frozen into). */
  dir: z.string(),
  manifest: manifestSchema,
  /** Whether the server advertised EFFECT_OUTCOME_CAPABILITY (always true for function packages). */
  effectOutcomes: z.boolean(),
  tools: z.array(builtToolSchema).min(1),
  builtAt: z.string(),
});
export type PackageVersion = z.infer<typeof packageVersionSchema>;
