// One run of one evaluation case: a fresh engine over a store of its own (in-memory SQLite: a live
// conversation is never touched), the release, the model (metered), and an EvalRunner for this run. Each
// customer turn goes in as a widget or channel message would; a proposed write is recorded and checked,
// then confirmed (with the scripted outcome, nothing runs) or declined as the turn says; a tool's questions
// are answered from the turn's answers. What happened is read back from the run's own store.
import type { CallSubject, ChannelCapabilities, EvalCase, EvalCases, Outbound } from "@caplo/shared";
import { Engine, HANDOFF_TOOL } from "../engine/engine.ts";
import { findTool, StaticReleases, type AgentRelease } from "../engine/release.ts";
import type { Model } from "../model/model.ts";
import { SqliteStore } from "../store/sqliteStore.ts";
import { checkExpectations, emptyObservation, mergeObservations, type Observation } from "./assertions.ts";
import { EvalRunner } from "./evalRunner.ts";
import type { FixtureBook } from "./fixtureReads.ts";
import { MeteredModel } from "./meteredModel.ts";
import type { ReadOnlyRunner } from "./readOnlyRunner.ts";

/** The widget's capabilities (web); messaging channels get their platform's (channels/channelSetup.ts). */
const WEB: ChannelCapabilities = { editableFields: true, forms: true, questions: true, files: true, pages: true, richText: true };
const OWNER = "eval-customer-connection";
/** A tool's question waits this long for an answer the driver gives at once. */
const ELICIT_TIMEOUT_MS = 10_000;

export type CaseRunContext = {
  release: AgentRelease;
  /** A fresh model per run is not needed: the metered wrapper is per run. */
  model: Model;
  live: ReadOnlyRunner;
  fixtures: FixtureBook;
  defaults: Pick<EvalCases, "channel" | "reads">;
  secrets?: (packageVersionId: string) => Record<string, string>;
  now?: () => number;
};

export type TurnReport = { turn: number; problems: string[]; observation: Observation };
export type CaseRunResult = {
  passed: boolean;
  problems: string[];
  turns: TurnReport[];
  steps: number;
  /** null: the model reported no token usage. */
  tokens: number | null;
  ms: number;
  /** Writes the engine would have run, answered with their scripted outcomes. */
  scriptedWrites: number;
};

async function capabilitiesOf(channel: EvalCase["channel"] & string): Promise<ChannelCapabilities> {
  if (channel === "web") return WEB;
  const { neutralCapabilities } = await import("../channels/channelSetup.ts");
  return neutralCapabilities(channel);
}

const parseArgs = (text: string): unknown => {
  try {
    return JSON.parse(text || "{}");
  } catch {
    return text;
  }
};

