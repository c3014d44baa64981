// Tool fixtures (`caplo tool test`): the file format, loading with located errors, partial matching of
// a call's result against a fixture's expectations, secret values by name from the environment or a
// local dotenv file, and running one fixture through a runner: on the author's machine ("local") write
// fixtures run for real; on Caplo ("hosted", where nobody can approve a write) they are skipped and never
// run. See docs/tool-fixtures.md.
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, relative } from "node:path";
import { glob } from "tinyglobby";
import { z } from "zod";
import { OUTCOMES, callSubjectSchema, type PackageVersion, type WriteOutcome } from "@caplo/shared";
import type { LogLine, ToolCallResult, ToolRunner } from "./api.ts";
import type { LogStore } from "./logStore.ts";
import { insidePackage } from "./packagePath.ts";

const matcherSchema = z.union([z.strictObject({ $match: z.string() }), z.strictObject({ $any: z.literal(true) })]);

const expectSchema = z.strictObject({
  /** Whether the result is an error result. Defaults to false when nothing else is said about errors. */
  isError: z.boolean().optional(),
  /** Write tools: the outcome the runner records. */
  outcome: z.enum([...OUTCOMES, "step_up_required"]).optional(),
  /** Partial match of structuredContent (objects: listed keys only; arrays: same length, each item partial). */
  result: z.unknown().optional(),
  /** A substring of what the model sees (the error message for an error result). */
  text: z.string().optional(),
  /** Pending writes: the operationRef (a string, or { "$match": "regex" } / { "$any": true }). */
  operationRef: z.union([z.string(), matcherSchema]).optional(),
  /** Files taken out of the result, each matched partially ({ name, mimeType, size }). */
  files: z.array(z.record(z.string(), z.unknown())).optional(),
  /** Log lines that must appear, each matched partially ({ level, message }). */
  logs: z.array(z.record(z.string(), z.unknown())).optional(),
});

export const fixtureSchema = z.strictObject({
  /** Shown in the output; defaults to the file name and index. */
  name: z.string().min(1).max(200).optional(),
  /** The tool's name in the package; optional for function packages (their one tool). */
  tool: z.string().optional(),
  /** The arguments, validated against inputSchema by the runner like any call. Not for status fixtures. */
  input: z.record(z.string(), z.unknown()).optional(),
  /**
   * A status-check fixture instead of a call: the write tool's status check (function `status`, MCP
   * `caplo/status`) for this operationRef and/or the context's idempotencyKey; expect.outcome says
   * what it must map to.
   */
  status: z.strictObject({ operationRef: z.string().min(1).optional() }).optional(),
  /** Names of secrets to pass; values come from the environment or the secrets file, never the fixture. */
  secrets: z.array(z.string()).default([]),
  context: z
    .strictObject({
      idempotencyKey: z.string().optional(),
      conversationId: z.string().optional(),
      turnId: z.string().optional(),
      workspaceId: z.string().optional(),
      subject: callSubjectSchema.optional(),
    })
    .default({}),
  expect: expectSchema.default({}),
}).superRefine((fixture, issues) => {
  if (!fixture.status) return;
  const refuse = (path: (string | number)[], message: string) => issues.addIssue({ code: "custom", path, message });
  if (fixture.input !== undefined) refuse(["input"], "a status fixture has no input: it checks an earlier write by status.operationRef and/or context.idempotencyKey");
  if (fixture.status.operationRef === undefined && fixture.context.idempotencyKey === undefined) {
    refuse(["status"], "a status fixture names the write it checks: status.operationRef, context.idempotencyKey, or both");
  }
  if (fixture.expect.outcome === undefined) refuse(["expect", "outcome"], "a status fixture names the outcome it expects (applied, not_applied, pending or unknown)");
  for (const key of ["isError", "files"] as const) {
    if (fixture.expect[key] !== undefined) refuse(["expect", key], `expect.${key} is not available for a status check (use outcome, result, text, operationRef, logs)`);
  }
});
export type Fixture = z.output<typeof fixtureSchema>;
export type FixtureExpect = z.output<typeof expectSchema>;

export type FixtureError = { code: string; path: string; message: string };
export type LoadedFixture = { file: string; index: number; label: string; fixture?: Fixture; error?: FixtureError };

