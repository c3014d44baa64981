// The checks of a case, as pure functions of what was observed in a turn (or the whole conversation):
// which tools the model called and with what, which writes were proposed and what their review card
// showed, handoffs, the tools' questions, the agent's replies, and the model steps and tokens it took.
import type { EvalExpectation } from "@caplo/shared";
import { canonical, matchArgs } from "./argsMatch.ts";

export type Observation = {
  /** Tool calls of the model in order: `package/tool` (or the model name when no tool has it), arguments as parsed JSON (else the raw text). */
  calls: { tool: string; args: unknown }[];
  /** Writes the model proposed (stored in the ledger), with the review card's fields by label. */
  proposals: { tool: string; args: Record<string, unknown>; fields: Record<string, string>; confirmation: "required" | "none" }[];
  handoffs: { queue: string | null }[];
  /** Questions tools asked the customer: the fields they named. */
  questions: { tool?: string; fields: string[] }[];
  /** The agent's messages to the customer, in order. */
  replies: string[];
  steps: number;
  /** null: the model reported no token usage. */
  tokens: number | null;
};

export const emptyObservation = (): Observation => ({ calls: [], proposals: [], handoffs: [], questions: [], replies: [], steps: 0, tokens: 0 });

/** Observations of several turns as one (for the case's own checks). */
export function mergeObservations(parts: readonly Observation[]): Observation {
  const merged = emptyObservation();
  for (const part of parts) {
    merged.calls.push(...part.calls);
    merged.proposals.push(...part.proposals);
    merged.handoffs.push(...part.handoffs);
    merged.questions.push(...part.questions);
    merged.replies.push(...part.replies);
    merged.steps += part.steps;
    merged.tokens = merged.tokens === null || part.tokens === null ? null : merged.tokens + part.tokens;
  }
  return merged;
}

const brief = (args: unknown) => (args === undefined ? "" : ` ${canonical(args)}`);

/** One line saying what a check asks for. */
export function describeExpectation(expectation: EvalExpectation): string {
  if (expectation.called) return `called ${expectation.called.tool}${brief(expectation.called.args)}${expectation.called.times ? ` ×${expectation.called.times}` : ""}`;
  if (expectation.notCalled) return `not called ${expectation.notCalled.tool}${brief(expectation.notCalled.args)}`;
  if (expectation.proposed) return `proposed ${expectation.proposed.tool}${brief(expectation.proposed.args)}${expectation.proposed.fields ? ` fields ${canonical(expectation.proposed.fields)}` : ""}`;
  if (expectation.noWrite) return "no write proposed";
  if (expectation.handoff) return `handoff${expectation.handoff !== true && expectation.handoff.queue ? ` to ${expectation.handoff.queue}` : ""}`;
  if (expectation.elicited) return `asked for ${expectation.elicited.fields.join(", ")}`;
  if (expectation.reply) return `reply ${Object.entries(expectation.reply).map(([key, value]) => `${key} ${JSON.stringify(value)}`).join(", ")}`;
  if (expectation.maxSteps !== undefined) return `at most ${expectation.maxSteps} model steps`;
  return `at most ${expectation.maxTokens} tokens`;
}

