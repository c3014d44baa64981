// Publishing an agent: resolve each `package/tool` of agent.yaml against built package versions and
// freeze the result into an immutable, content-hashed Release that pins exact package version ids.
// A new package version reaches customers only through a new release.
import { createHash } from "node:crypto";
import {
  MODEL_TOOL_NAME_MAX,
  modelToolName,
  packageVersionSchema,
  releaseSchema,
  TOOL_REF_PATTERN,
  type AgentConfig,
  type AgentIssue,
  type PackageVersion,
  type Release,
  type ReleaseTool,
} from "@caplo/shared";

export type ReleaseResult = { ok: true; release: Release } | { ok: false; issues: AgentIssue[] };

/** Build the release of an agent from the package versions it may use. Pure: no I/O, `now` given. */
export function createRelease(agent: AgentConfig, candidates: readonly unknown[], now: Date): ReleaseResult {
  const issues: AgentIssue[] = [];
  const byName = new Map<string, PackageVersion>();
  candidates.forEach((candidate, index) => {
    const parsed = packageVersionSchema.safeParse(candidate);
    if (!parsed.success) {
      issues.push({ code: "package_version_invalid", path: `packages[${index}]`, message: `not a built package version: ${parsed.error.issues[0]?.message ?? "invalid"}` });
      return;
    }
    const version = parsed.data;
    const earlier = byName.get(version.name);
    if (earlier && earlier.id !== version.id) {
      issues.push({
        code: "package_ambiguous",
        path: `packages[${index}]`,
        message: `two versions of ${version.name} were given (${earlier.id} and ${version.id}); a release pins exactly one`,
      });
      return;
    }
    byName.set(version.name, version);
  });
  if (issues.length > 0) return { ok: false, issues };

  const tools: ReleaseTool[] = [];
  const modelNames = new Map<string, string>();
  agent.tools.forEach((ref, index) => {
    const path = `tools[${index}]`;
    const [, packageName, toolName] = TOOL_REF_PATTERN.exec(ref) ?? [];
    if (packageName === undefined || toolName === undefined) {
      issues.push({ code: "tool_ref_invalid", path, message: `${ref} is not package/tool` });
      return;
    }
    const version = byName.get(packageName);
    if (!version) {
      const known = [...byName.keys()].sort().join(", ") || "none";
      issues.push({ code: "package_unknown", path, message: `no built version of package ${packageName} was given (packages given: ${known})` });
      return;
    }
    const built = version.tools.find((tool) => tool.name === toolName);
    if (!built) {
      const known = version.tools.map((tool) => tool.name).sort().join(", ");
      issues.push({ code: "tool_unknown", path, message: `${version.id} has no tool ${toolName} (its tools: ${known})` });
      return;
    }
    const modelName = modelToolName(packageName, toolName);
    if (modelName.length > MODEL_TOOL_NAME_MAX) {
      issues.push({ code: "tool_name_invalid", path, message: `the model would see ${modelName} (${modelName.length} characters); at most ${MODEL_TOOL_NAME_MAX}` });
      return;
    }
    const clash = modelNames.get(modelName);
    if (clash !== undefined) {
      issues.push({ code: "tool_name_conflict", path, message: `${ref} and ${clash} both reach the model as ${modelName}` });
      return;
    }
    modelNames.set(modelName, ref);
    tools.push({
      ref,
      package: packageName,
      tool: toolName,
      modelName,
      packageVersionId: version.id,
      description: built.description,
      inputSchema: built.inputSchema,
      ...(built.outputSchema !== undefined && { outputSchema: built.outputSchema }),
      policy: built.policy,
      hasStatus: built.hasStatus,
    });
  });

  // A tool that acts for a verified customer needs somewhere a customer can be verified: the widget with
  // identity settings, or a messaging channel (whose channel identity is a subject at level low).
  const subjectTools = tools.filter((tool) => tool.policy.subject !== undefined);
  const messaging = agent.channels.whatsapp ?? agent.channels.messenger ?? agent.channels.instagram;
  if (subjectTools.length > 0 && agent.identity === undefined && messaging === undefined) {
    issues.push({
      code: "identity_required",
      path: "identity",
      message: `${subjectTools.map((tool) => tool.ref).join(", ")} act for a verified customer, but this agent cannot verify one: add identity settings`,
    });
  }
  if (issues.length > 0) return { ok: false, issues };

  const pinned = [...new Set(tools.map((tool) => tool.package))].sort().map((name) => byName.get(name)!);
  const contentHash = releaseHash({ config: agent, packages: pinned, tools });
  const release = releaseSchema.parse({
    id: `${agent.name}@sha256:${contentHash}`,
    agent: agent.name,
    contentHash,
    config: agent,
    packages: pinned,
    tools,
    publishedAt: now.toISOString(),
  });
  // Parsing may only drop what is not part of a release; if it changed the content, that is a bug here.
  if (releaseHash(release) !== contentHash) throw new Error("release content changed while parsing it");
  return { ok: true, release: deepFreeze(release) };
}

/** Whether a release's id and contentHash match its content (a stored file was not altered). */
export function verifyRelease(release: Release): boolean {
  return release.contentHash === releaseHash(release) && release.id === `${release.agent}@sha256:${release.contentHash}` && release.config.name === release.agent;
}

/**
 * The content hash of a release: sha256 of the canonical JSON (sorted keys) of its config, the pinned
 * package versions and its tools. Where or when a version was built, and when the release
 * was published, are not content: publishing the same agent with the same versions gives the same id.
 */
export function releaseHash(release: Pick<Release, "config" | "packages" | "tools">): string {
  const content = {
    format: 1,
    config: release.config,
    // The whole pinned version (its manifest and tool policies too), except where and when it was built.
    packages: release.packages.map(({ dir: _dir, builtAt: _builtAt, ...version }) => version),
    tools: release.tools,
  };
  return createHash("sha256").update(canonicalJson(content)).digest("hex");
}

/** JSON with object keys sorted at every depth, so equal content always has equal bytes. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (inner === null || typeof inner !== "object" || Array.isArray(inner)) return inner;
    return Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
