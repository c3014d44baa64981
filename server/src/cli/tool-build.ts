// `caplo tool build DIR [--json]`: builds a tool package and prints the frozen version (content hash and
// every tool with its effect, timeout, confirmation, presentation and progress), or every error.
// Exit 0 when it builds, 1 when it does not, 2 for a usage error.
import type { PackageVersion } from "@caplo/shared";
import { buildSettings } from "../app/runnerSettings.ts";
import { buildPackage, type BuildResult } from "../build/index.ts";
import { readConfig } from "../config/index.ts";

export const help = `caplo tool build [DIR] [--json]

Loads the package in DIR (default .), freezes what it ships (not its .caplo folder, local secrets
files, logs or test output) into DIR/.caplo/versions/NAME/HASH, lists the tools that copy defines on
Node 24, joins them with caplo.yaml, checks every presentation against the tools' schemas, and prints
the frozen version. Every error is reported with its code and caplo.yaml path:
  manifest_invalid, tool_name_invalid, policy_missing, policy_unknown, presentation_invalid,
  entry_invalid, status_invalid, package_too_large, version_altered
Warnings (the build still succeeds): file_not_shipped, pending_needs_structured_content

--json  print one JSON object: {"ok": true, "version": {...}} or {"ok": false, "errors": [{"code", "path", "message"}]}
Exit status: 0 built, 1 failed.`;

export async function run(args: string[]): Promise<number> {
  const json = args.includes("--json");
  const unknown = args.filter((arg) => arg.startsWith("-") && arg !== "--json");
  const dirs = args.filter((arg) => !arg.startsWith("-"));
  if (unknown.length > 0 || dirs.length > 1) {
    console.error(`caplo tool build: ${unknown.length > 0 ? `unknown option ${unknown[0]}` : "one DIR only"}\n\n${help}`);
    return 2;
  }
  // The runner's settings (CAPLO_NODE24, CAPLO_CGROUPS) are read once here and passed down.
  const read = readConfig(process.env);
  if (!read.ok) {
    for (const error of read.errors) console.error(`${error.code}  ${error.path}: ${error.message}`);
    return 2;
  }
  const result = await buildPackage(dirs[0] ?? ".", buildSettings(read.config));
  if (json) console.log(JSON.stringify(result));
  else if (result.ok) {
    console.log(describeVersion(result.version));
    for (const warning of result.warnings) console.error(`warning ${warning.code}  ${warning.path || "caplo.yaml"}: ${warning.message}`);
  }
  else console.error(describeErrors(result));
  return result.ok ? 0 : 1;
}

export function describeErrors(result: Extract<BuildResult, { ok: false }>): string {
  const lines = result.errors.map((error) => `  ${error.code}  ${error.path || "caplo.yaml"}: ${error.message}`);
  return [`Build failed with ${result.errors.length} error${result.errors.length === 1 ? "" : "s"}:`, ...lines].join("\n");
}

export function describeVersion(version: PackageVersion): string {
  const lines = [
    `Built ${version.name} (${version.type} package)`,
    `  version  ${version.id}`,
    `  hash     sha256:${version.contentHash}`,
    `  frozen   ${version.dir}`,
    `  tools    ${version.tools.length}`,
  ];
  for (const tool of version.tools) {
    const policy = tool.policy;
    lines.push("", `  ${tool.modelName}`);
    lines.push(`    effect        ${policy.effect}${policy.effect === "write" ? `, confirmation ${policy.confirmation}` : ""}${tool.hasStatus ? ", status checks" : ""}`);
    lines.push(`    timeout       ${policy.timeoutSeconds} s`);
    if (policy.subject) lines.push(`    subject       ${policy.subject.policy}${policy.subject.selector ? ` (selector ${policy.subject.selector})` : ""}`);
    lines.push(`    presentation  ${describePresentation(policy.presentation)}`);
    lines.push(`    progress      ${policy.progress ? JSON.stringify(policy.progress.label) + (policy.progress.spoken ? `, spoken ${JSON.stringify(policy.progress.spoken)}` : "") : "none"}`);
    if (policy.effect === "read" && policy.elicitation) lines.push(`    elicitation   ${policy.elicitation.style}: ${policy.elicitation.fields.map((field) => field.name).join(", ")}`);
  }
  return lines.join("\n");
}

function describePresentation(presentation: PackageVersion["tools"][number]["policy"]["presentation"]): string {
  if (!presentation) return "none";
  const parts = [`${JSON.stringify(presentation.title)}: ${presentation.fields.length} field${presentation.fields.length === 1 ? "" : "s"}`];
  if (presentation.receipt) parts.push(`receipt ${presentation.receipt.fields.length}`);
  if (presentation.result) parts.push(`result ${presentation.result.layout}${presentation.result.path ? ` of ${presentation.result.path}` : ""}`);
  if ("files" in presentation && presentation.files) parts.push(`files ${presentation.files.accept.join("/")}`);
  return parts.join(", ");
}
