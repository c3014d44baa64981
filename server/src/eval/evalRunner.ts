// The ToolRunner an evaluation's engine is given, one per case run. A read runs for real through the
// read-only runner (readOnlyRunner.ts) or is answered from the package's fixtures (fixtureReads.ts). A
// write is never run: when the engine carries out a confirmed write (or one that needs no confirmation),
// this answers with the outcome the case scripted for the turn, and the engine records and tells it as it
// would a real one. Status checks are refused. It holds no other way to reach a package.
import type { BuiltTool, EvalConfirm, EvalReadMode, PackageVersion, WriteOutcome } from "@caplo/shared";
import type { StatusCheckRequest, ToolCallRequest, ToolCallResult, ToolRunner } from "../runner/api.ts";
import { validateAgainst } from "../runner/schemaValidator.ts";
import type { FixtureBook } from "./fixtureReads.ts";
import type { ReadOnlyRunner } from "./readOnlyRunner.ts";

/** A write the engine would have run, answered with its scripted outcome instead. */
export type ScriptedWrite = { tool: string; args: unknown; idempotencyKey: string | undefined; outcome: WriteOutcome["outcome"] };
/** A tool's question during a read, as the tool asked it. */
export type AskedQuestion = { tool: string; fields: string[] };

export type EvalRunnerOptions = {
  reads: EvalReadMode;
  /** The real runner's read-only handle (live reads). */
  live: ReadOnlyRunner;
  fixtures: FixtureBook;
};

export class EvalRunner implements ToolRunner {
  private readonly options: EvalRunnerOptions;
  private readonly versions = new Map<string, PackageVersion>();
  /** The outcome the current turn scripts for the write it confirms (set by the case run before each turn). */
  confirm: EvalConfirm | undefined;
  readonly writes: ScriptedWrite[] = [];
  readonly reads: { tool: string; args: unknown; source: string }[] = [];
  readonly questions: AskedQuestion[] = [];
  /** What went wrong that is not the model's doing (a read no fixture answers, a write with no scripted outcome). */
  readonly problems: string[] = [];

  constructor(options: EvalRunnerOptions) {
    this.options = options;
  }

  async load(version: PackageVersion): Promise<void> {
    this.versions.set(version.id, version);
    // Fixture reads never reach a package, so its process is not even started.
    if (this.options.reads === "live") await this.options.live.load(version);
  }

  private tool(request: { packageVersionId: string; tool: string }): { version: PackageVersion; tool: BuiltTool } {
    const version = this.versions.get(request.packageVersionId);
    const tool = version?.tools.find((candidate) => candidate.name === request.tool);
    // The engine only asks for tools of the release it was given, all loaded at start: anything else is a bug.
    if (!version || !tool) throw new Error(`eval runner: ${request.packageVersionId} ${request.tool} is not loaded`);
    return { version, tool };
  }

  async call(request: ToolCallRequest): Promise<ToolCallResult> {
    const { version, tool } = this.tool(request);
    const ref = `${version.name}/${tool.name}`;
    if (tool.policy.effect === "write") return this.scriptedWrite(ref, tool, request);
    if (this.options.reads === "fixtures") {
      const answer = await this.options.fixtures.answer(version, tool.name, request.args, request.context.invocationId);
      if (!answer.ok) {
        this.problems.push(answer.problem);
        return { invocationId: request.context.invocationId, modelText: "The tool could not answer.", isError: true, files: [], logs: [], durationMs: 0 };
      }
      this.reads.push({ tool: ref, args: request.args, source: `fixture ${answer.label}` });
      return answer.result;
    }
    const elicit = request.elicit;
    const asked = elicit && {
      elicit: (question: Parameters<typeof elicit>[0]) => {
        const properties = question.requestedSchema.properties;
        this.questions.push({ tool: ref, fields: properties && typeof properties === "object" ? Object.keys(properties) : [] });
        return elicit(question);
      },
    };
    const result = await this.options.live.call({ ...request, ...asked });
    this.reads.push({ tool: ref, args: request.args, source: "live" });
    return result;
  }

  /** The turn's scripted outcome as the runner would have reported the write's result. Nothing is run. */
  private scriptedWrite(ref: string, tool: BuiltTool, request: ToolCallRequest): ToolCallResult {
    const confirm = this.confirm;
    const base = { invocationId: request.context.invocationId, files: [], logs: [], durationMs: 0 };
    let outcome: WriteOutcome;
    if (!confirm) {
      this.problems.push(`eval_outcome_missing: ${ref} would run now (it needs no confirmation) but the turn scripts no outcome: add confirm: { outcome: ... } to the turn`);
      outcome = { outcome: "unknown", reason: "the evaluation scripted no outcome for this write" };
    } else if (confirm.outcome === "applied") {
      const result = confirm.result ?? {};
      if (tool.outputSchema) {
        const issues = validateAgainst(tool.outputSchema, result);
        if (issues.length > 0) this.problems.push(`eval_result_invalid: the scripted result of ${ref} does not match its outputSchema: ${issues[0]!.path || "/"} ${issues[0]!.message}`);
      }
      outcome = { outcome: "applied", text: JSON.stringify(result), structuredContent: result };
    } else if (confirm.outcome === "not_applied") {
      outcome = { outcome: "not_applied", message: confirm.message ?? "The change was not made." };
    } else if (confirm.outcome === "pending") {
      outcome = { outcome: "pending", ...(confirm.operationRef && { operationRef: confirm.operationRef }), ...(confirm.message && { message: confirm.message }) };
    } else {
      outcome = { outcome: "unknown", reason: confirm.message ?? "The tool did not say whether the change was made." };
    }
    this.writes.push({ tool: ref, args: request.args, idempotencyKey: request.context.idempotencyKey, outcome: outcome.outcome });
    switch (outcome.outcome) {
      case "applied":
        return { ...base, outcome, isError: false, modelText: outcome.text, ...(outcome.structuredContent && { structuredContent: outcome.structuredContent }) };
      case "not_applied":
        return { ...base, outcome, isError: true, modelText: outcome.message };
      case "pending":
        return { ...base, outcome, isError: false, modelText: outcome.message ?? "The change is being processed." };
      default:
        return { ...base, outcome, isError: true, modelText: outcome.outcome === "unknown" ? outcome.reason : "" };
    }
  }

  /** Never asked while the engine's scheduler is off; refused through the read-only runner if it ever is. */
  async checkStatus(request: StatusCheckRequest): Promise<WriteOutcome> {
    return this.options.live.checkStatus(request);
  }

  /** The real runner is shared by every case run and closed by whoever made it. */
  async close(): Promise<void> {}
}