/** Loads every fixture file matching the package's tests glob; a bad file becomes a failing entry. */
export async function loadFixtures(dir: string, pattern: string): Promise<LoadedFixture[]> {
  // Fixtures are the package's own files: a glob that climbs out (../elsewhere/*.json, an absolute
  // path) or a file or folder linked outside is refused, never run.
  if (isAbsolute(pattern) || pattern.split(/[/\\]/).includes("..")) {
    return [{ file: pattern, index: 0, label: pattern, error: { code: "path_outside_package", path: "tests", message: `tests: ${JSON.stringify(pattern)} leaves the package: fixtures are files inside it` } }];
  }
  const files = (await glob(pattern, { cwd: dir, absolute: true, onlyFiles: true, followSymbolicLinks: false })).sort();
  const loaded: LoadedFixture[] = [];
  for (const file of files) {
    const name = relative(dir, file);
    const inside = insidePackage(dir, file);
    if (!inside.ok) {
      loaded.push({ file: name, index: 0, label: name, error: inside.error });
      continue;
    }
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(inside.path, "utf8"));
    } catch (error) {
      loaded.push({ file: name, index: 0, label: name, error: { code: "fixture_json_invalid", path: name, message: (error as Error).message } });
      continue;
    }
    const items = Array.isArray(data) ? data : [data];
    items.forEach((item, index) => {
      const parsed = fixtureSchema.safeParse(item);
      const fallback = Array.isArray(data) ? `${name}[${index}]` : name;
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        // A strict object's unknown key is reported at the object: point at the key itself.
        const segments = [...issue.path.map(String), ...(issue.code === "unrecognized_keys" ? issue.keys.slice(0, 1) : [])];
        const path = `${Array.isArray(data) ? `/${index}` : ""}/${segments.join("/")}`;
        loaded.push({ file: name, index, label: fallback, error: { code: "fixture_invalid", path, message: `${name}${path}: ${issue.message}` } });
        return;
      }
      loaded.push({ file: name, index, label: parsed.data.name ? `${name} › ${parsed.data.name}` : fallback, fixture: parsed.data });
    });
  }
  return loaded;
}

