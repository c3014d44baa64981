// `caplo eval CASES.yaml`: run an agent release's evaluation cases through the real engine and runner with
// the configured model (writes proposed, never run), print progress and the table, write JSON and JUnit
// XML reports, and exit non-zero when a case passes less often than --min-pass. docs/evaluations.md.
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { EVAL_READ_MODES, EVAL_REPEAT_MAX, type EvalReadMode } from "@caplo/shared";
import { checkCasesAgainst, evalModel, jsonReport, junitReport, loadEvalCases, parseMinPass, progressLine, resolveEvalRelease, runEvaluation, tableReport, testSecrets, type EvalError, type ReleaseSourceSpec } from "../eval/index.ts";
import { DEFAULT_RELEASES_DIR } from "./agent.ts";

export const help = `caplo eval CASES.yaml (--release NAME[@sha256:HEX] | --agent FILE --packages DIR...) [options]

Runs each case of CASES.yaml (kind: EvalCases) as a conversation with the agent release: the real engine,
the configured model (OpenAI-compatible from OPENAI_API_KEY / OPENAI_BASE_URL / CAPLO_MODEL, else the
scripted model of --script) and the sandboxed runner. Writes are proposed and checked, never run: the
turn's scripted outcome stands in for the write. Reads run for real against the packages' test
environment, or are answered from the packages' fixtures where the case says reads: fixtures.
Every run has a store of its own in memory: no live conversation is touched.

  --release NAME@ID   a published release (caplo agent publish prints its id); NAME alone: its latest
  --releases DIR      where releases are kept (default $CAPLO_RELEASES_DIR or ${DEFAULT_RELEASES_DIR})
  --agent FILE        an agent.yaml instead, with --packages DIR... (built now) or built versions' JSON
  --repeat N          runs per case, 1 to ${EVAL_REPEAT_MAX} (default 1; a case's repeat wins)
  --min-pass RATE     the lowest pass rate of any case, 0 to 1 or a percentage (default 1 = 100%);
                      a rate exactly at it passes
  --concurrency N     runs at once, 1 to 16 (default 2)
  --filter TEXT       only cases whose name contains TEXT
  --reads MODE        live or fixtures for every case, whatever the file says
  --script FILE|demo  rules of the scripted model (caplo serve --script JSON), or demo: the offline demo's
  --secrets FILE      dotenv file of secret values for live reads (the environment variable of the
                      same name wins)
  --json FILE         write the JSON report (- for standard output)
  --junit FILE        write JUnit XML for CI (- for standard output)
  --quiet             no progress lines

Exit status: 0 every case reached --min-pass, 1 a case did not (or a write reached the read-only
runner), 2 bad usage, an invalid cases file, or a release, agent, package or model that cannot be used.`;

