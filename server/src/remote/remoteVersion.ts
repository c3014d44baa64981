// A published remote MCP server version: the reviewed tools with their schemas, frozen and named by
// the content hash of exactly that reviewed list. Publishing refuses tools that changed since review;
// drift compares a version with what the server lists now.
import { createHash } from "node:crypto";
import { z } from "zod";
import { builtToolSchema, modelToolName, MODEL_TOOL_NAME_MAX, type BuiltTool, type ToolPolicy } from "@caplo/shared";
import { canonicalJson, schemaHash, type ListedTool, type Review, type ReviewProblem } from "./remoteReview.ts";

export const remoteVersionSchema = z.object({
  /** `remote:<name>@sha256:<hex>`: the content hash of the reviewed tool list and schemas. */
  id: z.string(),
  kind: z.literal("remote-mcp"),
  name: z.string(),
  url: z.string(),
  authorizationSecret: z.string().optional(),
  /** The transport it was reviewed over: calls use only this one. Absent in older versions: either. */
  transport: z.enum(["streamable-http", "sse"]).optional(),
  /** Whether the server advertised EFFECT_OUTCOME_CAPABILITY when published (outcome metadata trusted). */
  effectOutcomes: z.boolean().optional(),
  /** Whether the server advertised OPERATION_STATUS_CAPABILITY when published (writes get status checks). */
  operationStatus: z.boolean().optional(),
  contentHash: z.string().regex(/^[0-9a-f]{64}$/),
  tools: z.array(builtToolSchema.extend({ schemaHash: z.string() })).min(1),
  /** Tools the server listed at review that the owner left unreviewed: known, not exposed, not drift. */
  unpublished: z.array(z.string()).default([]),
  publishedAt: z.string(),
});
export type RemoteVersion = z.infer<typeof remoteVersionSchema>;
export type RemoteTool = RemoteVersion["tools"][number];

/** What the server advertised when the version was published (its capabilities). */
export type RemoteServerFacts = { effectOutcomes?: boolean; operationStatus?: boolean };

/** The content hash of a version: its name, URL, secret name, transport, capabilities, tools and unpublished names. */
export function remoteContentHash(version: Pick<RemoteVersion, "name" | "url" | "authorizationSecret" | "transport" | "effectOutcomes" | "operationStatus" | "tools" | "unpublished">): string {
  // Fields added later enter the material only when set, so earlier versions keep their ids.
  const material = canonicalJson({
    name: version.name,
    url: version.url,
    authorizationSecret: version.authorizationSecret ?? null,
    ...(version.transport !== undefined && { transport: version.transport }),
    ...(version.effectOutcomes !== undefined && { effectOutcomes: version.effectOutcomes }),
    ...(version.operationStatus !== undefined && { operationStatus: version.operationStatus }),
    tools: [...version.tools].sort((a, b) => a.name.localeCompare(b.name)),
    unpublished: [...version.unpublished].sort(),
  });
  return createHash("sha256").update(material).digest("hex");
}