export async function runCaseOnce(testCase: EvalCase, context: CaseRunContext): Promise<CaseRunResult> {
  const started = performance.now();
  const { release } = context;
  const channel = testCase.channel ?? context.defaults.channel;
  const reads = testCase.reads ?? context.defaults.reads;
  const problems: string[] = [];
  const turns: TurnReport[] = [];
  const model = new MeteredModel(context.model);
  const runner = new EvalRunner({ reads, live: context.live, fixtures: context.fixtures });
  const finish = (): CaseRunResult => {
    const whole = mergeObservations(turns.map((turn) => turn.observation));
    if (turns.length === testCase.turns.length) problems.push(...checkExpectations(testCase.expect, whole, "conversation"));
    problems.push(...runner.problems, ...context.live.refused.map((refusal) => `eval_write_refused: ${refusal}`));
    return { passed: problems.length === 0, problems, turns, steps: model.steps, tokens: model.reported ? model.tokens : null, ms: performance.now() - started, scriptedWrites: runner.writes.length };
  };
  if (!release.config.channels[channel]) {
    problems.push(`eval_channel_unavailable: the agent ${release.agent} has no ${channel} channel`);
    return finish();
  }
  const now = context.now ?? Date.now;
  const store = new SqliteStore(":memory:");
  await store.migrate();
  const engine = new Engine({
    store,
    runner,
    model,
    releases: new StaticReleases([release]),
    nodeId: "eval",
    now,
    elicitTimeoutMs: ELICIT_TIMEOUT_MS,
    ...(context.secrets && { secrets: context.secrets }),
  });
  try {
    // No scheduler: no status check, proposal sweep or file purge ever runs in an evaluation.
    await engine.start({ scheduler: false });
    const subject: CallSubject | null = testCase.signIn
      ? { id: testCase.signIn.id, level: testCase.signIn.level, authTime: new Date(now() - testCase.signIn.authAgeSeconds * 1000).toISOString(), ...(testCase.signIn.ref && { ref: testCase.signIn.ref }) }
      : null;
    const conversation = await engine.openConversation({ agent: release.agent, channel, capabilities: await capabilitiesOf(channel), ownerId: OWNER, subject });
    // The greeting is not part of the first turn.
    let eventSeq = (await store.getConversation(conversation.id))?.lastSeq ?? 0;
    let transcriptSeq = 0;
    let writesSeen = 0;
    for (const [index, turn] of testCase.turns.entries()) {
      const where = `turn ${index + 1}`;
      const stepsBefore = model.steps;
      const tokensBefore = model.tokens;
      const questionsBefore = runner.questions.length;
      const writesBefore = runner.writes.length;
      const turnProblems: string[] = [];
      runner.confirm = turn.confirm;
      // A tool's question is answered as soon as it is stored, from the turn's answers in order (then cancel).
      const answers = [...(turn.answers ?? [])];
      let watched = eventSeq;
      const answering = new Set<Promise<unknown>>();
      const unsubscribe = engine.subscribe(conversation.id, () => {
        const pass = engine.eventsAfter(conversation.id, watched).then(async (events) => {
          for (const event of events) {
            watched = Math.max(watched, event.seq);
            if (event.message.type !== "question") continue;
            const answer = answers.shift() ?? "cancel";
            const inbound =
              typeof answer === "string"
                ? { type: "answer" as const, elicitationId: event.message.elicitationId, action: answer }
                : { type: "answer" as const, elicitationId: event.message.elicitationId, action: "accept" as const, content: answer };
            const answered = await engine.handle(conversation.id, OWNER, inbound);
            if (!answered.ok) turnProblems.push(`${where}: the answer to the tool's question was refused: ${answered.error.code}: ${answered.error.message}`);
          }
        });
        answering.add(pass);
        void pass.finally(() => answering.delete(pass));
      });
      try {
        const said = await engine.handle(conversation.id, OWNER, { type: "message", text: turn.customer });
        if (!said.ok) turnProblems.push(`${where}: the message was refused: ${said.error.code}: ${said.error.message}`);
        const open = (await store.listWrites(conversation.id)).slice(writesSeen).find((write) => write.state === "proposed");
        if (open && (turn.confirm || turn.decline)) {
          const decided = await engine.handle(
            conversation.id,
            OWNER,
            turn.confirm ? { type: "confirm", proposalId: open.id, ...(turn.confirm.edits && { edits: turn.confirm.edits }) } : { type: "decline", proposalId: open.id },
          );
          if (!decided.ok) turnProblems.push(`${where}: ${turn.confirm ? "confirming" : "declining"} the proposal was refused: ${decided.error.code}: ${decided.error.message}`);
        } else if (!open && (turn.decline || (turn.confirm && runner.writes.length === writesBefore))) {
          turnProblems.push(`${where}: the turn ${turn.confirm ? "confirms" : "declines"} a write, but none was proposed`);
        }
        await engine.idle();
        while (answering.size > 0) await Promise.all([...answering]);
      } finally {
        unsubscribe();
        runner.confirm = undefined;
      }
      const events = await store.listEvents(conversation.id, eventSeq, 10_000);
      eventSeq = events.at(-1)?.seq ?? eventSeq;
      const transcript = await store.listTranscript(conversation.id, transcriptSeq);
      transcriptSeq = transcript.at(-1)?.seq ?? transcriptSeq;
      const writes = (await store.listWrites(conversation.id)).slice(writesSeen);
      writesSeen += writes.length;
      const observation = emptyObservation();
      for (const entry of transcript) {
        if (entry.message.role !== "assistant") continue;
        for (const call of entry.message.toolCalls ?? []) {
          observation.calls.push({ tool: call.name === HANDOFF_TOOL ? "handoff" : (findTool(release, call.name)?.ref ?? call.name), args: parseArgs(call.arguments) });
        }
      }
      const reviews = events.flatMap((event) => (event.message.type === "review" ? [event.message] : []));
      for (const write of writes) {
        const card = reviews.find((review) => review.proposalId === write.id);
        observation.proposals.push({ tool: write.toolRef, args: write.args, confirmation: write.confirmation, fields: Object.fromEntries((card?.fields ?? []).map((field) => [field.label, field.value])) });
      }
      const queue = release.config.channels[channel]?.handoff?.queue ?? null;
      for (const event of events) recordEvent(observation, event.message, queue);
      observation.questions.push(...runner.questions.slice(questionsBefore));
      observation.steps = model.steps - stepsBefore;
      observation.tokens = model.reported ? model.tokens - tokensBefore : null;
      turnProblems.push(...checkExpectations(turn.expect, observation, where));
      problems.push(...turnProblems);
      turns.push({ turn: index + 1, problems: turnProblems, observation });
    }
  } catch (error) {
    problems.push(`eval_run_failed: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    await engine.stop();
    await store.close();
  }
  return finish();
}

function recordEvent(observation: Observation, message: Outbound, queue: string | null): void {
  if (message.type === "text" && message.from === "agent") observation.replies.push(message.text);
  else if (message.type === "handoff" && message.state === "requested") observation.handoffs.push({ queue });
}
