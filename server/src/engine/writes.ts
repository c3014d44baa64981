// Writes: proposal, the customer's decision, the run with its idempotency key, the outcome, step-up and
// expiry. Each ledger change is the write policy's (writePolicy.ts), stored by compare-and-set together
// with what announces it (one transaction) before anything acts on it.
import type { CallSubject, Inbound, Outbound, WriteOutcome } from "@caplo/shared";
import { satisfiesStepUp } from "../identity/stepUp.ts";
import type { ModelMessage } from "../model/model.ts";
import { validateAgainst } from "../runner/schemaValidator.ts";
import type { AppendBatch, ChangedWrite, ConversationRecord, WriteAudit } from "../store/store.ts";
import type { WriteChange, WriteRecord } from "./ledger.ts";
import { fail, progressEvent, proposedNote, randomId, stepUpEvent, storeUnreachable, type ToolUse, type EngineResult, type ToolCallOutcome } from "./common.ts";
import { EnginePart } from "./core.ts";
import { shownState } from "./customerActions.ts";
import { blockedCustomerText, customerText, modelNote, writeTitle } from "./outcomeText.ts";
import { applyEdits, lookalikeArgument, misleadingArgument, receiptFields, reviewCard, undeclaredArgument } from "./presentation.ts";
import type { EngineTool } from "./release.ts";
import { proposalExpired, stepUpExpired, writeExpired } from "./proposalSweep.ts";
import { blockedMessage, blockingWrite, changedWrite, decide, planChange, type Actor, type LedgerContext, type PolicyEvent } from "./writePolicy.ts";

export class Writes extends EnginePart {
  async decideProposal(conversationId: string, ownerId: string, inbound: Extract<Inbound, { type: "confirm" | "decline" }>, recorded?: () => void): Promise<EngineResult> {
    const conversation = (await this.core.store.getConversation(conversationId))!;
    const write = await this.core.store.getWrite(inbound.proposalId);
    // A proposal of another conversation is not visible here: refused exactly like a missing one.
    if (!write || write.conversationId !== conversationId) return fail("proposal_not_found", "proposalId", "no such proposal in this conversation");
    const tool = this.core.toolForWrite(write);
    if (!tool) return fail("tool_unavailable", "proposalId", "the tool of this proposal is no longer available");
    const actor: Actor = { ownerId, subjectId: conversation.subject?.id ?? null };
    if (proposalExpired(write, this.core.now(), this.core.proposalTtl())) {
      await this.apply(write, tool, { type: "expire" });
      return fail("proposal_expired", "proposalId", "this proposal expired; ask the agent again");
    }
    if (inbound.type === "decline") {
      const decision = decide(write, { type: "decline", actor });
      if (!decision.ok) return fail(decision.code, "proposalId", decision.message);
      const declined = await this.change(write, tool, { type: "decline", actor });
      if (!declined) return fail("proposal_not_open", "proposalId", "this proposal was already decided");
      recorded?.();
      // The conversation as the decline's append left it: the turn that tells the model starts from it (fresh).
      const after = declined.appended?.conversation;
      if (!(after ?? conversation).handoff) await this.core.turns.runTurn(after ?? conversation, after !== undefined);
      return { ok: true };
    }
    const decision = decide(write, { type: "confirm", actor });
    if (!decision.ok) return fail(decision.code, "proposalId", decision.message);
    const edited = applyEdits(tool, write.args, inbound.edits, conversation.capabilities);
    if (!edited.ok) return { ok: false, error: edited.error };
    const plan = planChange(write, { type: "confirm", actor, finalArgs: edited.args, idempotencyKey: randomId("ik", 32) }, this.context(tool));
    if (!plan.ok) return fail(plan.code, "proposalId", plan.message);
    const confirmed = await this.core.store.transitionWrite(write.id, plan.expect, plan.change, this.core.now());
    // Two confirms (double click, two tabs): the compare-and-set lets exactly one through.
    if (!confirmed) return fail("proposal_not_open", "proposalId", "this proposal was already decided");
    recorded?.();
    const ran = await this.runWrite(confirmed, tool, conversation);
    // The conversation as the outcome's append left it (read only if another node recorded the outcome): the turn
    // that tells the model starts from it (fresh), not from a read of its own.
    const after = ran?.appended?.conversation ?? (await this.core.store.getConversation(conversationId))!;
    if (!after.handoff) await this.core.turns.runTurn(after, true);
    return { ok: true };
  }

