// A turn: model steps until the model answers without tool calls; a read runs at once, a write becomes a
// proposal (writes.ts), the handoff tool hands the conversation to the team. What a step produces waits in
// the turn's carry and is stored in one transaction before the customer sees it or anything acts on it:
// before the next model call, with the turn's last append (which clears what it owed), or earlier when a
// proposal, a handoff, a question, a file or a slow read's progress needs it stored. A step whose reads
// answered at once and that showed nothing is held: the model is asked with it from the carry, and it is
// stored with the turn's answer (a read turn is two commits: the customer's message, then the turn's end).
import { FILE_TYPES, type CallSubject } from "@caplo/shared";
import type { Model, ModelMessage, ModelTool, ModelToolCall } from "../model/model.ts";
import type { DeliveredFile, ElicitRequest } from "../runner/api.ts";
import type { ConversationRecord } from "../store/store.ts";
import { FILES_PATH, HANDED_OFF_NOTE, HANDOFF_TOOL, progressEvent, randomId, stepUpEvent, storeUnreachable, type Carry, type ToolUse, type ToolCallOutcome } from "./common.ts";
import { EnginePart } from "./core.ts";
import { modelParameters, projectResult } from "./presentation.ts";
import { findTool, type AgentRelease, type EngineTool } from "./release.ts";
import { handoffReason } from "./handoff.ts";

/**
 * A read that answers within this stores nothing of its own: its progress start is stored (and shown) with
 * its end and result. One still running then is shown working (its progress start is stored).
 */
export const PROGRESS_SHOWN_AFTER_MS = 250;

export class Turns extends EnginePart {
  private modelFor(release: AgentRelease): Model {
    return typeof this.core.options.model === "function" ? this.core.options.model(release) : this.core.options.model;
  }

  private modelTools(release: AgentRelease, conversation: ConversationRecord): ModelTool[] {
    const tools: ModelTool[] = release.tools.map((tool) => ({ name: tool.modelName, description: tool.description, parameters: modelParameters(tool) }));
    if (release.config.channels[conversation.channel]?.handoff) {
      tools.push({
        name: HANDOFF_TOOL,
        description: "Hand the conversation to a person on the team when the customer asks for one or you cannot help.",
        parameters: { type: "object", properties: { reason: { type: "string", maxLength: 500 } }, additionalProperties: false },
      });
    }
    return tools;
  }

  /**
   * A turn: model steps until the model answers without tool calls. Each step's results (the model's reply,
   * a read's progress and result, the tool entry) wait in the carry, shown to no one, and are stored in one
   * transaction before the next model call, or with the turn's last append when the step is held
   * (turnSteps); `fresh` says the caller's record is as recent as a read at the turn's start would be (read in
   * the transaction that stored the customer's input, or just before this call), so the first step does not read it again.
   */
  async runTurn(conversation: ConversationRecord, fresh = false, owedSeq?: number): Promise<void> {
    const release = this.core.releaseOf(conversation);
    if (!release) return;
    const model = this.modelFor(release);
    const turnId = randomId("t");
    const carry: Carry = { events: [], transcript: [] };
    const finish = owedSeq !== undefined ? { nodeId: this.core.nodeId, seq: owedSeq } : undefined;
    let ended = false;
    this.core.typing(conversation.id, true);
    try {
      await this.turnSteps(conversation, release, model, turnId, carry, fresh, owedSeq);
      ended = true;
    } finally {
      // A turn that ends (answer, end of turn, step limit, or a failure) stores what it has not stored yet; one
      // that ended without throwing also clears what it owed, in the same statement.
      try {
        await this.storeTurnEnd(conversation.id, carry, ended ? finish : undefined);
      } finally {
        this.core.typing(conversation.id, false);
      }
    }
  }

