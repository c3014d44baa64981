// Joins the tools a package's code lists with the policies of its caplo.yaml, as the seeds say: a tool
// without a policy fails (policy_missing), a policy for a tool the code does not list fails
// (policy_unknown), names must fit their pattern and `<package>__<tool>` must fit in 64 characters
// (tool_name_invalid), and every presentation is checked against the tool's schemas.
import {
  EFFECT_OUTCOME_CAPABILITY,
  MODEL_TOOL_NAME_MAX,
  OPERATION_STATUS_CAPABILITY,
  TOOL_NAME_PATTERN,
  modelToolName,
  toolPolicies,
  type BuiltTool,
  type Manifest,
  type ToolPolicy,
} from "@caplo/shared";
import type { BuildError } from "./buildError.ts";
import { checkPresentation, checkSubjectSelector } from "./presentationCheck.ts";

/** A tool as the package's server lists it (the MCP Tool fields the build reads). */
export type ListedTool = { name: string; description?: string; inputSchema: Record<string, unknown>; outputSchema?: Record<string, unknown> };
export type Listing = {
  tools: ListedTool[];
  experimental: Record<string, unknown>;
  /** The package ships its own MCP SDK, which Caplo's host cannot make accept a pending result (see hostServe.ts). */
  ownsMcpSdk?: boolean;
};
export type PackageCheck = { errors: BuildError[]; warnings: BuildError[]; tools: BuiltTool[]; effectOutcomes: boolean };

const EFFECT_KEY = Object.keys(EFFECT_OUTCOME_CAPABILITY)[0]!;
const STATUS_KEY = Object.keys(OPERATION_STATUS_CAPABILITY)[0]!;

export function checkPackage(manifest: Manifest, listing: Listing): PackageCheck {
  const errors: BuildError[] = [];
  const warnings: BuildError[] = [];
  const tools: BuiltTool[] = [];
  const effectOutcomes = listing.experimental[EFFECT_KEY] !== undefined;
  const hasStatus = listing.experimental[STATUS_KEY] !== undefined;

  const seen = new Set<string>();
  for (const tool of listing.tools) {
    if (seen.has(tool.name)) errors.push({ code: "entry_invalid", path: "entry", message: `the server lists tool "${tool.name}" more than once` });
    seen.add(tool.name);
  }

  // Pair each listed tool with its policy and the caplo.yaml path of that policy.
  const pairs: { tool: ListedTool; policy: ToolPolicy; at: string; namePath: string }[] = [];
  if (manifest.type === "function") {
    if (listing.tools.length !== 1) {
      errors.push({ code: "entry_invalid", path: "entry", message: `a function package has exactly one tool; its server lists ${listing.tools.length}` });
    } else {
      const tool = listing.tools[0]!;
      if (!TOOL_NAME_PATTERN.test(tool.name)) {
        errors.push({ code: "tool_name_invalid", path: "entry", message: `defineTool name ${JSON.stringify(tool.name)}: lowercase letters, digits and underscores, starting with a letter, at most 48 characters` });
      } else pairs.push({ tool, policy: toolPolicies(manifest, tool.name)[0]!, at: "", namePath: "name" });
    }
  } else {
    const byName = new Map(manifest.tools.map((policy, index) => [policy.name, { policy, index }]));
    for (const tool of listing.tools) {
      if (!TOOL_NAME_PATTERN.test(tool.name)) {
        errors.push({ code: "tool_name_invalid", path: "tools", message: `the server lists ${JSON.stringify(tool.name)}: a tool name is lowercase letters, digits and underscores, starting with a letter, at most 48 characters` });
        continue;
      }
      const found = byName.get(tool.name);
      if (!found) {
        errors.push({ code: "policy_missing", path: "tools", message: `the server lists tool "${tool.name}" but caplo.yaml has no policy for it: add a tools entry with its effect and timeoutSeconds` });
        continue;
      }
      pairs.push({ tool, policy: found.policy, at: `tools[${found.index}].`, namePath: `tools[${found.index}].name` });
    }
    manifest.tools.forEach((policy, index) => {
      if (!seen.has(policy.name)) {
        errors.push({ code: "policy_unknown", path: `tools[${index}].name`, message: `caplo.yaml has a policy for "${policy.name}" but the server does not list that tool (it lists: ${[...seen].join(", ") || "none"})` });
      }
    });
  }

  for (const { tool, policy, at, namePath } of pairs) {
    const modelName = modelToolName(manifest.name, tool.name);
    if (modelName.length > MODEL_TOOL_NAME_MAX) {
      errors.push({ code: "tool_name_invalid", path: namePath, message: `the model sees ${modelName}: ${modelName.length} characters, at most ${MODEL_TOOL_NAME_MAX}` });
    }
    // Status checks ask about a write's outcome; a read has none to ask about.
    if (manifest.type === "function" && hasStatus && policy.effect === "read") {
      errors.push({ code: "status_invalid", path: `${at}effect`, message: `tool "${tool.name}" defines status, but it is a read: status checks are for write tools (remove status, or set effect: write)` });
    }
    if (manifest.type === "mcp" && listing.ownsMcpSdk && policy.effect === "write" && tool.outputSchema) {
      warnings.push({
        code: "pending_needs_structured_content",
        path: `${at}name`,
        message: `write tool "${tool.name}" has an outputSchema and the package ships its own @modelcontextprotocol/sdk, whose McpServer refuses a pending result without structuredContent (the write would be unknown): use Caplo's copy (remove the package's own), or drop outputSchema from this tool`,
      });
    }
    const schemas = { inputSchema: tool.inputSchema, outputSchema: tool.outputSchema };
    errors.push(...checkPresentation(policy, schemas, at), ...checkSubjectSelector(policy, schemas, at));
    tools.push({
      name: tool.name,
      modelName,
      description: tool.description ?? "",
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema && { outputSchema: tool.outputSchema }),
      policy,
      // An MCP server advertises status for the package; only its writes have outcomes to check.
      hasStatus: hasStatus && policy.effect === "write",
    });
  }
  return { errors, warnings, tools, effectOutcomes };
}
