// Reads caplo.yaml text into a checked Manifest, or every error in it: YAML syntax errors with line and
// column, schema errors with the JSON path (`tools[1].timeoutSeconds`), codes manifest_invalid and
// tool_name_invalid. The variant (mcp, function read, function write; read or write tool) is chosen by
// `type` and `effect` first, so an error names the field that is wrong, never "invalid union".
import { parseDocument } from "yaml";
import type { z } from "zod";
import {
  functionReadPackageSchema,
  functionWritePackageSchema,
  mcpPackageSchema,
  type Manifest,
} from "./manifest.ts";

export type ManifestErrorCode = "manifest_invalid" | "tool_name_invalid";
export type ManifestError = { code: ManifestErrorCode; path: string; message: string };
export type ManifestParseResult = { ok: true; manifest: Manifest } | { ok: false; errors: ManifestError[] };

type PathSegment = PropertyKey;

/** A caplo.yaml larger than this is refused before parsing (the largest valid one is far smaller). */
export const MANIFEST_TEXT_MAX = 1_000_000;

/** `["tools", 1, "timeoutSeconds"]` → `tools[1].timeoutSeconds`; the root is "". */
export function formatPath(path: readonly PathSegment[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += out === "" ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

/** Parse caplo.yaml text. Never throws for bad input: every problem comes back as an error value. */
export function parseManifest(yamlText: string): ManifestParseResult {
  if (yamlText.length > MANIFEST_TEXT_MAX) {
    return { ok: false, errors: [{ code: "manifest_invalid", path: "", message: `caplo.yaml is ${yamlText.length} characters; at most ${MANIFEST_TEXT_MAX} are read` }] };
  }
  const doc = parseDocument(yamlText, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.map((error) => {
        const at = error.linePos?.[0];
        const where = at ? `line ${at.line}, column ${at.col}` : "unknown position";
        // The yaml library's message repeats the position; keep its first line only.
        const detail = error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?\s*$/, "");
        return { code: "manifest_invalid", path: "", message: `YAML syntax error at ${where}: ${detail}` } as const;
      }),
    };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // For example an alias bomb: the yaml library refuses to expand it.
    return { ok: false, errors: [{ code: "manifest_invalid", path: "", message: `caplo.yaml cannot be read: ${error instanceof Error ? error.message : String(error)}` }] };
  }
  return validateManifest(value);
}

/** Check an already parsed value (for example JSON) against the caplo.yaml schema. */
export function validateManifest(value: unknown): ManifestParseResult {
  if (value === null || value === undefined) {
    return { ok: false, errors: [{ code: "manifest_invalid", path: "", message: "caplo.yaml is empty: it needs apiVersion, kind, name, type, entry and runtime" }] };
  }
  if (typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, errors: [{ code: "manifest_invalid", path: "", message: "caplo.yaml must be a mapping of fields, not a list or a single value" }] };
  }
  const input = value as Record<string, unknown>;
  const type = packageType(input);
  const parsed = chooseSchema(input, type).safeParse(input);
  const errors: ManifestError[] = parsed.success ? [] : parsed.error.issues.flatMap((issue) => describeIssue(issue, input, type));
  if (parsed.success && parsed.data.type === "mcp") errors.push(...duplicateToolNames(parsed.data.tools));
  if (errors.length > 0 || !parsed.success) return { ok: false, errors: dedupe(errors) };
  return { ok: true, manifest: parsed.data };
}

/** The package type, or for a missing or wrong one the type its fields suggest. */
function packageType(input: Record<string, unknown>): "mcp" | "function" {
  return input.type === "mcp" || input.type === "function" ? input.type : "tools" in input ? "mcp" : "function";
}

function chooseSchema(input: Record<string, unknown>, type: "mcp" | "function") {
  if (type === "mcp") return mcpPackageSchema;
  if (input.effect === "write") return functionWritePackageSchema;
  if (input.effect === "read") return functionReadPackageSchema;
  // No usable effect: guess from write-only fields so the other errors stay precise.
  return "confirmation" in input ? functionWritePackageSchema : functionReadPackageSchema;
}