type Io = { out: (line: string) => void; err: (line: string) => void };
const consoleIo: Io = { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`) };

export type EvalArgs = {
  cases: string;
  source: ReleaseSourceSpec;
  repeat: number;
  minPass: number;
  concurrency: number;
  filter?: string;
  reads?: EvalReadMode;
  script?: string;
  secrets?: string;
  json?: string;
  junit?: string;
  quiet: boolean;
};

const VALUE_OPTIONS = ["--release", "--releases", "--agent", "--repeat", "--min-pass", "--concurrency", "--filter", "--reads", "--script", "--secrets", "--json", "--junit"];

/** Flags into options, or what is wrong with them. */
export function parseEvalArgs(args: string[], env: Record<string, string | undefined>): EvalArgs | string {
  const values = new Map<string, string>();
  const files: string[] = [];
  const packages: string[] = [];
  let quiet = false;
  let inPackages = false;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    if (flag === "--packages") {
      inPackages = true;
      if (inline !== undefined) packages.push(inline);
    } else if (flag === "--quiet") quiet = true;
    else if (VALUE_OPTIONS.includes(flag)) {
      inPackages = false;
      const value = inline ?? args[++index];
      if (value === undefined || (value.startsWith("--") && value !== "-")) return `${flag} needs a value`;
      values.set(flag, value);
    } else if (arg.startsWith("-") && arg !== "-") return `unknown option ${arg}`;
    else if (inPackages) packages.push(arg);
    else files.push(arg);
  }
  if (files.length !== 1) return "give exactly one cases file";
  const whole = (flag: string, min: number, max: number, fallback: number): number | string => {
    const text = values.get(flag);
    if (text === undefined) return fallback;
    const value = Number(text);
    return /^[0-9]+$/.test(text) && value >= min && value <= max ? value : `${flag} is a whole number from ${min} to ${max}`;
  };
  const repeat = whole("--repeat", 1, EVAL_REPEAT_MAX, 1);
  if (typeof repeat === "string") return repeat;
  const concurrency = whole("--concurrency", 1, 16, 2);
  if (typeof concurrency === "string") return concurrency;
  const minPassText = values.get("--min-pass");
  const minPass = minPassText === undefined ? 10_000 : parseMinPass(minPassText);
  if (minPass === undefined) return "--min-pass is a rate from 0 to 1 (for example 0.8) or a percentage (80%)";
  const reads = values.get("--reads");
  if (reads !== undefined && !(EVAL_READ_MODES as readonly string[]).includes(reads)) return "--reads is live or fixtures";
  const release = values.get("--release");
  const agent = values.get("--agent");
  if ((release === undefined) === (agent === undefined)) return "name what to evaluate: --release NAME@ID, or --agent FILE --packages DIR...";
  if (agent !== undefined && packages.length === 0) return "--agent needs --packages DIR... (the tool packages, or built versions' JSON)";
  if (release !== undefined && packages.length > 0) return "--packages goes with --agent; a release pins its own package versions";
  const source: ReleaseSourceSpec = release !== undefined ? { release, releasesDir: resolve(values.get("--releases") ?? (env.CAPLO_RELEASES_DIR || DEFAULT_RELEASES_DIR)) } : { agentFile: agent!, packages };
  const optional = (flag: string) => values.get(flag);
  return {
    cases: files[0]!,
    source,
    repeat,
    minPass,
    concurrency,
    quiet,
    ...(optional("--filter") !== undefined && { filter: optional("--filter")! }),
    ...(reads !== undefined && { reads: reads as EvalReadMode }),
    ...(optional("--script") !== undefined && { script: optional("--script")! }),
    ...(optional("--secrets") !== undefined && { secrets: optional("--secrets")! }),
    ...(optional("--json") !== undefined && { json: optional("--json")! }),
    ...(optional("--junit") !== undefined && { junit: optional("--junit")! }),
  };
}

function printErrors(io: Io, where: string, errors: readonly EvalError[]): void {
  for (const error of errors) {
    const at = error.line !== undefined ? `:${error.line}${error.column !== undefined ? `:${error.column}` : ""}` : "";
    io.err(`${where}${at}: ${error.path ? `${error.path}: ` : ""}${error.message} [${error.code}]`);
  }
}

export async function runEval(args: string[], io: Io = consoleIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = parseEvalArgs(args, env);
  if (typeof parsed === "string") {
    io.err(`caplo eval: ${parsed}\nusage: caplo eval CASES.yaml (--release NAME@ID | --agent FILE --packages DIR...) [--repeat N] [--min-pass RATE] (caplo eval --help)`);
    return 2;
  }
  const cases = await loadEvalCases(parsed.cases);
  if (!cases.ok) {
    printErrors(io, parsed.cases, cases.errors);
    return 2;
  }
  const release = await resolveEvalRelease(parsed.source);
  if (!release.ok) {
    printErrors(io, "release" in parsed.source ? parsed.source.release : parsed.source.agentFile, release.errors);
    return 2;
  }
  const mismatch = checkCasesAgainst(cases.value, release.value);
  if (mismatch.length > 0) {
    printErrors(io, parsed.cases, mismatch);
    return 2;
  }
  const model = await evalModel(release.value, env, parsed.script);
  if (!model.ok) {
    printErrors(io, "model", model.errors);
    return 2;
  }
  // Reports to standard output move the human-readable lines to standard error.
  const say = parsed.json === "-" || parsed.junit === "-" ? io.err : io.out;
  if (model.value.id === "scripted:no-rules") say("model: the scripted model with no rules (no OPENAI_API_KEY / OPENAI_BASE_URL, no --script): it answers nothing useful");
  const { CaploToolRunner, MemoryLogStore } = await import("../runner/index.ts");
  let runner;
  try {
    runner = new CaploToolRunner({ logStore: new MemoryLogStore() });
  } catch (error) {
    printErrors(io, "runner", [{ code: (error as { code?: string }).code ?? "runner_failed", path: "", message: (error as Error).message }]);
    return 2;
  }
  say(`caplo eval: ${release.value.id} with ${model.value.id}; ${runner.sandboxNote}`);
  let result;
  try {
    result = await runEvaluation({
      cases: cases.value,
      release: release.value,
      model: model.value,
      runner,
      settings: { repeat: parsed.repeat, minPassBasisPoints: parsed.minPass, concurrency: parsed.concurrency, ...(parsed.filter !== undefined && { filter: parsed.filter }), ...(parsed.reads && { reads: parsed.reads }) },
      secrets: testSecrets(release.value.packages, env, parsed.secrets),
      ...(!parsed.quiet && { onProgress: (progress) => say(progressLine(progress)) }),
    });
  } finally {
    await runner.close();
  }
  if (result.runs === 0) {
    io.err(`caplo eval: no case matches --filter ${JSON.stringify(parsed.filter ?? "")}`);
    return 2;
  }
  say("");
  say(tableReport(result));
  for (const [file, text] of [[parsed.json, jsonReport(result)], [parsed.junit, junitReport(result)]] as const) {
    if (file === undefined) continue;
    if (file === "-") io.out(text.trimEnd());
    else await writeFile(file, text);
  }
  return result.ok ? 0 : 1;
}

export const run = (args: string[]) => runEval(args);
