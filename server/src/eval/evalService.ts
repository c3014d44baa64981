// Evaluations on the server, for the team API (and the console): run a served tool version's fixtures on the
// server's own sandbox as Caplo runs fixtures (write tools skipped, never run), and run an agent release's
// evaluation cases in the background. An eval run has its own in-memory store per case run, so it never
// touches a live conversation; its reads go through the read-only guard, and its writes are never run.
import { DEFAULT_WORKSPACE, parseEvalCases, type EvalCasesError, type PackageVersion } from "@caplo/shared";
import { workspaceOf, type AgentRelease, type ReleaseSource } from "../engine/release.ts";
import type { Model } from "../model/model.ts";
import type { ToolRunner } from "../runner/api.ts";
import { loadFixtures, runFixture, type FixtureRun } from "../runner/fixtures.ts";
import type { LogStore } from "../runner/logStore.ts";
import { checkCasesAgainst, type EvalError } from "./evalSetup.ts";
import { parseMinPass, runEvaluation, type EvalResult } from "./evalSuite.ts";

/** Runs kept (the oldest finished ones are forgotten first), runs at once, and case runs in one run at most. */
const RUNS_KEPT = 20;
const RUNS_AT_ONCE = 2;
export const EVAL_SERVER_CASE_RUNS_MAX = 1000;

export type EvalServiceOptions = {
  releases: ReleaseSource;
  runner: ToolRunner;
  /** The runner's invocation log (a status fixture's log lines; hosted mode skips writes and their checks). */
  logStore: LogStore;
  /** The model the server uses for a release. */
  modelFor: (release: AgentRelease) => Model;
  /** The values of a workspace's named secrets (the workspace secret store, read when a run starts). */
  secrets: (workspaceId: string, names: readonly string[]) => Record<string, string> | Promise<Record<string, string>>;
  now?: () => number;
};

export type FixtureReport = { version: string; fixtures: Pick<FixtureRun, "label" | "state" | "problems" | "detail">[]; passed: number; failed: number; skipped: number };
export type EvalRunView = {
  id: string;
  release: string;
  state: "running" | "done" | "failed";
  startedAt: string;
  progress: { done: number; total: number };
  result?: EvalResult;
  error?: EvalError;
};
type Failure = { ok: false; status: number; error: EvalError; errors?: EvalError[] };

export class EvalService {
  private readonly options: EvalServiceOptions;
  private readonly runs = new Map<string, EvalRunView>();
  /** The workspace each run belongs to: a member reads only their own workspace's runs. */
  private readonly runWorkspaces = new Map<string, string>();
  private readonly running = new Set<Promise<void>>();
  private counter = 0;
  private readonly stopping = new AbortController();

  constructor(options: EvalServiceOptions) {
    this.options = options;
  }

  /** The served releases of a workspace: a team member's evaluations see only their own workspace's. */
  private releasesOf(workspaceId: string): AgentRelease[] {
    return this.options.releases.list().filter((release) => workspaceOf(release) === workspaceId);
  }

  /** A package version pinned by a served release of the workspace. */
  private version(id: string, workspaceId: string): PackageVersion | undefined {
    for (const release of this.releasesOf(workspaceId)) {
      const found = release.packages.find((version) => version.id === id);
      if (found) return found;
    }
    return undefined;
  }

  /** Every fixture of a served tool version, run on the server's sandbox in hosted mode: writes skipped. */
  async runFixtures(packageVersionId: string, workspaceId: string = DEFAULT_WORKSPACE): Promise<{ ok: true; report: FixtureReport } | Failure> {
    const version = this.version(packageVersionId, workspaceId);
    if (!version) return { ok: false, status: 404, error: { code: "version_not_found", path: "packageVersionId", message: "no served release pins this tool version" } };
    const fixtures = await loadFixtures(version.dir, version.manifest.tests);
    // Fixtures name secrets; on the server their values are the workspace's (never in the fixture or the answer).
    const env = await this.options.secrets(workspaceId, version.manifest.secrets ?? []);
    await this.options.runner.load(version);
    const report: FixtureReport = { version: version.id, fixtures: [], passed: 0, failed: 0, skipped: 0 };
    for (const entry of fixtures) {
      const run = await runFixture(this.options.runner, version, entry, { mode: "hosted", env, logStore: this.options.logStore });
      report[run.state] += 1;
      report.fixtures.push({ label: run.label, state: run.state, problems: run.problems, detail: run.detail });
    }
    return { ok: true, report };
  }

