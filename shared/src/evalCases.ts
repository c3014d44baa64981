// The evaluation cases file (`caplo eval CASES.yaml`, kind: EvalCases): conversations to run against an agent
// release, what the customer does with each proposed write (the write itself never runs: its outcome is
// scripted here), and what must have happened. One zod schema; parseEvalCases reads YAML text into it with
// coded errors that carry the YAML path and its line and column. Every object is strict. docs/evaluations.md.
import { LineCounter, isMap, isNode, isPair, isScalar, isSeq, parseDocument, type Document } from "yaml";
import { z } from "zod";
import * as L from "./limits.ts";
import { AGENT_NAME_PATTERN, TOOL_REF_PATTERN } from "./agent.ts";
import { CHANNEL_KINDS } from "./channel.ts";
import { formatPath } from "./manifestParse.ts";
import { OUTCOMES, operationRefSchema } from "./outcome.ts";

export const EVAL_CASES_KIND = "EvalCases";
/** A cases file larger than this is refused before parsing. */
export const EVAL_CASES_MAX_BYTES = 256 * 1024;
export const EVAL_CASES_MAX = 200;
export const EVAL_TURNS_MAX = 20;
export const EVAL_EXPECTATIONS_MAX = 50;
export const EVAL_CASE_NAME_MAX = 200;
/** What a customer turn may say: the widget protocol's message limit. */
export const EVAL_CUSTOMER_TEXT_MAX = 4000;
/** `--repeat` (and a case's `repeat`) at most. */
export const EVAL_REPEAT_MAX = 100;
/** How a read tool is answered: run for real against the package's test environment, or from its fixtures. */
export const EVAL_READ_MODES = ["live", "fixtures"] as const;
export type EvalReadMode = (typeof EVAL_READ_MODES)[number];
/** How a call's or proposal's arguments are compared with the expected ones. */
export const EVAL_ARG_MATCHES = ["exact", "subset", "pattern"] as const;
export type EvalArgMatch = (typeof EVAL_ARG_MATCHES)[number];

const toolRef = z.string().regex(TOOL_REF_PATTERN, "package/tool, for example orders/get_order");
const text = (max: number) => z.string().min(1).max(max);
const regex = z
  .string()
  .min(1)
  .max(1000)
  .refine((source) => {
    try {
      new RegExp(source);
      return true;
    } catch {
      return false;
    }
  }, "not a valid regular expression");
const jsonObject = z.record(z.string(), z.unknown());

/** A tool call of the model: which tool, and optionally its arguments compared as `match` says (default subset). */
const callSchema = z.strictObject({
  tool: toolRef,
  args: jsonObject.optional(),
  match: z.enum(EVAL_ARG_MATCHES).default("subset"),
  /** called only: exactly this many matching calls (default: at least one). */
  times: z.int().min(1).max(100).optional(),
});

const proposedSchema = z.strictObject({
  tool: toolRef,
  args: jsonObject.optional(),
  match: z.enum(EVAL_ARG_MATCHES).default("subset"),
  /** Review card fields by label, as the customer sees them (a last4 field shows its last four characters). */
  fields: z.record(z.string().min(1), z.string()).optional(),
});

/** One check. Exactly one of its keys is given. */
export const evalExpectationSchema = z
  .strictObject({
    called: callSchema.optional(),
    notCalled: callSchema.omit({ times: true }).optional(),
    proposed: proposedSchema.optional(),
    noWrite: z.literal(true).optional(),
    handoff: z.union([z.literal(true), z.strictObject({ queue: z.string().regex(/^[a-z][a-z0-9-]{0,39}$/).optional() })]).optional(),
    elicited: z.strictObject({ fields: z.array(z.string().min(1)).min(1).max(12), tool: toolRef.optional() }).optional(),
    reply: z
      .strictObject({ contains: text(4000).optional(), matches: regex.optional(), notContains: text(4000).optional() })
      .refine((reply) => Object.keys(reply).length > 0, "name contains, matches or notContains")
      .optional(),
    maxSteps: z.int().min(1).max(1000).optional(),
    maxTokens: z.int().min(1).max(100_000_000).optional(),
  })
  .superRefine((item, issues) => {
    const keys = Object.keys(item).filter((key) => item[key as keyof typeof item] !== undefined);
    if (keys.length !== 1) {
      issues.addIssue({
        code: "custom",
        path: [],
        message: `each check names exactly one of called, notCalled, proposed, noWrite, handoff, elicited, reply, maxSteps, maxTokens${keys.length > 1 ? ` (this one names ${keys.join(" and ")})` : ""}`,
      });
    }
  });