  /** A customer verified (identity token, or a channel identity): cancel other customers' proposals, resume step-ups. */
  async verify(conversationId: string, subject: CallSubject, rotate?: () => Promise<boolean>): Promise<EngineResult> {
    return this.core.serial(conversationId, async () => {
      const conversation = await this.core.store.getConversation(conversationId);
      if (!conversation) return fail("conversation_not_found", "conversationId", "no such conversation");
      // The resume token replaced before the subject is set: a sign-in that lost the token's race sets nothing.
      if (rotate && !(await rotate())) return fail("resume_rotated", "", "this conversation's resume token was replaced; resume with the new token");
      await this.core.store.setSubject(conversationId, subject);
      // A read that asked the customer to verify (since their last message) goes on by itself: no retyping.
      const readWaits = await this.readWaitsForVerification(conversation);
      await this.core.conversations.note(conversationId, `The customer is verified (level ${subject.level}).${readWaits ? ` ${VERIFIED_CONTINUE_NOTE}` : ""}`);
      const updated = (await this.core.store.getConversation(conversationId))!;
      for (const write of await this.core.store.listWrites(conversationId)) {
        if (stepUpExpired(write, this.core.now(), this.core.proposalTtl())) {
          // Verified too late: it expires (nothing was applied) rather than running long after it was asked for.
          await this.expireWrite(write);
          continue;
        }
        const satisfies = write.stepUp ? satisfiesStepUp(subject, write.stepUp, new Date(this.core.now())) : false;
        const tool = this.core.toolForWrite(write);
        if (!tool) continue;
        const plan = planChange(write, { type: "verified", subjectId: subject.id, satisfiesStepUp: satisfies }, this.context(tool));
        if (!plan.ok) continue;
        if (plan.to === "running") {
          const running = await this.core.store.transitionWrite(write.id, plan.expect, plan.change, this.core.now());
          if (running) await this.runWrite(running, tool, updated, true);
        } else {
          await this.apply(write, tool, { type: "verified", subjectId: subject.id, satisfiesStepUp: satisfies });
        }
      }
      if (readWaits && !updated.handoff) await this.core.turns.runTurn((await this.core.store.getConversation(conversationId))!, true);
      return { ok: true } as EngineResult;
    });
  }

  /** A step-up prompt of a read (no proposal) came after the customer's latest message: that request waits. */
  private async readWaitsForVerification(conversation: ConversationRecord): Promise<boolean> {
    const recent = await this.core.store.listEvents(conversation.id, Math.max(0, conversation.lastSeq - 64));
    for (let i = recent.length - 1; i >= 0; i--) {
      const m = recent[i]!.message;
      if (m.type === "step_up" && !m.proposalId) return true;
      if (m.type === "text" && m.from === "customer") return false;
    }
    return false;
  }

