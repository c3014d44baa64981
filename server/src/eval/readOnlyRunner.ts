// The only handle an evaluation has on the real (sandboxed) runner: it passes calls of read tools through
// and refuses, before anything reaches a package, every call of a write tool, every status check (status
// checks exist only for writes) and any tool of a version not loaded through it. The effect comes from the
// loaded version's own policy, never from the request. "Evaluations do not run writes" rests on this.
import type { BuiltTool, PackageVersion, WriteOutcome } from "@caplo/shared";
import type { StatusCheckRequest, ToolCallRequest, ToolCallResult, ToolRunner } from "../runner/api.ts";

/** A refusal of this guard: a bug or an attack, never an expected path (the eval's runner never asks). */
export class EvalRefusal extends Error {
  readonly code = "eval_write_refused";
  constructor(message: string) {
    super(message);
    this.name = "EvalRefusal";
  }
}

export class ReadOnlyRunner {
  private readonly inner: ToolRunner;
  private readonly tools = new Map<string, Map<string, BuiltTool>>();
  /** What was refused, for the report: it must stay empty. */
  readonly refused: string[] = [];

  constructor(inner: ToolRunner) {
    this.inner = inner;
  }

  async load(version: PackageVersion): Promise<void> {
    this.tools.set(version.id, new Map(version.tools.map((tool) => [tool.name, tool])));
    await this.inner.load(version);
  }

  /** The loaded tool's policy: what decides whether a call may pass. */
  tool(packageVersionId: string, name: string): BuiltTool | undefined {
    return this.tools.get(packageVersionId)?.get(name);
  }

  async call(request: ToolCallRequest): Promise<ToolCallResult> {
    const tool = this.tool(request.packageVersionId, request.tool);
    if (!tool) return this.refuse(`${request.packageVersionId} ${request.tool}: not a tool loaded for this evaluation`);
    if (tool.policy.effect !== "read") return this.refuse(`${request.packageVersionId} ${request.tool}: a write tool; evaluations never run writes`);
    // A read has no idempotency key; one here would mean the request came from a write path.
    if (request.context.idempotencyKey !== undefined) return this.refuse(`${request.tool}: a call with an idempotency key`);
    return this.inner.call(request);
  }

  async checkStatus(request: StatusCheckRequest): Promise<WriteOutcome> {
    return this.refuse(`${request.packageVersionId} ${request.tool}: status checks are for writes; evaluations never check a write`);
  }

  private refuse(message: string): never {
    this.refused.push(message);
    throw new EvalRefusal(message);
  }
}
