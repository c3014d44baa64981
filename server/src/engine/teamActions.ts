// What the team does in a conversation and what the agent hands to them: handoff to a queue, take over,
// team messages, hand back, and the lists the team follows up (unresolved writes, undelivered messages).
import type { Outbound } from "@caplo/shared";
import type { ModelMessage } from "../model/model.ts";
import type { ConversationRecord } from "../store/store.ts";
import type { WriteChange, WriteRecord } from "./ledger.ts";
import { customerText, modelNote, writeTitle } from "./outcomeText.ts";
import { changedWrite } from "./writePolicy.ts";
import { fail, randomId, UNDELIVERED_NOTE_PREFIX, type DeliveryRecord, type EngineResult, type UndeliveredMessage } from "./common.ts";
import { EnginePart } from "./core.ts";
import type { AgentRelease } from "./release.ts";

export class TeamActions extends EnginePart {
  private readonly undeliveredSources = new Set<() => Promise<UndeliveredMessage[]>>();
  private readonly deliverySources = new Set<(conversationId: string) => Promise<DeliveryRecord[]>>();

  async handOff(conversation: ConversationRecord, release: AgentRelease, reason: string | undefined): Promise<void> {
    const destination = release.config.channels[conversation.channel]?.handoff;
    if (!destination) return;
    // Not over a member who took the conversation over meanwhile (on another node): the customer has a person already.
    if (!(await this.core.store.setHandoff(conversation.id, { state: "requested", queue: destination.queue, at: this.core.now() }, null))) return;
    await this.core.conversations.emit(conversation.id, {
      type: "handoff",
      id: randomId("m"),
      state: "requested",
      text: destination.message ?? "I've passed this conversation to our team. Someone will reply here.",
    });
    // The team hears of it at the queue's webhook (stored first, sent and retried in the background).
    await this.core.options.handoffNotifier?.notify({ conversation, queue: destination.queue, reason, at: this.core.now() });
  }

  /** A team member takes over any text conversation: the agent stays silent until it is handed back. */
  async takeOver(conversationId: string, member: string): Promise<EngineResult> {
    return this.core.serial(conversationId, async () => {
      const conversation = await this.core.store.getConversation(conversationId);
      if (!conversation) return fail("conversation_not_found", "conversationId", "no such conversation");
      if (conversation.handoff?.state === "taken" && conversation.handoff.member !== member) {
        return fail("conversation_held", "member", "another team member holds this conversation");
      }
      // Compare-and-set: another member taking it over at the same moment on another node keeps it.
      if (!(await this.core.store.setHandoff(conversationId, { state: "taken", member, ...(conversation.handoff?.queue && { queue: conversation.handoff.queue }), at: this.core.now() }, member))) {
        return fail("conversation_held", "member", "another team member holds this conversation");
      }
      await this.core.conversations.record(conversationId, {
        events: [{ type: "handoff", id: randomId("m"), state: "taken", text: "A member of our team has joined the conversation." }],
        transcript: [{ role: "system", content: "A team member took over the conversation." }],
      });
      return { ok: true } as EngineResult;
    });
  }

  async teamMessage(conversationId: string, member: string, text: string): Promise<EngineResult> {
    return this.core.serial(conversationId, async () => {
      const conversation = await this.core.store.getConversation(conversationId);
      if (!conversation) return fail("conversation_not_found", "conversationId", "no such conversation");
      if (conversation.handoff?.state !== "taken" || conversation.handoff.member !== member) {
        return fail("conversation_not_held", "member", "take the conversation over before writing in it");
      }
      await this.core.conversations.record(conversationId, { events: [{ type: "text", id: randomId("m"), from: "team", text }], transcript: [{ role: "system", content: `[team] ${text}` }] });
      return { ok: true } as EngineResult;
    });
  }

  /** Hand the conversation back to the agent. */
  async handBack(conversationId: string, member: string): Promise<EngineResult> {
    return this.core.serial(conversationId, async () => {
      const conversation = await this.core.store.getConversation(conversationId);
      if (!conversation) return fail("conversation_not_found", "conversationId", "no such conversation");
      if (!conversation.handoff) return fail("conversation_not_held", "conversationId", "the agent already holds this conversation");
      if (conversation.handoff.state === "taken" && conversation.handoff.member !== member) {
        return fail("conversation_held", "member", "another team member holds this conversation");
      }
      if (!(await this.core.store.setHandoff(conversationId, null, member))) return fail("conversation_held", "member", "another team member holds this conversation");
      await this.core.conversations.record(conversationId, {
        events: [{ type: "handoff", id: randomId("m"), state: "released", text: "You're back with the assistant." }],
        transcript: [{ role: "system", content: "The team handed the conversation back to you." }],
      });
      return { ok: true } as EngineResult;
    });
  }