  async proposeWrite(use: ToolUse): Promise<ToolCallOutcome> {
    const { conversation, tool, turnId, call, args, carry } = use;
    let writes = await this.core.store.listWrites(conversation.id);
    const expired = writes.filter((write) => writeExpired(write, this.core.now(), this.core.proposalTtl()));
    // A proposal (or a step-up) past its time expires here, so it does not block the conversation for ever.
    for (const write of expired) await this.expireWrite(write);
    if (expired.length > 0) writes = await this.core.store.listWrites(conversation.id);
    const blocking = blockingWrite(writes);
    if (blocking) {
      // The customer is told why no card appears, whatever the model goes on to say (stored with the step).
      carry.events.push({ type: "text", id: randomId("m"), from: "system", text: blockedCustomerText(writeTitle(this.core.toolForWrite(blocking), blocking), blocking.state) });
      return { modelText: blockedMessage(blocking.state, blocking.toolRef) };
    }
    const issues = validateAgainst(tool.inputSchema, this.core.turns.withSelector(tool, args, conversation.subject));
    if (issues.length > 0) return { modelText: `arguments_invalid: ${issues.map((issue) => `${issue.path || "/"} ${issue.message}`).join("; ")}` };
    // The card must show exactly the call that runs: text that displays in another order, or with invisible
    // characters, is refused before anything is stored or shown.
    const confirmation = tool.policy.effect === "write" ? tool.policy.confirmation : "required";
    // With a presentation the card shows the fields the operator chose from the tool's declared arguments;
    // an argument the schema merely lets through (no additionalProperties: false) would run unseen.
    const undeclared = confirmation === "required" ? undeclaredArgument(tool, args) : null;
    if (undeclared) {
      return { modelText: `arguments_invalid: /${undeclared} is not an argument of ${tool.modelName}; send only its declared arguments.` };
    }
    const misleading = confirmation === "required" ? misleadingArgument(args) : null;
    if (misleading) {
      return {
        modelText: `arguments_invalid: ${misleading.path} holds ${misleading.codePoint}, an invisible or text-direction character that would make the review card show other text than the tool receives; leave it out.`,
      };
    }
    const lookalike = confirmation === "required" ? lookalikeArgument(args) : null;
    if (lookalike) {
      const word = lookalike.word.length > 40 ? `${lookalike.word.slice(0, 40)}…` : lookalike.word;
      return {
        modelText: `arguments_invalid: ${lookalike.path} holds ${JSON.stringify(word)}, a word mixing ${lookalike.scripts.join(" and ")} letters, which the review card would show as another word than the tool receives; write each word in one alphabet.`,
      };
    }
    const id = randomId("p", 16);
    const card = confirmation === "required" ? reviewCard(tool, args, conversation.capabilities) : undefined;
    // The write, what the step has waiting, its review card and its tool entry: one transaction.
    const batch: AppendBatch = {
      events: card ? [...carry.events, { type: "review", id: randomId("m"), proposalId: id, tool: tool.ref, title: card.title, fields: card.fields, state: "proposed" }] : carry.events,
      transcript: card ? [...carry.transcript, { role: "tool", toolCallId: call.id, name: call.name, content: proposedNote(tool.ref, id) }] : carry.transcript,
    };
    const proposed = await this.core.store.proposeWrite(
      {
        id,
        conversationId: conversation.id,
        turnId,
        callId: call.id,
        toolRef: tool.ref,
        modelName: tool.modelName,
        packageVersionId: tool.packageVersionId,
        tool: tool.tool,
        args,
        state: "proposed",
        confirmation,
        ownerId: conversation.ownerId,
        subjectId: conversation.subject?.id ?? null,
        createdAt: this.core.now(),
      },
      batch,
    );
    // Another node stored a write in this conversation since the check above: the store kept only one (and nothing of this batch).
    if (!proposed.ok) {
      const other = blockingWrite(await this.core.store.listWrites(conversation.id));
      return { modelText: other ? blockedMessage(other.state, other.toolRef) : "write_blocked: another write of this conversation was started at the same moment and has just ended; you may try again." };
    }
    carry.events = [];
    carry.transcript = [];
    if (proposed.appended) await this.core.conversations.announce(proposed.appended);
    if (confirmation === "none") {
      const confirmed = await this.core.store.transitionWrite(
        id,
        { states: ["proposed"] },
        { state: "confirmed", finalArgs: args, idempotencyKey: randomId("ik", 32), nodeId: this.core.nodeId, note: "confirmation: none" },
        this.core.now(),
      );
      const done = await this.runWrite(confirmed!, tool, conversation, false);
      return { modelText: modelNote(done?.write ?? confirmed!) };
    }
    return { modelText: proposedNote(tool.ref, id), endTurn: true, stored: true };
  }