  /**
   * The turn's last append. If the store is away (PostgreSQL restarting) when the reply has already been
   * shown streaming, keep trying, with a growing gap, so the reply is stored and sent once the store is
   * back, rather than lost with the customer left waiting (tests/faults/postgresRestart.test.ts).
   */
  private async storeTurnEnd(conversationId: string, carry: Carry, finish: { nodeId: string; seq: number } | undefined): Promise<void> {
    const { events, transcript } = carry;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.core.conversations.flushCarry(conversationId, { events, transcript }, [], finish);
        return;
      } catch (error) {
        if (this.core.stopped || attempt >= 60 || !storeUnreachable(error)) throw error;
        if (attempt === 0) this.core.log("warn", "a turn's last steps could not be stored yet; retrying", { conversationId, error: String(error) });
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 100 * 2 ** attempt)));
      }
    }
  }

  /**
   * The model steps of a turn (runTurn stores what they leave in the carry). Before each model call the
   * previous step's carry is stored, and that transaction reads the conversation (is the turn still this
   * node's, is the team holding it), unless the step is held: it only ran reads that answered at once and
   * showed the customer nothing (no text of the model's, nothing stored meanwhile), so it stays in the carry,
   * the model is asked with it, and it is stored with what follows (at most the turn's last append). A crash
   * before then runs the turn again from the customer's message, reads again included (reads change nothing).
   */
  private async turnSteps(conversation: ConversationRecord, release: AgentRelease, model: Model, turnId: string, carry: Carry, fresh: boolean, owedSeq: number | undefined): Promise<void> {
    let current = conversation;
    let held = false;
    for (let step = 0; step < (this.core.options.maxModelSteps ?? 8); step++) {
      if (!held) {
        const stored = await this.core.conversations.flushCarry(conversation.id, carry);
        current = stored?.conversation ?? (step === 0 && fresh ? conversation : (await this.core.store.getConversation(conversation.id))!);
        if (current.handoff) return;
        // The turn owed to a customer message stops once it is no longer this node's: this node stalled and
        // another took it over, or a newer message on another node owes the next turn (which sees this one's steps).
        if (owedSeq !== undefined && (current.owedTurn?.nodeId !== this.core.nodeId || current.owedTurn.seq !== owedSeq)) {
          this.core.log("warn", "a turn no longer owed by this node stops", { conversationId: conversation.id, owedTurn: current.owedTurn });
          return;
        }
      }
      const verified = current.subject ? `The customer is verified (level ${current.subject.level}).` : "The customer is not verified.";
      // The stored transcript's window, then the held step (an empty carry when it was stored above).
      const window = await this.core.transcripts.windowOf(current, this.core.transcriptBudget(), carry.transcript);
      const messages: ModelMessage[] = [{ role: "system", content: `${release.config.instructions}\n\n${verified}` }, ...window];
      let text = "";
      const calls: ModelToolCall[] = [];
      let failed: string | undefined;
      // The reply streams to listeners (the widget) as it comes and is stored once below, under the same id.
      const reply = this.core.replies.begin(conversation.id, randomId("m"));
      try {
        for await (const part of model.stream({ messages, tools: this.modelTools(release, current), signal: reply.signal })) {
          if (part.type === "text-delta") {
            text += part.text;
            reply.push(part.text);
          } else if (part.type === "tool-call") calls.push(part.call);
          else if (part.type === "error") failed = `${part.code}: ${part.message}`;
          if (reply.stopped) break;
        }
      } finally {
        reply.end();
      }
      // Stopped by the visitor: what was written so far is the reply; no tool call of this step runs.
      if (reply.stopped) {
        failed = undefined;
        calls.length = 0;
      }
      if (failed) {
        this.core.log("error", "model failed", { conversationId: conversation.id, error: failed });
        carry.events.push({ type: "text", id: randomId("m"), from: "system", text: "Sorry, I could not answer just now. Please try again." });
        return;
      }
      const said = text.trim() !== "";
      const stepMessage: ModelMessage = { role: "assistant", content: text, ...(calls.length > 0 && { toolCalls: calls }) };
      carry.transcript.push(stepMessage);
      if (said) carry.events.push({ type: "text", id: reply.id, from: "agent", text });
      if (calls.length === 0) return;
      let endTurn = false;
      for (const call of calls) {
        const outcome = await this.toolCall(current, release, turnId, call, carry);
        // A proposal stored its tool entry with the write itself.
        if (!outcome.stored) carry.transcript.push({ role: "tool", toolCallId: call.id, name: call.name, content: outcome.modelText });
        if (outcome.endTurn) endTurn = true;
      }
      if (endTurn) return;
      // Held when the carry still starts with this step (nothing of it was stored while its calls ran: no slow
      // read shown working, no question, file, proposal or handoff) and the customer saw no text of it streaming
      // (a streamed part is stored before the next step's replaces it on screen). One step at most is held.
      held = carry.transcript[0] === stepMessage && !said;
    }
  }

  /** One tool call of the model: a read runs at once, a write becomes a proposal (or runs, with confirmation none). */
  private async toolCall(
    conversation: ConversationRecord,
    release: AgentRelease,
    turnId: string,
    call: ModelToolCall,
    carry: Carry,
  ): Promise<ToolCallOutcome> {
    if (call.name === HANDOFF_TOOL && release.config.channels[conversation.channel]?.handoff) {
      await this.core.conversations.flushCarry(conversation.id, carry);
      await this.core.team.handOff(conversation, release, handoffReason(call.arguments));
      return { modelText: HANDED_OFF_NOTE, endTurn: true };
    }
    const tool = findTool(release, call.name);
    if (!tool) return { modelText: `tool_unknown: there is no tool named ${call.name}.` };
    let args: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(call.arguments || "{}");
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
      args = parsed as Record<string, unknown>;
    } catch {
      return { modelText: "arguments_invalid: the arguments must be one JSON object." };
    }
    const subjectPolicy = tool.policy.subject;
    if (subjectPolicy?.selector && subjectPolicy.selector in args) {
      return { modelText: `selector_refused: ${subjectPolicy.selector} is filled by Caplo from the verified customer; leave it out.` };
    }
    if (subjectPolicy && !conversation.subject) {
      await this.core.conversations.flushCarry(conversation.id, carry, [{ type: "step_up", id: randomId("m"), level: "low", text: "Please verify your identity so I can help with that." }]);
      return { modelText: "customer_not_verified: this tool acts for a verified customer; the customer has been asked to verify. Try again after they have." };
    }
    if (tool.policy.effect === "read") return this.runRead({ conversation, tool, turnId, call, args, carry });
    return this.core.writes.proposeWrite({ conversation, tool, turnId, call, args, carry });
  }

  withSelector(tool: EngineTool, args: Record<string, unknown>, subject: CallSubject | null): Record<string, unknown> {
    const selector = tool.policy.subject?.selector;
    if (!selector || !subject?.ref) return args;
    return { ...args, [selector]: subject.ref };
  }

  /**
   * A read runs at once. Its progress start joins the carry; a read still running after
   * PROGRESS_SHOWN_AFTER_MS (or asking the customer a question) stores the carry then, so the customer sees
   * it working, while a faster one is stored with its result, in the same order, in one append: before the
   * next model call, or with the turn's answer when its step is held (turnSteps). Its progress end, result
   * and step-up notice join the carry.
   */
  private async runRead(use: ToolUse): Promise<{ modelText: string }> {
    const { conversation, tool, turnId, call, args, carry } = use;
    carry.events.push(progressEvent(tool, call.id, "start"));
    const started = this.showWhenSlow(conversation.id, carry);
    let result;
    const asked = new Set<string>();
    try {
      result = await this.core.options.runner.call({
        packageVersionId: tool.packageVersionId,
        tool: tool.tool,
        args, // the runner fills the subject selector itself
        context: {
          invocationId: randomId("inv"),
          conversationId: conversation.id,
          turnId,
          workspaceId: conversation.workspaceId,
          ...(tool.policy.subject && conversation.subject && { subject: conversation.subject }),
          secrets: await this.core.secrets(tool.packageVersionId, conversation.workspaceId),
        },
        ...(this.core.elicitations.canElicit(conversation, tool) && {
          // The question comes after the read's progress start (and the step that called it) in the log.
          elicit: async (request: ElicitRequest) => {
            await started.store();
            return this.core.elicitations.elicit(conversation, tool, request, asked);
          },
        }),
      });
    } catch (error) {
      await started.settle();
      carry.events.push(progressEvent(tool, call.id, "end"));
      this.core.log("error", "read failed in the runner", { tool: tool.ref, error: String(error) });
      return { modelText: "tool_failed: the tool could not run." };
    } finally {
      // A question the call no longer waits for expires with it: a later answer is told so.
      for (const id of asked) this.core.elicitations.expire(id);
    }
    await started.settle();
    carry.events.push(progressEvent(tool, call.id, "end"));
    if (result.stepUp) {
      carry.events.push(stepUpEvent(result.stepUp, undefined));
      return { modelText: `step_up_required: the customer must verify at level ${result.stepUp.level}${result.stepUp.maxAuthAgeSeconds !== undefined ? ` within ${result.stepUp.maxAuthAgeSeconds} seconds` : ""}; they have been told. Nothing was looked up.` };
    }
    if (result.isError) return { modelText: `error: ${result.modelText}` };
    const shown = projectResult(tool, result.structuredContent, randomId("m"), call.id);
    if (shown) carry.events.push(shown);
    let modelText = result.modelText;
    if (result.files.length > 0) {
      await this.core.conversations.flushCarry(conversation.id, carry);
      modelText += await this.deliverFiles(conversation, result.files);
    }
    // A file refused by a check or the operator's scanner: the visitor is told it could not be delivered
    // (the model was told why in the tool's text).
    if (result.undelivered?.length) {
      await this.core.conversations.flushCarry(conversation.id, carry);
      const names = result.undelivered.map((file) => `"${file.name}"`).join(", ");
      await this.core.conversations.emit(conversation.id, { type: "text", id: randomId("m"), from: "system", text: `${result.undelivered.length === 1 ? "A file" : "Some files"} could not be delivered: ${names}.` });
    }
    return { modelText };
  }

  /**
   * Stores the carry (the read's progress start and the step that called it) once the read has run for
   * PROGRESS_SHOWN_AFTER_MS, or at once when `store` is called first. `settle` stops the timer and waits
   * for a store in flight (its failure is the turn's), so what the read adds to the carry comes after it.
   */
  private showWhenSlow(conversationId: string, carry: Carry): { store: () => Promise<void>; settle: () => Promise<void> } {
    let storing: Promise<void> | undefined;
    const store = () => (storing ??= this.core.conversations.flushCarry(conversationId, carry).then(() => undefined));
    const timer = setTimeout(() => void store().catch(() => undefined), this.core.options.progressShownAfterMs ?? PROGRESS_SHOWN_AFTER_MS);
    return {
      store,
      settle: async () => {
        clearTimeout(timer);
        await storing;
      },
    };
  }

  /** Files a read returned: kept and shown as downloads where the channel can; the model is told either way and never sees the bytes. */
  private async deliverFiles(conversation: ConversationRecord, files: DeliveredFile[]): Promise<string> {
    if (!conversation.capabilities.files) return `\n[${files.length} file(s) were not delivered: this channel cannot receive files.]`;
    const delivered: string[] = [];
    for (const file of files) {
      const mimeType = FILE_TYPES.find((type) => type === file.mimeType);
      if (!mimeType) continue;
      const id = randomId("f", 24);
      await this.core.store.putFile({ id, conversationId: conversation.id, name: file.name, mimeType, size: file.size, bytes: file.bytes, createdAt: this.core.now() });
      await this.core.conversations.emit(conversation.id, { type: "file", id: randomId("m"), name: file.name, mimeType, size: file.size, url: `${FILES_PATH}/${id}` });
      delivered.push(file.name);
    }
    const skipped = files.length - delivered.length;
    return `\n[${delivered.length} file(s) delivered to the customer as downloads${delivered.length ? `: ${delivered.join(", ")}` : ""}.${skipped ? ` ${skipped} not delivered (type not allowed).` : ""}]`;
  }
}