/** Freezes the reviewed tools of a review against the server's current listing. */
export function publishRemote(review: Review, listed: ListedTool[], now = new Date(), server: RemoteServerFacts = {}): { ok: true; version: RemoteVersion; skipped: string[] } | { ok: false; errors: ReviewProblem[] } {
  const errors: ReviewProblem[] = [];
  const tools: RemoteTool[] = [];
  const skipped: string[] = [];
  review.tools.forEach((reviewed, index) => {
    if (reviewed.effect === "unreviewed") {
      skipped.push(reviewed.name);
      return;
    }
    const current = listed.find((tool) => tool.name === reviewed.name);
    if (!current) {
      errors.push({ code: "remote_tool_gone", path: `/tools/${index}`, message: `the server no longer lists ${reviewed.name}` });
      return;
    }
    if (schemaHash(current) !== reviewed.schemaHash) {
      errors.push({ code: "remote_tool_changed", path: `/tools/${index}/schemaHash`, message: `${reviewed.name} changed on the server since it was reviewed: run caplo remote review and review it again` });
      return;
    }
    const modelName = modelToolName(review.name, reviewed.name);
    if (modelName.length > MODEL_TOOL_NAME_MAX) {
      errors.push({ code: "tool_name_invalid", path: `/tools/${index}/name`, message: `${modelName} is over ${MODEL_TOOL_NAME_MAX} characters` });
      return;
    }
    const policy: ToolPolicy =
      reviewed.effect === "write"
        ? { name: reviewed.name, effect: "write", timeoutSeconds: reviewed.timeoutSeconds, confirmation: reviewed.confirmation ?? "required" }
        : { name: reviewed.name, effect: "read", timeoutSeconds: reviewed.timeoutSeconds };
    tools.push({
      name: reviewed.name,
      modelName,
      description: current.description ?? "",
      inputSchema: current.inputSchema,
      ...(current.outputSchema && { outputSchema: current.outputSchema }),
      policy,
      // A write gets status checks (caplo/status) when the server advertised operation status.
      hasStatus: reviewed.effect === "write" && server.operationStatus === true,
      schemaHash: reviewed.schemaHash,
    });
  });
  if (errors.length) return { ok: false, errors };
  if (tools.length === 0) return { ok: false, errors: [{ code: "remote_nothing_reviewed", path: "/tools", message: "no tool is reviewed as read or write" }] };
  const facts = {
    name: review.name,
    url: review.url,
    ...(review.authorizationSecret && { authorizationSecret: review.authorizationSecret }),
    ...(review.transport && { transport: review.transport }),
    ...(server.effectOutcomes !== undefined && { effectOutcomes: server.effectOutcomes }),
    ...(server.operationStatus !== undefined && { operationStatus: server.operationStatus }),
  };
  const contentHash = remoteContentHash({ ...facts, tools, unpublished: skipped });
  return {
    ok: true,
    skipped,
    version: {
      id: `remote:${review.name}@sha256:${contentHash}`,
      kind: "remote-mcp",
      ...facts,
      contentHash,
      tools,
      unpublished: skipped,
      publishedAt: now.toISOString(),
    },
  };
}

export type Drift = { added: string[]; removed: string[]; changed: string[] };

/** What changed on the server since the version was published. */
export function driftOf(version: RemoteVersion, listed: ListedTool[]): Drift {
  const drift: Drift = { added: [], removed: [], changed: [] };
  for (const tool of listed) {
    const published = version.tools.find((candidate) => candidate.name === tool.name);
    if (!published) {
      if (!version.unpublished.includes(tool.name)) drift.added.push(tool.name);
    }
    else if (published.schemaHash !== schemaHash(tool)) drift.changed.push(tool.name);
  }
  for (const tool of version.tools) if (!listed.some((candidate) => candidate.name === tool.name)) drift.removed.push(tool.name);
  return drift;
}

/** The published tools still callable: those the server lists unchanged. */
export function exposedTools(version: RemoteVersion, listed: ListedTool[]): BuiltTool[] {
  const drift = driftOf(version, listed);
  return version.tools.filter((tool) => !drift.changed.includes(tool.name) && !drift.removed.includes(tool.name));
}

/**
 * The review a published version stands for: its tools as they were classified (the tools it left
 * unreviewed are not in it: a listing merged into it brings them back unreviewed). The team console starts
 * a review again from here, so what was decided before is kept and only what changed is asked again.
 */
export function reviewOfVersion(version: RemoteVersion): Review {
  return {
    apiVersion: "v1",
    kind: "RemoteMcpReview",
    name: version.name,
    url: version.url,
    ...(version.authorizationSecret && { authorizationSecret: version.authorizationSecret }),
    ...(version.transport && { transport: version.transport }),
    tools: version.tools.map((tool) => ({
      name: tool.name,
      ...(tool.description && { description: tool.description }),
      schemaHash: tool.schemaHash,
      effect: tool.policy.effect,
      timeoutSeconds: tool.policy.timeoutSeconds ?? 10,
      ...(tool.policy.effect === "write" && { confirmation: tool.policy.confirmation }),
    })),
  };
}