/** Why the check fails on this observation, or undefined when it passes. */
export function checkExpectation(expectation: EvalExpectation, seen: Observation): string | undefined {
  const fail = (why: string) => `${describeExpectation(expectation)}: ${why}`;
  const listCalls = (tool: string) => {
    const calls = seen.calls.filter((call) => call.tool === tool);
    return calls.length === 0 ? `the model called ${seen.calls.length === 0 ? "no tool" : seen.calls.map((call) => call.tool).join(", ")}` : `its calls were ${calls.map((call) => canonical(call.args)).join(", ")}`;
  };
  if (expectation.called) {
    const { tool, args, match, times } = expectation.called;
    const matching = seen.calls.filter((call) => call.tool === tool && (args === undefined || matchArgs(match, args, call.args).length === 0));
    if (times !== undefined ? matching.length !== times : matching.length === 0) {
      const why = times !== undefined && matching.length > 0 ? `${matching.length} matching calls` : listCalls(tool);
      const detail = args !== undefined && matching.length === 0 ? seen.calls.find((call) => call.tool === tool) : undefined;
      return fail(detail ? `${why} (${matchArgs(match, args, detail.args)[0]})` : why);
    }
    return undefined;
  }
  if (expectation.notCalled) {
    const { tool, args, match } = expectation.notCalled;
    const found = seen.calls.find((call) => call.tool === tool && (args === undefined || matchArgs(match, args, call.args).length === 0));
    return found ? fail(`it was called with ${canonical(found.args)}`) : undefined;
  }
  if (expectation.proposed) {
    const { tool, args, match, fields } = expectation.proposed;
    const candidates = seen.proposals.filter((proposal) => proposal.tool === tool);
    if (candidates.length === 0) return fail(seen.proposals.length === 0 ? "no write was proposed" : `the proposals were ${seen.proposals.map((proposal) => proposal.tool).join(", ")}`);
    const problems = candidates.map((proposal) => [
      ...(args === undefined ? [] : matchArgs(match, args, proposal.args)),
      ...Object.entries(fields ?? {}).flatMap(([label, value]) =>
        proposal.fields[label] === value ? [] : [`field ${JSON.stringify(label)}: expected ${JSON.stringify(value)}, got ${proposal.fields[label] === undefined ? "no such field" : JSON.stringify(proposal.fields[label])}`],
      ),
    ]);
    return problems.some((list) => list.length === 0) ? undefined : fail(problems[0]!.join("; "));
  }
  if (expectation.noWrite) return seen.proposals.length === 0 ? undefined : fail(`proposed ${seen.proposals.map((proposal) => `${proposal.tool} ${canonical(proposal.args)}`).join(", ")}`);
  if (expectation.handoff) {
    const queue = expectation.handoff === true ? undefined : expectation.handoff.queue;
    if (seen.handoffs.length === 0) return fail("the conversation was not handed to the team");
    return queue === undefined || seen.handoffs.some((handoff) => handoff.queue === queue) ? undefined : fail(`handed to ${seen.handoffs.map((handoff) => handoff.queue).join(", ")}`);
  }
  if (expectation.elicited) {
    const { fields, tool } = expectation.elicited;
    const asked = seen.questions.filter((question) => tool === undefined || question.tool === tool);
    if (asked.some((question) => fields.every((field) => question.fields.includes(field)))) return undefined;
    return fail(asked.length === 0 ? "no tool asked the customer anything" : `the questions asked for ${asked.map((question) => question.fields.join(", ")).join("; ")}`);
  }
  if (expectation.reply) {
    const text = seen.replies.join("\n");
    const shown = JSON.stringify(text.length > 300 ? `${text.slice(0, 300)}…` : text);
    const { contains, matches, notContains } = expectation.reply;
    if (contains !== undefined && !text.includes(contains)) return fail(`the reply was ${shown}`);
    if (matches !== undefined && !new RegExp(matches).test(text)) return fail(`the reply was ${shown}`);
    if (notContains !== undefined && text.includes(notContains)) return fail(`the reply was ${shown}`);
    return undefined;
  }
  if (expectation.maxSteps !== undefined) return seen.steps <= expectation.maxSteps ? undefined : fail(`took ${seen.steps}`);
  if (expectation.maxTokens !== undefined) {
    if (seen.tokens === null) return fail("the model reported no token usage");
    return seen.tokens <= expectation.maxTokens ? undefined : fail(`used ${seen.tokens}`);
  }
  return undefined;
}

/** Every failing check, each prefixed with where it is (for example `turn 2`). */
export function checkExpectations(expectations: readonly EvalExpectation[], seen: Observation, where: string): string[] {
  return expectations.flatMap((expectation) => {
    const problem = checkExpectation(expectation, seen);
    return problem === undefined ? [] : [`${where}: ${problem}`];
  });
}