  /**
   * Run a confirmed write (or re-run one after step-up) with exactly its final arguments and its key, and
   * record the outcome. The `running` transition is stored, with the progress the customer sees, before the
   * runner is called.
   */
  private async runWrite(write: WriteRecord, tool: EngineTool, conversation: ConversationRecord, noteToModel = true): Promise<ChangedWrite | undefined> {
    const start: AppendBatch = { events: [progressEvent(tool, write.callId, "start")] };
    let running: WriteRecord | undefined = write;
    if (write.state === "confirmed") {
      const changed = await this.core.store.changeWrite(write.id, { states: ["confirmed"] }, { state: "running", nodeId: this.core.nodeId, note: "sent to the tool" }, this.core.now(), start);
      if (changed?.appended) await this.core.conversations.announce(changed.appended);
      running = changed?.write;
    } else {
      await this.core.conversations.record(conversation.id, start); // made running by its step-up
    }
    if (!running) return undefined;
    let outcome: WriteOutcome;
    try {
      const result = await this.core.options.runner.call({
        packageVersionId: running.packageVersionId,
        tool: running.tool,
        args: running.finalArgs ?? running.args, // the runner fills the subject selector itself
        context: {
          invocationId: randomId("inv"),
          conversationId: conversation.id,
          turnId: running.turnId,
          workspaceId: conversation.workspaceId,
          idempotencyKey: running.idempotencyKey!,
          ...(tool.policy.subject && conversation.subject && { subject: conversation.subject }),
          secrets: await this.core.secrets(running.packageVersionId, conversation.workspaceId),
        },
      });
      outcome =
        result.outcome ??
        (result.stepUp
          ? { outcome: "step_up_required", stepUp: result.stepUp }
          : result.isError
            ? { outcome: "unknown", reason: result.modelText }
            : { outcome: "applied", text: result.modelText, ...(result.structuredContent && { structuredContent: result.structuredContent }) });
    } catch (error) {
      outcome = { outcome: "unknown", reason: `the runner failed: ${error instanceof Error ? error.message : String(error)}` };
    }
    return this.recordOutcome(running, tool, outcome, noteToModel);
  }

