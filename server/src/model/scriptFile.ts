// The scripted model's rules from a JSON file (`caplo serve --script FILE`), parsed by their schema.
import { readFile } from "node:fs/promises";
import { z } from "zod";
import type { ScriptedRule } from "./scripted.ts";

type ScriptError = { code: "script_unreadable" | "script_invalid"; path: string; message: string };

const patternSchema = z.union([z.string().min(1), z.strictObject({ regex: z.string().min(1), flags: z.string().regex(/^[imsu]*$/).optional() })]);
const scriptSchema = z.array(
  z.strictObject({
    when: patternSchema.optional(),
    whenNote: patternSchema.optional(),
    replayUser: z.boolean().optional(),
    replies: z.array(
      z.strictObject({
        text: z.string().optional(),
        toolCalls: z.array(z.strictObject({ name: z.string().min(1), args: z.record(z.string(), z.unknown()).optional() })).optional(),
        cases: z.array(z.strictObject({ tool: patternSchema, text: z.string() })).optional(),
        pauseMs: z.int().min(0).max(600_000).optional(),
      }),
    ),
  }),
);

/** Scripted-model rules from a JSON file: `when`/`whenNote` are substrings or `{ "regex": "...", "flags": "i" }`. */
export async function loadScript(file: string): Promise<{ ok: true; rules: ScriptedRule[] } | { ok: false; error: ScriptError }> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    return { ok: false, error: { code: "script_unreadable", path: file, message: `cannot read the script: ${error instanceof Error ? error.message : String(error)}` } };
  }
  const parsed = scriptSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, error: { code: "script_invalid", path: issue.path.join("."), message: issue.message } };
  }
  const pattern = (value: z.infer<typeof patternSchema> | undefined) => (value === undefined ? undefined : typeof value === "string" ? value : new RegExp(value.regex, value.flags));
  return {
    ok: true,
    rules: parsed.data.map((rule) => ({
      ...(rule.when !== undefined && { when: pattern(rule.when) }),
      ...(rule.whenNote !== undefined && { whenNote: pattern(rule.whenNote) }),
      ...(rule.replayUser && { replayUser: true }),
      replies: rule.replies.map((reply) => ({
        ...(reply.text !== undefined && { text: reply.text }),
        ...(reply.toolCalls && { toolCalls: reply.toolCalls }),
        ...(reply.cases && { cases: reply.cases.map((entry) => ({ tool: pattern(entry.tool)!, text: entry.text })) }),
        ...(reply.pauseMs !== undefined && { pauseMs: reply.pauseMs }),
      })),
    })),
  };
}