/** Parses a dotenv-style file: NAME=value lines, # comments, optional quotes. */
export function parseSecretsFile(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) continue;
    let value = match[2]!;
    if (/^(["']).*\1$/.test(value)) value = value.slice(1, -1);
    values[match[1]!] = value;
  }
  return values;
}

/** Where one secret's value came from, as the tester is told. */
export type SecretSource = { name: string; from: "environment" | "file" };

/**
 * Secret values by name: the environment first (unless `env` is undefined: hosted runs never read it),
 * then the secrets file. `sources` says where each value came from.
 */
export function secretValues(names: readonly string[], env: NodeJS.ProcessEnv | undefined, file?: string): { values: Record<string, string>; missing: string[]; sources: SecretSource[] } {
  const fromFile = file && existsSync(file) ? parseSecretsFile(readFileSync(file, "utf8")) : {};
  const values: Record<string, string> = {};
  const missing: string[] = [];
  const sources: SecretSource[] = [];
  for (const name of names) {
    const fromEnv = env?.[name];
    const value = fromEnv ?? fromFile[name];
    if (value === undefined) missing.push(name);
    else {
      values[name] = value;
      sources.push({ name, from: fromEnv !== undefined ? "environment" : "file" });
    }
  }
  return { values, missing, sources };
}

type Matcher = { $match: string } | { $any: true };
function isMatcher(value: unknown): value is Matcher {
  return typeof value === "object" && value !== null && !Array.isArray(value) && ("$match" in value || "$any" in value) && Object.keys(value).length === 1;
}

/**
 * Partial matching: an expected object matches when each of its keys matches (other keys are ignored);
 * an array matches an array of the same length item by item; `{ "$match": "regex" }` matches a string
 * by regular expression and `{ "$any": true }` anything present; everything else must be equal.
 * Returns the mismatches, each located by JSON pointer.
 */
export function matchPartial(expected: unknown, actual: unknown, path = ""): string[] {
  if (isMatcher(expected)) {
    if ("$any" in expected) return actual === undefined ? [`${path || "/"}: expected a value, got nothing`] : [];
    return typeof actual === "string" && new RegExp(expected.$match).test(actual)
      ? []
      : [`${path || "/"}: expected a string matching /${expected.$match}/, got ${JSON.stringify(actual)}`];
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${path || "/"}: expected an array, got ${JSON.stringify(actual)}`];
    if (actual.length !== expected.length) return [`${path || "/"}: expected ${expected.length} items, got ${actual.length}`];
    return expected.flatMap((item, index) => matchPartial(item, actual[index], `${path}/${index}`));
  }
  if (typeof expected === "object" && expected !== null) {
    if (typeof actual !== "object" || actual === null || Array.isArray(actual)) return [`${path || "/"}: expected an object, got ${JSON.stringify(actual)}`];
    return Object.entries(expected).flatMap(([key, value]) => matchPartial(value, (actual as Record<string, unknown>)[key], `${path}/${key}`));
  }
  return Object.is(expected, actual) ? [] : [`${path || "/"}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}

/** Every way the call's result differs from the fixture's expectations; empty means pass. */
export function checkExpectations(expected: FixtureExpect, result: ToolCallResult): string[] {
  const problems: string[] = [];
  const wantsError = expected.isError ?? false;
  // A write's not_applied or unknown outcome comes with an error result; don't demand isError twice.
  const outcomeImpliesError = expected.outcome !== undefined && expected.outcome !== "applied" && expected.outcome !== "pending";
  if (expected.isError !== undefined || !outcomeImpliesError) {
    if (result.isError !== wantsError) problems.push(wantsError ? `expected an error result, got success: ${result.modelText}` : `expected success, got an error: ${result.modelText}`);
  }
  if (expected.outcome !== undefined) {
    const got = result.outcome?.outcome;
    if (got !== expected.outcome) {
      const why = result.outcome?.outcome === "unknown" ? ` (${result.outcome.reason})` : "";
      problems.push(`expected outcome ${expected.outcome}, got ${got ?? "none (not a write)"}${why}`);
    }
  }
  if (expected.operationRef !== undefined) {
    const ref = result.outcome?.outcome === "pending" ? result.outcome.operationRef : undefined;
    problems.push(...matchPartial(expected.operationRef, ref, "/operationRef"));
  }
  if (expected.text !== undefined && !result.modelText.includes(expected.text)) {
    problems.push(`expected the text to contain ${JSON.stringify(expected.text)}, got ${JSON.stringify(result.modelText.slice(0, 500))}`);
  }
  if (expected.result !== undefined) problems.push(...matchPartial(expected.result, result.structuredContent, "/result"));
  if (expected.files !== undefined) {
    const files = result.files.map(({ name, mimeType, size }) => ({ name, mimeType, size }));
    problems.push(...matchPartial(expected.files, files, "/files"));
  }
  for (const [index, line] of (expected.logs ?? []).entries()) {
    if (!result.logs.some((actual) => matchPartial(line, actual).length === 0)) problems.push(`/logs/${index}: no log line matches ${JSON.stringify(line)}`);
  }
  return problems;
}

/** The text a status check's outcome carries: the applied text, the refusal or pending message, or why it is unknown. */
function outcomeText(outcome: WriteOutcome): string {
  switch (outcome.outcome) {
    case "applied":
      return outcome.text;
    case "not_applied":
      return outcome.message;
    case "pending":
      return outcome.message ?? "";
    case "unknown":
      return outcome.reason;
    default:
      return "";
  }
}

/** Every way a status check's mapped outcome (and its log lines) differs from a status fixture's expectations. */
export function checkStatusExpectations(expected: FixtureExpect, outcome: WriteOutcome, logs: readonly LogLine[]): string[] {
  const problems: string[] = [];
  if (expected.outcome !== undefined && outcome.outcome !== expected.outcome) {
    const why = outcome.outcome === "unknown" ? ` (${outcome.reason})` : "";
    problems.push(`expected outcome ${expected.outcome}, got ${outcome.outcome}${why}`);
  }
  if (expected.operationRef !== undefined) {
    problems.push(...matchPartial(expected.operationRef, outcome.outcome === "pending" ? outcome.operationRef : undefined, "/operationRef"));
  }
  const text = outcomeText(outcome);
  if (expected.text !== undefined && !text.includes(expected.text)) {
    problems.push(`expected the text to contain ${JSON.stringify(expected.text)}, got ${JSON.stringify(text.slice(0, 500))}`);
  }
  if (expected.result !== undefined) {
    problems.push(...matchPartial(expected.result, outcome.outcome === "applied" ? outcome.structuredContent : undefined, "/result"));
  }
  for (const [index, line] of (expected.logs ?? []).entries()) {
    if (!logs.some((actual) => matchPartial(line, actual).length === 0)) problems.push(`/logs/${index}: no log line matches ${JSON.stringify(line)}`);
  }
  return problems;
}


/** Where fixtures run: "local" (the author's machine, writes for real) or "hosted" (on Caplo: writes skipped). */
export type FixtureMode = "local" | "hosted";
/** Why a write tool's fixture is not run on Caplo. */
export const HOSTED_WRITE_SKIP = "write tool: fixture runs on Caplo skip writes";

export type FixtureRunOptions = {
  mode: FixtureMode;
  /** Where secret values come from: the environment (local runs only: hosted runs never read it), then this dotenv file. */
  env: NodeJS.ProcessEnv;
  secretsFile?: string;
  /** The runner's log store, for a status check's log lines. */
  logStore: LogStore;
};

export type FixtureRun = {
  label: string;
  state: "passed" | "failed" | "skipped";
  /** Why it failed, or (skipped) why it was not run. */
  problems: string[];
  /** "(tool, effect → outcome, ms, invocation id)" when it ran. */
  detail: string;
  /** The invocation's log lines, formatted. */
  logs: string[];
  /** Where each secret's value was read: "NAME from the environment variable NAME" or "NAME from FILE". */
  secretsRead: string[];
};

const formatLine = (line: LogLine) => `${line.level.padEnd(5)} ${line.message}${line.data !== undefined ? ` ${JSON.stringify(line.data)}` : ""}`;

/**
 * Runs one loaded fixture through the runner (the version must be loaded) and checks its expectations. In
 * "hosted" mode a fixture of a write tool (a call or a status check) is skipped before anything runs.
 */
export async function runFixture(runner: ToolRunner, version: PackageVersion, entry: LoadedFixture, options: FixtureRunOptions): Promise<FixtureRun> {
  const run: FixtureRun = { label: entry.label, state: "passed", problems: [], detail: "", logs: [], secretsRead: [] };
  if (entry.error) run.problems.push(`${entry.error.code} ${entry.error.path}: ${entry.error.message}`);
  const fixture = entry.fixture;
  if (fixture) {
    const problems = run.problems;
    const toolName = fixture.tool ?? (version.type === "function" || version.tools.length === 1 ? version.tools[0]!.name : undefined);
    const tool = version.tools.find((candidate) => candidate.name === toolName);
    if (tool && tool.policy.effect === "write" && options.mode === "hosted") {
      return { ...run, state: "skipped", problems: [HOSTED_WRITE_SKIP], detail: ` (${tool.name}, write)` };
    }
    // Only the package's declared secrets, and on Caplo never from the environment: a fixture cannot pull
    // the tester's variables by naming them.
    const declared = version.manifest.secrets ?? [];
    const undeclared = fixture.secrets.filter((name) => !declared.includes(name));
    for (const name of undeclared) problems.push(`fixture_secret_undeclared: ${name} is not among the package's secrets (caplo.yaml secrets: ${declared.join(", ") || "none"})`);
    const secrets = secretValues(fixture.secrets.filter((name) => declared.includes(name)), options.mode === "hosted" ? undefined : options.env, options.secretsFile);
    run.secretsRead = secrets.sources.map((source) => (source.from === "environment" ? `${source.name} from the environment variable ${source.name}` : `${source.name} from ${options.secretsFile}`));
    if (!toolName) problems.push('fixture_tool_missing: this package has several tools; name one with "tool"');
    else if (!tool) problems.push(`fixture_tool_unknown: the package has no tool '${toolName}' (it has ${version.tools.map((t) => t.name).join(", ")})`);
    for (const name of secrets.missing) problems.push(`secret_missing: ${name} has no value: set it ${options.mode === "hosted" ? "" : "in the environment or "}in ${options.secretsFile ?? "the secrets file"}`);
    if (tool && fixture.status) {
      if (tool.policy.effect !== "write") problems.push(`fixture_status_unavailable: ${tool.name} is a read tool; status checks are for writes`);
      else if (!tool.hasStatus) problems.push(`fixture_status_unavailable: ${tool.name} has no status check (a function package defines status(); an MCP server advertises caplo/status)`);
    }
    if (tool && fixture.status && problems.length === 0) {
      const invocationId = `fixture-${randomUUID()}`;
      const started = performance.now();
      const outcome = await runner.checkStatus({
        packageVersionId: version.id,
        tool: tool.name,
        ...(fixture.status.operationRef !== undefined && { operationRef: fixture.status.operationRef }),
        context: { ...fixture.context, invocationId, secrets: secrets.values },
      });
      const lines = options.logStore.read(invocationId).flatMap((record) => record.logs);
      problems.push(...checkStatusExpectations(fixture.expect, outcome, lines));
      run.detail = ` (${tool.name}, status → ${outcome.outcome}, ${Math.round(performance.now() - started)} ms, ${invocationId})`;
      run.logs = lines.map(formatLine);
    } else if (tool && problems.length === 0) {
      const invocationId = `fixture-${randomUUID()}`;
      const idempotencyKey = tool.policy.effect === "write" ? (fixture.context.idempotencyKey ?? `fixture-${randomUUID()}`) : undefined;
      const result = await runner.call({
        packageVersionId: version.id,
        tool: tool.name,
        args: fixture.input ?? {},
        context: { ...fixture.context, invocationId, secrets: secrets.values, ...(idempotencyKey && { idempotencyKey }) },
      });
      problems.push(...checkExpectations(fixture.expect, result));
      run.detail = ` (${tool.name}, ${tool.policy.effect}${result.outcome ? ` → ${result.outcome.outcome}` : ""}, ${result.durationMs} ms, ${invocationId})`;
      run.logs = result.logs.map(formatLine);
    }
  }
  if (run.problems.length > 0) run.state = "failed";
  return run;
}
