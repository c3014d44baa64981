// What the gateway says about a frame it cannot take: the frame's `ref` (echoed only when it is a string
// within the limit, never cut short), and a refused frame's code, path and a plain sentence instead of
// the schema library's wording.
import type { z } from "zod";
import { FRAME_REF_MAX } from "@caplo/shared";

type Issue = z.core.$ZodIssue;
export type FrameProblem = { code: "frame_invalid" | "edit_invalid"; path: string; message: string };

/** A frame's ref: `ok` with the ref (or none), or a ref that cannot be echoed (over the limit, not a string). */
export function refOf(raw: unknown): { ok: true; ref?: string } | { ok: false; problem: FrameProblem } {
  if (!raw || typeof raw !== "object" || !("ref" in raw)) return { ok: true };
  const ref = (raw as { ref: unknown }).ref;
  if (typeof ref !== "string") return { ok: false, problem: { code: "frame_invalid", path: "ref", message: "ref must be a string" } };
  if (ref.length > FRAME_REF_MAX) return { ok: false, problem: { code: "frame_invalid", path: "ref", message: `ref is at most ${FRAME_REF_MAX} characters; this one had ${ref.length}` } };
  return { ok: true, ref };
}

/** The ref of a frame that was not parsed (dropped by the rate limit, or too large), if it has a usable one. */
export function refOfText(bytes: Buffer): string | undefined {
  try {
    const found = refOf(JSON.parse(bytes.toString("utf8")));
    return found.ok ? found.ref : undefined;
  } catch {
    return undefined;
  }
}

function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let value = raw;
  for (const key of path) value = value && typeof value === "object" ? (value as Record<PropertyKey, unknown>)[key] : undefined;
  return value;
}

const quoted = (value: unknown) => (typeof value === "string" ? JSON.stringify(value.slice(0, 40)) : value === undefined ? "none" : JSON.stringify(value)?.slice(0, 40));
const list = (values: readonly unknown[]) => values.map((value) => String(value)).join(", ");

/** The first issue of a refused frame as {code, path, message}: edits' problems are edit_invalid. */
export function frameProblem(issues: readonly Issue[], raw: unknown): FrameProblem {
  const issue = issues[0];
  if (!issue) return { code: "frame_invalid", path: "", message: "the frame is not valid" };
  const path = issue.path.map(String).join(".");
  const code = issue.path[0] === "event" && issue.path[1] === "edits" ? "edit_invalid" : "frame_invalid";
  return { code, path, message: issueMessage(issue, path, valueAt(raw, issue.path)) };
}

function issueMessage(issue: Issue, path: string, value: unknown): string {
  const field = path || "the frame";
  switch (issue.code) {
    case "invalid_union": {
      const options = "options" in issue && Array.isArray(issue.options) ? (issue.options as unknown[]) : undefined;
      if (path === "t" && options) return `unknown frame type ${quoted(value)}: a client sends one of ${list(options)}`;
      if (path.endsWith("type") && options) return `unknown event type ${quoted(value)}: one of ${list(options)}`;
      return `${field} is not valid here`;
    }
    case "invalid_type":
      if (value === undefined) return `${field} is required`;
      return `${field} must be ${issue.expected === "object" ? "an object" : issue.expected === "array" ? "a list" : `a ${issue.expected}`}`;
    case "too_big":
      return issue.origin === "string" ? `${field} is at most ${issue.maximum} characters` : issue.origin === "array" ? `${field} has at most ${issue.maximum} items` : `${field} is at most ${issue.maximum}`;
    case "too_small":
      if (issue.origin === "string") return Number(issue.minimum) <= 1 ? `${field} must not be empty` : `${field} is at least ${issue.minimum} characters`;
      return issue.origin === "array" ? `${field} has at least ${issue.minimum} items` : `${field} is at least ${issue.minimum}`;
    case "invalid_value":
      return `${field} must be ${issue.values.length === 1 ? quoted(issue.values[0]) : `one of ${list(issue.values)}`}`;
    case "custom":
      return issue.message;
    default:
      return `${field} is not valid`;
  }
}
