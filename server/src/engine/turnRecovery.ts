// Turn recovery: a node's lost writes made unknown and told, and the turns it owed claimed (compare-and-set)
// and run again once from where their stored steps end; a turn whose answer was stored is not run again.
import type { WriteRecord } from "./ledger.ts";
import { HANDED_OFF_NOTE, HANDED_OFF_PREFIX, HANDOFF_TOOL, INTERRUPTED_NOTE, progressEvent, PROPOSED_PREFIX, proposedNote, randomId, type Carry } from "./common.ts";
import { EnginePart } from "./core.ts";
import { modelNote } from "./outcomeText.ts";
import { reviewCard } from "./presentation.ts";
import { findTool } from "./release.ts";

/** Owed turns claimed per store call at recovery. */
const OWED_TURN_CLAIM_LIMIT = 100;
/** How many of a conversation's latest events a resumed turn looks through for its step's progress and review card. */
const RESUME_EVENTS_LOOKBACK = 64;

export class TurnRecovery extends EnginePart {
  /**
   * Recovery: a write left running is unknown (told to the customer) and its status checks resume. At
   * start for this node's own writes; in a cluster, a survivor calls it with a lost node's id.
   */
  async recover(nodeId: string = this.core.nodeId): Promise<WriteRecord[]> {
    const now = this.core.now();
    const recovered = await this.core.store.recoverRunning(nodeId, now, now + this.core.checkBase());
    for (const write of recovered) {
      const tool = this.core.toolForWrite(write);
      await this.core.writes.tell(write, tool);
      if (write.state === "unknown" && tool && !tool.hasStatus) await this.core.writes.markFollowUp(write);
    }
    // Then the turns that node owed (after its writes are unknown, so a resumed turn sees where they stand).
    await this.recoverTurns(nodeId);
    return recovered;
  }

  /**
   * Turns owed by `nodeId` (its process was killed, or it was lost, mid-turn) are claimed by this node in
   * the store (compare-and-set: of several survivors each turn goes to one) and run again in the
   * background, each after what is queued for its conversation. Returns how many were claimed.
   */
  async recoverTurns(nodeId: string = this.core.nodeId): Promise<number> {
    let claimed = 0;
    for (;;) {
      const owed = await this.core.store.claimOwedTurns(nodeId, this.core.nodeId, OWED_TURN_CLAIM_LIMIT);
      claimed += owed.length;
      for (const turn of owed) {
        this.core.log("warn", "resuming a turn that was interrupted", { conversationId: turn.conversationId, lostNodeId: nodeId });
        void this.core.serial(turn.conversationId, () => this.resumeTurn(turn.conversationId, turn.seq)).catch((error: unknown) =>
          this.core.log("error", "an interrupted turn could not be resumed", { conversationId: turn.conversationId, error: String(error) }),
        );
      }
      // The same node id at restart: what it claimed stays owed by it, so one pass takes them all.
      if (owed.length < OWED_TURN_CLAIM_LIMIT || nodeId === this.core.nodeId) return claimed;
    }
  }

  /**
   * Run again a turn that was interrupted (its node was killed mid-turn), from where its stored steps end. A
   * tool call of the last stored step without a stored result did not finish: a write it stored is never
   * run again, the model is told where it stands (a proposal not yet shown is shown, and ends the turn as it
   * would have); any other call is recorded as interrupted (its progress ended), and the model continues.
   * A turn that had finished (its last stored step answered, proposed or handed off) is not run again.
   */
  private async resumeTurn(conversationId: string, seq: number): Promise<void> {
    const conversation = await this.core.store.getConversation(conversationId);
    const release = conversation && this.core.releaseOf(conversation);
    if (!conversation || !release) return;
    const entries = await this.core.store.listTranscript(conversationId, seq - 1);
    if (entries[0]?.seq !== seq || entries[0].message.role !== "user") {
      await this.core.store.finishTurn(conversationId, this.core.nodeId, seq);
      return;
    }
    const steps = entries.slice(1);
    const stepAt = steps.findLastIndex((entry) => entry.message.role === "assistant");
    const step = steps[stepAt];
    const calls = step?.message.role === "assistant" ? (step.message.toolCalls ?? []) : [];
    const answered = new Set(steps.slice(stepAt + 1).flatMap((entry) => (entry.message.role === "tool" ? [entry.message.toolCallId] : [])));
    const endedBy = (content: string) => content.startsWith(PROPOSED_PREFIX) || content.startsWith(HANDED_OFF_PREFIX);
    let finished = step !== undefined && calls.length === 0; // the model's answer is stored
    for (const entry of steps.slice(stepAt + 1)) if (entry.message.role === "tool" && endedBy(entry.message.content)) finished = true;
    const carry: Carry = { events: [], transcript: [] };
    const missing = calls.filter((call) => !answered.has(call.id));
    if (!finished && missing.length > 0) {
      const writes = await this.core.store.listWrites(conversationId);
      const recent = await this.core.store.listEvents(conversationId, Math.max(0, conversation.lastSeq - RESUME_EVENTS_LOOKBACK));
      for (const call of missing) {
        const write = writes.find((candidate) => candidate.callId === call.id && candidate.createdAt >= step!.at);
        if (write) {
          const tool = this.core.toolForWrite(write);
          if (write.state === "proposed") {
            finished = true;
            const shown = recent.some((event) => event.message.type === "review" && event.message.proposalId === write.id);
            if (!shown && tool) {
              const card = reviewCard(tool, write.args, conversation.capabilities);
              carry.events.push({ type: "review", id: randomId("m"), proposalId: write.id, tool: tool.ref, title: card.title, fields: card.fields, state: "proposed" });
            }
            carry.transcript.push({ role: "tool", toolCallId: call.id, name: call.name, content: proposedNote(write.toolRef, write.id) });
          } else {
            carry.transcript.push({ role: "tool", toolCallId: call.id, name: call.name, content: modelNote(write) });
          }
          continue;
        }
        if (call.name === HANDOFF_TOOL && conversation.handoff) {
          finished = true;
          carry.transcript.push({ role: "tool", toolCallId: call.id, name: call.name, content: HANDED_OFF_NOTE });
          continue;
        }
        const started = recent.some((event) => event.message.type === "progress" && event.message.callId === call.id && event.message.state === "start");
        const ended = recent.some((event) => event.message.type === "progress" && event.message.callId === call.id && event.message.state === "end");
        const tool = findTool(release, call.name);
        if (started && !ended && tool) carry.events.push(progressEvent(tool, call.id, "end"));
        carry.transcript.push({ role: "tool", toolCallId: call.id, name: call.name, content: INTERRUPTED_NOTE });
      }
    }
    const finish = { nodeId: this.core.nodeId, seq };
    if (finished) {
      await this.core.conversations.flushCarry(conversationId, carry, [], finish);
      return;
    }
    const stored = await this.core.conversations.flushCarry(conversationId, carry);
    const current = stored?.conversation ?? (await this.core.store.getConversation(conversationId))!;
    if (!current.handoff) await this.core.turns.runTurn(current, true, seq);
    else await this.core.store.finishTurn(conversationId, this.core.nodeId, seq);
  }
}