  /**
   * The outcome of a write is known only here, in memory: if the store is away (PostgreSQL restarting),
   * keep trying to record it, with a growing gap, rather than leave the write `running`. If this node
   * dies first, another takes it over (unknown, then a status check); its compare-and-set then fails here.
   * The progress end, the outcome and what the model is told are stored with the transition.
   */
  private async recordOutcome(running: WriteRecord, tool: EngineTool, outcome: WriteOutcome, noteToModel: boolean): Promise<ChangedWrite | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.change(running, tool, { type: "finished", outcome }, noteToModel, [progressEvent(tool, running.callId, "end")]);
      } catch (error) {
        if (this.core.stopped || attempt >= 60 || !storeUnreachable(error)) throw error;
        if (attempt === 0) this.core.log("warn", "a write's outcome could not be stored yet; retrying", { writeId: running.id, error: String(error) });
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 100 * 2 ** attempt)));
      }
    }
  }

  /**
   * Store a decision's ledger change (compare-and-set from the write's current state) together with what
   * announces it (its effects: the outcome event, the note to the model, the step-up request), in one transaction.
   */
  async apply(write: WriteRecord, tool: EngineTool, event: PolicyEvent, noteToModel = true, before: Outbound[] = []): Promise<WriteRecord | undefined> {
    return (await this.change(write, tool, event, noteToModel, before))?.write;
  }

  /** apply, with what was appended in the change's transaction (the conversation as it left it). */
  private async change(write: WriteRecord, tool: EngineTool, event: PolicyEvent, noteToModel = true, before: Outbound[] = []): Promise<ChangedWrite | undefined> {
    const context = this.context(tool);
    const plan = planChange(write, event, context);
    if (!plan.ok) return undefined;
    const { now } = context;
    const after = changedWrite(write, plan.change, now);
    const batch: AppendBatch & { events: Outbound[]; transcript: ModelMessage[] } = { events: [...before], transcript: [] };
    for (const effect of plan.effects) {
      if (effect.type === "tell") this.addTell(batch, after, tool, noteToModel);
      if (effect.type === "ask_step_up") {
        // The review card learns its write waits for the customer to verify again (not "confirming" forever).
        this.addTell(batch, after, tool, false);
        batch.events.push(stepUpEvent(effect.stepUp, after.id));
        if (noteToModel) batch.transcript.push({ role: "system", content: modelNote(after) });
      }
    }
    const announced = batch.events.length > 0 || batch.transcript.length > 0;
    const changed = await this.core.store.changeWrite(write.id, plan.expect, plan.change, now, announced ? batch : undefined, followUpAudit(write, plan.change));
    if (!changed) {
      // Another node changed the write first (and tells the customer where it stands): the progress this node
      // showed still ends.
      if (before.length > 0) await this.core.conversations.record(write.conversationId, { events: before });
      return undefined;
    }
    if (changed.appended) await this.core.conversations.announce(changed.appended);
    return changed;
  }

  /** What the write policy needs to give a whole ledger change now (writePolicy.planChange). */
  private context(tool: EngineTool | undefined): LedgerContext {
    return { now: this.core.now(), checkBaseMs: this.core.checkBase(), hasStatus: tool?.hasStatus ?? false, nodeId: this.core.nodeId };
  }

  /** The outcome event (and the note to the model) telling where a write stands, added to a batch. */
  private addTell(batch: { events: Outbound[]; transcript: ModelMessage[] }, write: WriteRecord, tool: EngineTool | undefined, noteToModel: boolean): void {
    const title = writeTitle(tool, write);
    const receipt = write.state === "applied" && tool && write.result?.outcome === "applied" ? receiptFields(tool, write.result.structuredContent) : undefined;
    batch.events.push({
      type: "outcome",
      id: randomId("m"),
      proposalId: write.id,
      state: shownState(write.state),
      title,
      message: customerText(title, write),
      ...(receipt && receipt.length > 0 && { receipt }),
    });
    if (noteToModel) batch.transcript.push({ role: "system", content: modelNote(write) });
  }

  /** Tell the customer (outcome event) and the model (transcript note) where a write stands: one append. */
  async tell(write: WriteRecord, tool: EngineTool | undefined, noteToModel = true): Promise<void> {
    const batch = { events: [] as Outbound[], transcript: [] as ModelMessage[] };
    this.addTell(batch, write, tool, noteToModel);
    await this.core.conversations.record(write.conversationId, batch);
  }

  async markFollowUp(write: WriteRecord): Promise<void> {
    const change: WriteChange = { state: write.state, followUp: true, nextCheckAt: null, note: "no status check: listed for the team" };
    await this.core.store.changeWrite(write.id, { states: [write.state] }, change, this.core.now(), undefined, followUpAudit(write, change));
  }

  /**
   * Expire one proposal: compare-and-set proposed → expired, then tell the review card and the model. Of
   * several nodes sweeping at once only the one whose transition lands tells anyone.
   */
  expireProposal(write: WriteRecord): Promise<boolean> {
    return this.core.serial(write.conversationId, async () => {
      const current = await this.core.store.getWrite(write.id);
      if (!current || !writeExpired(current, this.core.now(), this.core.proposalTtl())) return false;
      return this.expireWrite(current);
    });
  }

  /**
   * Compare-and-set proposed (or step_up_required) → expired, from the state the write was read in; only if
   * it lands are the customer (the review card) and the model told that nothing was done.
   */
  private async expireWrite(write: WriteRecord): Promise<boolean> {
    const tool = this.core.toolForWrite(write);
    const context = this.context(tool);
    const plan = planChange(write, { type: "expire" }, context);
    if (!plan.ok) return false;
    const batch = { events: [] as Outbound[], transcript: [] as ModelMessage[] };
    this.addTell(batch, changedWrite(write, plan.change, context.now), tool, true);
    const expired = await this.core.store.changeWrite(write.id, plan.expect, plan.change, context.now, batch);
    if (!expired) return false;
    if (expired.appended) await this.core.conversations.announce(expired.appended);
    return true;
  }
}

/**
 * A change's entry in the workspace's audit, stored in the change's own transaction: a write listed for the team
 * (its outcome unknown after its checks, or no check to ask), or a listed write whose outcome became known after all.
 */
function followUpAudit(before: WriteRecord, change: WriteChange): WriteAudit | undefined {
  const listed = change.followUp === true && !before.followUp;
  const resolved = before.followUp && change.state !== before.state;
  if (!listed && !resolved) return undefined;
  return { actor: "caplo", action: listed ? "follow_up.listed" : "follow_up.resolved", detail: { conversationId: before.conversationId, tool: before.toolRef, state: change.state } };
}

/** Added to the verification note when a read waited for it: the model goes on with the request. */
export const VERIFIED_CONTINUE_NOTE = "Continue with their last request now.";