  /** Start an eval run of a served release's cases (YAML text); its result is read with `run(id)`. */
  async start(input: { release: string; cases: string; repeat?: number; minPass?: string }, workspaceId: string = DEFAULT_WORKSPACE): Promise<{ ok: true; run: EvalRunView } | Failure> {
    const release = this.releasesOf(workspaceId).find((candidate) => candidate.id === input.release || candidate.agent === input.release);
    if (!release) return { ok: false, status: 404, error: { code: "release_not_found", path: "release", message: "this server serves no such release (an agent name, or a release id NAME@sha256:…)" } };
    const parsed = parseEvalCases(input.cases);
    if (!parsed.ok) return { ok: false, status: 400, error: parsed.errors[0]!, errors: parsed.errors as EvalCasesError[] };
    const mismatch = checkCasesAgainst(parsed.cases, release);
    if (mismatch.length > 0) return { ok: false, status: 400, error: mismatch[0]! };
    const caseRuns = parsed.cases.cases.reduce((sum, entry) => sum + (entry.repeat ?? input.repeat ?? 1), 0);
    if (caseRuns > EVAL_SERVER_CASE_RUNS_MAX) {
      return { ok: false, status: 400, error: { code: "eval_too_large", path: "repeat", message: `${caseRuns} case runs (cases × repeat); at most ${EVAL_SERVER_CASE_RUNS_MAX} per run on the server` } };
    }
    const minPass = input.minPass === undefined ? 10_000 : parseMinPass(input.minPass);
    if (minPass === undefined) return { ok: false, status: 400, error: { code: "body_invalid", path: "minPass", message: "a rate from 0 to 1 (for example 0.8) or a percentage (80%)" } };
    if (this.stopping.signal.aborted) return { ok: false, status: 503, error: { code: "server_stopping", path: "", message: "the server is stopping" } };
    if ([...this.runs.values()].filter((run) => run.state === "running").length >= RUNS_AT_ONCE) {
      return { ok: false, status: 429, error: { code: "eval_busy", path: "", message: `${RUNS_AT_ONCE} evaluations are running on this server; try again when one has finished` } };
    }
    // The run's secrets are the workspace's as they stand when it starts (read once, for every case run).
    const secretValues = new Map<string, Record<string, string>>();
    for (const version of release.packages) secretValues.set(version.id, await this.options.secrets(workspaceId, version.manifest.secrets ?? []));
    const now = this.options.now ?? Date.now;
    const id = `ev_${now().toString(36)}_${(++this.counter).toString(36)}`;
    const view: EvalRunView = { id, release: release.id, state: "running", startedAt: new Date(now()).toISOString(), progress: { done: 0, total: 0 } };
    this.runs.set(id, view);
    this.runWorkspaces.set(id, workspaceId);
    this.forgetOld();
    const work = runEvaluation({
      cases: parsed.cases,
      release,
      model: this.options.modelFor(release),
      runner: this.options.runner,
      settings: { repeat: input.repeat ?? 1, minPassBasisPoints: minPass, concurrency: 2 },
      secrets: (packageVersionId) => secretValues.get(packageVersionId) ?? {},
      onProgress: (progress) => (view.progress = { done: progress.done, total: progress.total }),
      signal: this.stopping.signal,
    }).then(
      (result) => {
        view.state = "done";
        view.result = result;
      },
      (error: unknown) => {
        view.state = "failed";
        view.error = { code: "eval_run_failed", path: "", message: error instanceof Error ? error.message : String(error) };
      },
    );
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
    return { ok: true, run: { ...view } };
  }

  run(id: string, workspaceId: string = DEFAULT_WORKSPACE): EvalRunView | undefined {
    const view = this.runWorkspaces.get(id) === workspaceId ? this.runs.get(id) : undefined;
    return view && { ...view };
  }

  /** The kept runs, newest first, each with its verdict once done (the whole result is `run(id)`). */
  list(workspaceId: string = DEFAULT_WORKSPACE): (Omit<EvalRunView, "result"> & { ok?: boolean; passRate?: number })[] {
    return [...this.runs.values()].filter((view) => this.runWorkspaces.get(view.id) === workspaceId).reverse().map(({ result, ...view }) => ({ ...view, ...(result && { ok: result.ok, passRate: result.passRate }) }));
  }

  /** At server stop: no run starts another case run; resolves once the ones under way have finished. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.idle();
  }

  /** Resolves once every started run has finished. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private forgetOld(): void {
    for (const [id, run] of this.runs) {
      if (this.runs.size <= RUNS_KEPT) return;
      if (run.state !== "running") {
        this.runs.delete(id);
        this.runWorkspaces.delete(id);
      }
    }
  }
}
