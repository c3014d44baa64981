// The review of a remote MCP server's tools: a YAML file listing every tool the server offers, with a
// hash of its schemas, where the owner classifies each as read or write with a timeout and
// confirmation. Only reviewed tools are published; a tool whose schemas changed since review is not.
// MCP annotations such as readOnlyHint are ignored: the effect is the owner's word only.
import { createHash } from "node:crypto";
import { parse, stringify } from "yaml";
import { z } from "zod";
import { PACKAGE_NAME_PATTERN, SECRET_NAME_PATTERN, TIMEOUT_SECONDS_MAX, TIMEOUT_SECONDS_MIN, toolNameSchema } from "@caplo/shared";

export type ListedTool = { name: string; description?: string; inputSchema: Record<string, unknown>; outputSchema?: Record<string, unknown> };

/** A stable JSON text: object keys sorted at every level. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

/** The hash the review pins: the tool's description and schemas as the server lists them. */
export function schemaHash(tool: ListedTool): string {
  const material = { description: tool.description ?? "", inputSchema: tool.inputSchema, outputSchema: tool.outputSchema ?? null };
  return `sha256:${createHash("sha256").update(canonicalJson(material)).digest("hex")}`;
}

const reviewedToolSchema = z.strictObject({
  /** The name as the server lists it; one that cannot reach the model (TOOL_NAME_PATTERN) stays unreviewed. */
  name: z.string().min(1),
  description: z.string().optional(),
  schemaHash: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  /** unreviewed until the owner decides; only read and write tools are published. */
  effect: z.enum(["unreviewed", "read", "write"]),
  timeoutSeconds: z.int().min(TIMEOUT_SECONDS_MIN).max(TIMEOUT_SECONDS_MAX).default(10),
  confirmation: z.enum(["required", "none"]).optional(),
  /** Set by `caplo remote review` when the server changed a reviewed tool: review it again. */
  changed: z.string().optional(),
});

/** The tools a review holds at most (a server listing more cannot be reviewed as one). */
export const REVIEW_TOOLS_MAX = 64;

export const reviewSchema = z.strictObject({
  apiVersion: z.literal("v1"),
  kind: z.literal("RemoteMcpReview"),
  name: z.string().regex(PACKAGE_NAME_PATTERN, "lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters"),
  url: z.string().url(),
  /** The secret whose value is sent as the Authorization header. */
  authorizationSecret: z.string().regex(SECRET_NAME_PATTERN).optional(),
  /** The transport the tools were listed over; a published version is called over it only. */
  transport: z.enum(["streamable-http", "sse"]).optional(),
  tools: z.array(reviewedToolSchema).max(REVIEW_TOOLS_MAX),
});
export type Review = z.output<typeof reviewSchema>;
export type ReviewedTool = z.output<typeof reviewedToolSchema>;
export type ReviewProblem = { code: string; path: string; message: string };

/** A fresh review of a listing: every tool unreviewed. */
export function newReview(name: string, url: string, listed: ListedTool[], authorizationSecret?: string, transport?: "streamable-http" | "sse"): Review {
  return {
    apiVersion: "v1",
    kind: "RemoteMcpReview",
    name,
    url,
    ...(authorizationSecret && { authorizationSecret }),
    ...(transport && { transport }),
    tools: listed.map((tool) => ({ name: tool.name, ...(tool.description && { description: tool.description }), schemaHash: schemaHash(tool), effect: "unreviewed" as const, timeoutSeconds: 10 })),
  };
}

export type ReviewChanges = { added: string[]; removed: string[]; changed: string[] };

/**
 * Merges a new listing into an existing review: new tools arrive unreviewed, removed tools are dropped,
 * and a reviewed tool whose schemas changed goes back to unreviewed with a note. Nothing changed on the
 * server is exposed until the owner reviews it again.
 */
export function mergeReview(review: Review, listed: ListedTool[]): { review: Review; changes: ReviewChanges } {
  const changes: ReviewChanges = { added: [], removed: [], changed: [] };
  const previous = new Map(review.tools.map((tool) => [tool.name, tool]));
  const tools: ReviewedTool[] = [];
  for (const tool of listed) {
    const hash = schemaHash(tool);
    const before = previous.get(tool.name);
    if (!before) {
      changes.added.push(tool.name);
      tools.push({ name: tool.name, ...(tool.description && { description: tool.description }), schemaHash: hash, effect: "unreviewed", timeoutSeconds: 10 });
    } else if (before.schemaHash !== hash) {
      changes.changed.push(tool.name);
      tools.push({ ...before, ...(tool.description && { description: tool.description }), schemaHash: hash, effect: "unreviewed", changed: `was ${before.effect}; its description or schemas changed on the server` });
    } else tools.push(before);
  }
  for (const name of previous.keys()) if (!listed.some((tool) => tool.name === name)) changes.removed.push(name);
  return { review: { ...review, tools }, changes };
}

const HEADER = `# Review of a remote MCP server's tools. For each tool set effect to read or write (writes take
# confirmation: required or none) and a timeoutSeconds of 1 to 30. Tools left unreviewed are not published.
# MCP hints such as readOnlyHint are ignored: the effect is your decision. Then: caplo remote publish FILE
`;

export function formatReview(review: Review): string {
  return HEADER + stringify(review);
}

/** Parses a review file with located errors; a write without confirmation gets required. */
export function parseReview(text: string): { ok: true; review: Review } | { ok: false; errors: ReviewProblem[] } {
  let data: unknown;
  try {
    data = parse(text);
  } catch (error) {
    return { ok: false, errors: [{ code: "review_yaml_invalid", path: "/", message: (error as Error).message }] };
  }
  return checkReview(data);
}

/** Checks a review (a parsed file, or the team console's JSON) with located errors. */
export function checkReview(data: unknown): { ok: true; review: Review } | { ok: false; errors: ReviewProblem[] } {
  const parsed = reviewSchema.safeParse(data);
  if (!parsed.success) {
    return {
      ok: false,
      errors: parsed.error.issues.map((issue) => ({ code: "review_invalid", path: `/${issue.path.join("/")}`, message: issue.message })),
    };
  }
  const errors: ReviewProblem[] = [];
  parsed.data.tools.forEach((tool, index) => {
    if (tool.effect !== "unreviewed" && !toolNameSchema.safeParse(tool.name).success) {
      errors.push({ code: "tool_name_invalid", path: `/tools/${index}/name`, message: `${tool.name} cannot be published: a tool the model calls is named with lowercase letters, digits and underscores, starting with a letter, at most 48 characters; leave it unreviewed` });
    }
    if (parsed.data.tools.findIndex((other) => other.name === tool.name) !== index) errors.push({ code: "review_invalid", path: `/tools/${index}/name`, message: `${tool.name} is in the review twice` });
    if (tool.effect === "read" && tool.confirmation) errors.push({ code: "review_invalid", path: `/tools/${index}/confirmation`, message: "confirmation is for write tools only" });
  });
  if (errors.length) return { ok: false, errors };
  return { ok: true, review: parsed.data };
}