export type EvalExpectation = z.output<typeof evalExpectationSchema>;

/** The scripted outcome of a write the customer confirms (or one that needs no confirmation). It never runs. */
export const evalConfirmSchema = z
  .strictObject({
    outcome: z.enum(OUTCOMES),
    /** applied: the tool's structured result (checked against its outputSchema). */
    result: jsonObject.optional(),
    /** not_applied: the refusal; pending: the message; unknown: the reason. */
    message: text(1000).optional(),
    /** pending: the operation reference. */
    operationRef: operationRefSchema.optional(),
    /** New values of editable review fields by presentation path (for example /reason). */
    edits: z.record(z.string().regex(/^\/[A-Za-z_][A-Za-z0-9_]{0,63}$/), z.string().max(L.OPTION_VALUE_MAX)).optional(),
  })
  .superRefine((confirm, issues) => {
    if (confirm.result !== undefined && confirm.outcome !== "applied") issues.addIssue({ code: "custom", path: ["result"], message: "result is for outcome applied only" });
    if (confirm.operationRef !== undefined && confirm.outcome !== "pending") issues.addIssue({ code: "custom", path: ["operationRef"], message: "operationRef is for outcome pending only" });
    if (confirm.message !== undefined && confirm.outcome === "applied") issues.addIssue({ code: "custom", path: ["message"], message: "an applied outcome has a result, not a message" });
  });
export type EvalConfirm = z.output<typeof evalConfirmSchema>;

const answerSchema = z.union([z.enum(["decline", "cancel"]), z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))]);

export const evalTurnSchema = z
  .strictObject({
    /** What the customer says. */
    customer: text(EVAL_CUSTOMER_TEXT_MAX),
    /** The customer confirms the write proposed in this turn, with the outcome it is scripted to have. */
    confirm: evalConfirmSchema.optional(),
    /** The customer declines the write proposed in this turn. */
    decline: z.literal(true).optional(),
    /** Answers to a tool's questions in this turn, in order: the fields' values, or decline / cancel. */
    answers: z.array(answerSchema).max(8).optional(),
    /** Checks of what happened in this turn (the follow-up after a decision included). */
    expect: z.array(evalExpectationSchema).max(EVAL_EXPECTATIONS_MAX).default([]),
  })
  .superRefine((turn, issues) => {
    if (turn.confirm && turn.decline) issues.addIssue({ code: "custom", path: ["decline"], message: "a turn confirms or declines, not both" });
  });
export type EvalTurn = z.output<typeof evalTurnSchema>;

export const evalCaseSchema = z.strictObject({
  name: text(EVAL_CASE_NAME_MAX),
  /** Default web. The agent must have this channel. */
  channel: z.enum(CHANNEL_KINDS).optional(),
  /** The customer is signed in at this level from the start (identity token or channel identity). */
  signIn: z
    .strictObject({
      level: z.enum(L.STEP_UP_LEVELS),
      id: text(200).default("eval-customer"),
      ref: text(200).optional(),
      /** How long ago they signed in. Default 0. */
      authAgeSeconds: z.int().min(0).max(L.MAX_AUTH_AGE_SECONDS_MAX).default(0),
    })
    .optional(),
  /** Default: the file's `reads`, else live. */
  reads: z.enum(EVAL_READ_MODES).optional(),
  /** Runs of this case (model variance); default --repeat. */
  repeat: z.int().min(1).max(EVAL_REPEAT_MAX).optional(),
  turns: z.array(evalTurnSchema).min(1).max(EVAL_TURNS_MAX),
  /** Checks of the whole conversation. */
  expect: z.array(evalExpectationSchema).max(EVAL_EXPECTATIONS_MAX).default([]),
});
export type EvalCase = z.output<typeof evalCaseSchema>;