function duplicateToolNames(tools: readonly { name: string }[]): ManifestError[] {
  const seen = new Set<string>();
  const errors: ManifestError[] = [];
  tools.forEach((tool, index) => {
    if (seen.has(tool.name)) {
      errors.push({ code: "manifest_invalid", path: `tools[${index}].name`, message: `tool "${tool.name}" has more than one policy entry` });
    }
    seen.add(tool.name);
  });
  return errors;
}

function dedupe(errors: ManifestError[]): ManifestError[] {
  const seen = new Set<string>();
  return errors.filter((error) => {
    const key = `${error.code}\u0000${error.path}\u0000${error.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Why a field is refused where it is, for the fields that are allowed elsewhere. */
function misplacedReason(key: string, parentPath: readonly PathSegment[], type: "mcp" | "function"): string | undefined {
  const top = parentPath.length === 0;
  const inTool = parentPath.length === 2 && parentPath[0] === "tools";
  const policyLevel = top || inTool;
  const functionOnly = ["effect", "timeoutSeconds", "confirmation", "subject", "presentation", "progress", "elicitation"];
  if (top && type === "mcp" && functionOnly.includes(key)) {
    return `"${key}" is for function packages only; in an MCP package put it in each tools entry`;
  }
  if (top && key === "tools" && type !== "mcp") return `"tools" is for MCP packages only; a function package puts its policy at the top level`;
  if (policyLevel && key === "confirmation") return `"confirmation" is for write tools only (effect: write)`;
  if (policyLevel && key === "elicitation") return `"elicitation" is for read tools only (effect: read)`;
  const last = parentPath[parentPath.length - 1];
  if (last === "presentation" && key === "files") return `"presentation.files" is for read tools only (effect: read)`;
  if (last === "result" && key === "page") return `"page" is for read tools only (layout page is read-only)`;
  return undefined;
}

function valueAt(root: unknown, path: readonly PathSegment[]): unknown {
  let current: unknown = root;
  for (const segment of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

function isToolName(path: readonly PathSegment[]): boolean {
  return path.length === 3 && path[0] === "tools" && typeof path[1] === "number" && path[2] === "name";
}

function describeIssue(issue: z.core.$ZodIssue, input: Record<string, unknown>, type: "mcp" | "function"): ManifestError[] {
  const path = issue.path;
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => ({
      code: "manifest_invalid",
      path: formatPath([...path, key]),
      message: misplacedReason(key, path, type) ?? `unknown field "${key}": other fields are refused`,
    }));
  }
  const where = formatPath(path);
  const last = path[path.length - 1];
  const value = valueAt(input, path);
  if (isToolName(path)) {
    const message = value === undefined ? "required: the tool name as the server lists it" : `${JSON.stringify(value)} is not a tool name: ${issue.message}`;
    return [{ code: value === undefined ? "manifest_invalid" : "tool_name_invalid", path: where, message }];
  }
  if (path.length === 1 && last === "type") return [{ code: "manifest_invalid", path: where, message: `type must be "function" or "mcp"` }];
  if (last === "effect" && (path.length === 1 || (path.length === 3 && path[0] === "tools"))) {
    return [{ code: "manifest_invalid", path: where, message: value === undefined ? `required: "read" or "write"` : `effect must be "read" or "write", not ${JSON.stringify(value)}` }];
  }
  if (last === "layout" && value === "page") {
    return [{ code: "manifest_invalid", path: where, message: `layout "page" is for read tools only` }];
  }
  if (value === undefined && issue.code === "invalid_type") {
    return [{ code: "manifest_invalid", path: where, message: `required: ${issue.message.replace(/^Invalid input: /, "")}` }];
  }
  if (issue.code === "invalid_format" && typeof value === "string") {
    return [{ code: "manifest_invalid", path: where, message: `${JSON.stringify(value)} is not allowed: ${issue.message}` }];
  }
  return [{ code: "manifest_invalid", path: where, message: issue.message }];
}