  /** Writes still unresolved after the last status check: the team checks their own system and follows up. */
  async followUps(workspaceId?: string): Promise<WriteRecord[]> {
    return this.core.store.listFollowUps(workspaceId);
  }

  /**
   * A team member who checked their own system records a follow-up write's real outcome (applied or not
   * applied) with a note. Only a write still listed for follow-up (unresolved after its last status check) may
   * be resolved, by compare-and-set from the state it was read in, so two members at once resolve it once; the
   * tool never runs. The transition keeps who, when and the note; the customer and the model are told, and the
   * workspace's audit records it, in the same transaction; the conversation may start its next write.
   */
  async resolveFollowUp(writeId: string, member: string, outcome: "applied" | "not_applied", note: string, workspaceId?: string): Promise<EngineResult> {
    const found = await this.core.store.getWrite(writeId);
    // Another workspace's write is answered as one that does not exist.
    const conversation = found && (await this.core.store.getConversation(found.conversationId));
    if (!found || !conversation || (workspaceId !== undefined && conversation.workspaceId !== workspaceId)) return fail("write_not_found", "proposalId", "no such write");
    return this.core.serial(found.conversationId, async () => {
      const write = (await this.core.store.getWrite(writeId))!;
      if (!write.followUp || (write.state !== "unknown" && write.state !== "pending")) {
        return fail("write_not_follow_up", "proposalId", `this write is ${write.state.replace("_", " ")} and not waiting for a follow-up: nothing was changed`);
      }
      const change: WriteChange = {
        state: outcome,
        followUp: false,
        nextCheckAt: null,
        result: outcome === "applied" ? { outcome: "applied", text: "Our team checked and confirmed the change was made." } : { outcome: "not_applied", message: "our team checked and the change was not made" },
        note: `recorded by ${member}: ${note}`,
      };
      const now = this.core.now();
      const after = changedWrite(write, change, now);
      const tool = this.core.toolForWrite(write);
      const title = writeTitle(tool, write);
      const events: Outbound[] = [{ type: "outcome", id: randomId("m"), proposalId: write.id, state: outcome, title, message: customerText(title, after) }];
      const transcript: ModelMessage[] = [{ role: "system", content: `${modelNote(after)} (A team member checked and recorded this outcome; the tool was not run again.)` }];
      // The outcome, what tells it, and its entry in the workspace's audit (who recorded what, their note) land together or not at all.
      const audit = { actor: member, action: "follow_up.resolved", detail: { conversationId: write.conversationId, tool: write.toolRef, state: outcome, note } };
      const changed = await this.core.store.changeWrite(write.id, { states: [write.state] }, change, now, { events, transcript }, audit);
      if (!changed) return fail("write_changed", "proposalId", "the write changed while you were recording its outcome: reload and check it again");
      if (changed.appended) await this.core.conversations.announce(changed.appended);
      return { ok: true } as EngineResult;
    });
  }

  /**
   * A message that could not reach the customer (outside a messaging app's window, refused for good): the
   * conversation's history records it for the team, under an id no channel sends, and the model is told.
   */
  async recordUndelivered(conversationId: string, text: string): Promise<EngineResult> {
    return this.core.serial(conversationId, async () => {
      if (!(await this.core.store.getConversation(conversationId))) return fail("conversation_not_found", "conversationId", "no such conversation");
      await this.core.conversations.record(conversationId, {
        events: [{ type: "text", id: randomId(UNDELIVERED_NOTE_PREFIX.slice(0, -1)), from: "system", text }],
        transcript: [{ role: "system", content: `The customer did not receive a message: ${text}` }],
      });
      return { ok: true } as EngineResult;
    });
  }

  /** Registers where messages that never reached their customer are kept (a channel store), for the team's follow-up list. */
  addUndeliveredSource(source: () => Promise<UndeliveredMessage[]>): () => void {
    this.undeliveredSources.add(source);
    return () => this.undeliveredSources.delete(source);
  }

  /** Registers where a conversation's sends on a messaging channel and their delivery statuses are kept (a channel store). */
  addDeliverySource(source: (conversationId: string) => Promise<DeliveryRecord[]>): () => void {
    this.deliverySources.add(source);
    return () => this.deliverySources.delete(source);
  }

  /** How the conversation's outbound events went out on its messaging channel, by seq and part. */
  async deliveries(conversationId: string): Promise<DeliveryRecord[]> {
    const lists = await Promise.all([...this.deliverySources].map((source) => source(conversationId)));
    return lists.flat().sort((a, b) => a.seq - b.seq || a.part - b.part);
  }

  /** Messages that never reached their customer, newest first. */
  async undelivered(): Promise<UndeliveredMessage[]> {
    const lists = await Promise.all([...this.undeliveredSources].map((source) => source()));
    return lists.flat().sort((a, b) => b.at - a.at);
  }
}