export const evalCasesSchema = z
  .strictObject({
    apiVersion: z.string().regex(/^v1(\.0(\.0)?)?$/, "v1"),
    kind: z.literal(EVAL_CASES_KIND),
    /** The agent these cases are for: a release of another agent is refused. */
    agent: z.string().regex(AGENT_NAME_PATTERN).optional(),
    description: z.string().max(500).optional(),
    channel: z.enum(CHANNEL_KINDS).default("web"),
    reads: z.enum(EVAL_READ_MODES).default("live"),
    cases: z.array(evalCaseSchema).min(1).max(EVAL_CASES_MAX),
  })
  .superRefine((file, issues) => {
    const seen = new Set<string>();
    file.cases.forEach((entry, index) => {
      if (seen.has(entry.name)) issues.addIssue({ code: "custom", path: ["cases", index, "name"], message: `another case is already named ${JSON.stringify(entry.name)}` });
      seen.add(entry.name);
    });
  });
export type EvalCases = z.output<typeof evalCasesSchema>;

export type EvalCasesError = { code: "eval_cases_invalid" | "eval_cases_yaml_invalid" | "eval_cases_too_large"; path: string; message: string; line?: number; column?: number };
export type EvalCasesResult = { ok: true; cases: EvalCases } | { ok: false; errors: EvalCasesError[] };

/** Parse a cases file's text. Never throws for bad input: every problem is an error value with its position. */
export function parseEvalCases(yamlText: string): EvalCasesResult {
  if (new TextEncoder().encode(yamlText).length > EVAL_CASES_MAX_BYTES) {
    return { ok: false, errors: [{ code: "eval_cases_too_large", path: "", message: `the cases file is over ${EVAL_CASES_MAX_BYTES} bytes` }] };
  }
  const lines = new LineCounter();
  const doc = parseDocument(yamlText, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.map((error) => {
        const at = error.linePos?.[0] ?? lines.linePos(error.pos[0]);
        const detail = error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
        return { code: "eval_cases_yaml_invalid", path: "", message: `YAML syntax error: ${detail}`, line: at.line, column: at.col };
      }),
    };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    return { ok: false, errors: [{ code: "eval_cases_yaml_invalid", path: "", message: `the cases file cannot be read: ${error instanceof Error ? error.message : String(error)}` }] };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, errors: [{ code: "eval_cases_invalid", path: "", message: "the cases file is a mapping with apiVersion, kind: EvalCases and cases", line: 1, column: 1 }] };
  }
  const parsed = evalCasesSchema.safeParse(value);
  if (parsed.success) return { ok: true, cases: parsed.data };
  // An unknown key already says what is wrong with its object: no second error for the same object.
  const unknownAt = new Set(parsed.error.issues.filter((issue) => issue.code === "unrecognized_keys").map((issue) => formatPath(issue.path)));
  return {
    ok: false,
    errors: parsed.error.issues.filter((issue) => issue.code !== "custom" || !unknownAt.has(formatPath(issue.path))).flatMap((issue) => {
      const keys = issue.code === "unrecognized_keys" ? issue.keys : [undefined];
      return keys.map((key) => {
        const path = key === undefined ? issue.path : [...issue.path, key];
        const at = positionOf(doc, lines, path);
        const message = key !== undefined ? `unknown field "${key}": other fields are refused` : issue.message.replace(/^Invalid input: /, "");
        return { code: "eval_cases_invalid" as const, path: formatPath(path), message, ...at };
      });
    }),
  };
}

/** Line and column of the deepest node that exists on the path (a key itself for an unknown field). */
function positionOf(doc: Document, lines: LineCounter, path: readonly PropertyKey[]): { line?: number; column?: number } {
  let node: unknown = doc.contents;
  let found: { range?: [number, number, number] | null } | undefined = isNode(node) ? node : undefined;
  for (const segment of path) {
    if (isMap(node)) {
      const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && item.key.value === segment);
      if (!isPair(pair)) break;
      found = isNode(pair.value) ? pair.value : (pair.key as typeof found);
      // An unknown key points at the key, not its value.
      if (segment === path.at(-1) && isNode(pair.key)) found = pair.key;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === "number") {
      const item = node.items[segment];
      if (!isNode(item)) break;
      found = item;
      node = item;
    } else break;
  }
  const offset = found?.range?.[0];
  if (offset === undefined) return {};
  const at = lines.linePos(offset);
  return { line: at.line, column: at.col };
}
