// An evaluation: every case of a cases file run N times (model variance), a few runs at a time, each
// in its own engine and store (caseRun.ts). The result gives each case's pass rate, tokens and time and
// the overall pass rate; it passes when every case's pass rate is at least the threshold (exactly at it
// passes). Rates are compared in whole basis points, so 7 of 10 at 0.7 passes (no floating point slip).
import type { EvalCases, EvalReadMode } from "@caplo/shared";
import type { AgentRelease } from "../engine/release.ts";
import type { Model } from "../model/model.ts";
import { runCaseOnce, type CaseRunResult } from "./caseRun.ts";
import type { ToolRunner } from "../runner/api.ts";
import { FixtureBook } from "./fixtureReads.ts";
import { ReadOnlyRunner } from "./readOnlyRunner.ts";

export type EvalSettings = {
  /** Runs per case unless the case says otherwise. */
  repeat: number;
  /** The lowest pass rate a case may have, in basis points (10000 = every run must pass). */
  minPassBasisPoints: number;
  /** Runs at once. */
  concurrency: number;
  /** Only cases whose name contains this. */
  filter?: string;
  /** Answer every case's reads this way, whatever the file says. */
  reads?: EvalReadMode;
};

export type CaseResult = {
  name: string;
  runs: number;
  passed: number;
  passRate: number;
  /** Whether the pass rate reaches the threshold. */
  ok: boolean;
  /** The problems of each failing run (run number from 1). */
  failures: { run: number; problems: string[] }[];
  steps: number;
  /** null: the model reported no token usage. */
  tokens: number | null;
  ms: number;
  scriptedWrites: number;
};

export type EvalResult = {
  release: string;
  agent: string;
  model: string;
  cases: CaseResult[];
  runs: number;
  passed: number;
  passRate: number;
  minPass: number;
  ok: boolean;
  tokens: number | null;
  ms: number;
  /** Calls the read-only runner refused (a write or a status check reached it): always empty unless something is broken. */
  refused: string[];
};

export type EvalProgress = { caseName: string; run: number; runs: number; done: number; total: number; result: CaseRunResult };

export type EvalInput = {
  cases: EvalCases;
  release: AgentRelease;
  model: Model;
  /** The real (sandboxed) runner: reached only through a read-only guard, for live reads. */
  runner: ToolRunner;
  settings: EvalSettings;
  secrets?: (packageVersionId: string) => Record<string, string>;
  onProgress?: (progress: EvalProgress) => void;
  signal?: AbortSignal;
};

/** "0.8", "80%", "1" into basis points, or undefined when it is not a rate from 0 to 1 (0% to 100%). */
export function parseMinPass(text: string): number | undefined {
  const match = /^(?:(\d{1,3}(?:\.\d{1,2})?)%|(0(?:\.\d{1,4})?|1(?:\.0{1,4})?))$/.exec(text.trim());
  if (!match) return undefined;
  // Parsed from its digits, not through a float: "0.7" is exactly 7000.
  const [whole, fraction = ""] = (match[1] ?? match[2]!).split(".");
  const basisPoints = match[1] !== undefined ? Number(whole) * 100 + Number(fraction.padEnd(2, "0")) : Number(whole) * 10_000 + Number(fraction.padEnd(4, "0"));
  return basisPoints <= 10_000 ? basisPoints : undefined;
}

/** Whether `passed` of `runs` reaches the threshold: exact integer arithmetic. */
export function reaches(passed: number, runs: number, minPassBasisPoints: number): boolean {
  return passed * 10_000 >= minPassBasisPoints * runs;
}

export async function runEvaluation(input: EvalInput): Promise<EvalResult> {
  const started = performance.now();
  const { settings } = input;
  const live = new ReadOnlyRunner(input.runner);
  const fixtures = new FixtureBook();
  const selected = input.cases.cases.filter((entry) => settings.filter === undefined || entry.name.includes(settings.filter));
  const jobs = selected.flatMap((testCase, caseIndex) => Array.from({ length: testCase.repeat ?? settings.repeat }, (_, run) => ({ testCase, caseIndex, run })));
  const results: CaseRunResult[][] = selected.map(() => []);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < jobs.length && !input.signal?.aborted) {
      const job = jobs[next++]!;
      const testCase = settings.reads ? { ...job.testCase, reads: settings.reads } : job.testCase;
      const result = await runCaseOnce(testCase, {
        release: input.release,
        model: input.model,
        live,
        fixtures,
        defaults: { channel: input.cases.channel, reads: input.cases.reads },
        ...(input.secrets && { secrets: input.secrets }),
      });
      results[job.caseIndex]![job.run] = result;
      done += 1;
      input.onProgress?.({ caseName: job.testCase.name, run: job.run + 1, runs: job.testCase.repeat ?? settings.repeat, done, total: jobs.length, result });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(settings.concurrency, jobs.length)) }, worker));
  const cases: CaseResult[] = selected.map((testCase, index) => {
    const runs = results[index]!.filter(Boolean);
    const passed = runs.filter((run) => run.passed).length;
    const reported = runs.every((run) => run.tokens !== null);
    return {
      name: testCase.name,
      runs: runs.length,
      passed,
      passRate: runs.length === 0 ? 0 : passed / runs.length,
      ok: runs.length > 0 && reaches(passed, runs.length, settings.minPassBasisPoints),
      failures: runs.flatMap((run, at) => (run.passed ? [] : [{ run: at + 1, problems: run.problems }])),
      steps: runs.reduce((sum, run) => sum + run.steps, 0),
      tokens: reported ? runs.reduce((sum, run) => sum + (run.tokens ?? 0), 0) : null,
      ms: runs.reduce((sum, run) => sum + run.ms, 0),
      scriptedWrites: runs.reduce((sum, run) => sum + run.scriptedWrites, 0),
    };
  });
  const runs = cases.reduce((sum, entry) => sum + entry.runs, 0);
  const passed = cases.reduce((sum, entry) => sum + entry.passed, 0);
  return {
    release: input.release.id,
    agent: input.release.agent,
    model: input.model.id,
    cases,
    runs,
    passed,
    passRate: runs === 0 ? 0 : passed / runs,
    minPass: settings.minPassBasisPoints / 10_000,
    ok: cases.length > 0 && cases.every((entry) => entry.ok) && live.refused.length === 0,
    tokens: cases.every((entry) => entry.tokens !== null) ? cases.reduce((sum, entry) => sum + (entry.tokens ?? 0), 0) : null,
    ms: performance.now() - started,
    refused: [...live.refused],
  };
}
