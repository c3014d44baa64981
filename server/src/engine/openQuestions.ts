// The questions a running read's tool asked the customer (MCP elicitation), waiting in this node's memory
// for the answer; an answer is checked against the tool's requested schema before the tool gets it. A
// question waits at most ELICITATION_WAIT_SECONDS (a wait that does not count against the tool's
// timeoutSeconds: the runner pauses the call's clock); it expires then, or when the call that asked it
// ends, the tool seeing cancel, and a late answer is told the question expired (question_expired).
import { ELICITATION_WAIT_SECONDS, type Inbound, type OutboundOf } from "@caplo/shared";
import type { ElicitRequest, ElicitResponse } from "../runner/api.ts";
import { validateAgainst } from "../runner/schemaValidator.ts";
import type { ConversationRecord } from "../store/store.ts";
import { fail, randomId, type EngineResult } from "./common.ts";
import { EnginePart } from "./core.ts";
import { questionFields } from "./elicitation.ts";
import type { EngineTool } from "./release.ts";

type Question = OutboundOf<"question">;
type Pending = { conversationId: string; question: Question; resolve: (response: ElicitResponse) => void; schema: Record<string, unknown>; timer: NodeJS.Timeout };

/** Expired questions remembered per node, so a late answer is told it came too late (oldest forgotten first). */
const EXPIRED_KEPT = 10_000;

export class OpenQuestions extends EnginePart {
  readonly elicitations = new Map<string, Pending>();
  private readonly expired = new Map<string, string>();

  private get waitMs(): number {
    return this.core.options.elicitTimeoutMs ?? ELICITATION_WAIT_SECONDS * 1000;
  }

  canElicit(conversation: ConversationRecord, tool: EngineTool): boolean {
    const elicitation = tool.policy.effect === "read" ? tool.policy.elicitation : undefined;
    if (!elicitation) return false;
    return elicitation.style === "questions" ? conversation.capabilities.questions : conversation.capabilities.forms;
  }

  /** Asks the customer; `asked` collects the question's id so the call can expire it when it ends. */
  elicit(conversation: ConversationRecord, tool: EngineTool, request: ElicitRequest, asked?: Set<string>): Promise<ElicitResponse> {
    const style = tool.policy.effect === "read" && tool.policy.elicitation?.style === "questions" ? "questions" : "form";
    const elicitationId = randomId("q");
    asked?.add(elicitationId);
    const question: Question = { type: "question", id: randomId("m"), elicitationId, style, message: request.message, fields: questionFields(request.requestedSchema) };
    return new Promise<ElicitResponse>((resolve) => {
      const timer = setTimeout(() => this.expire(elicitationId), this.waitMs);
      timer.unref?.();
      this.elicitations.set(elicitationId, {
        conversationId: conversation.id,
        question,
        schema: request.requestedSchema,
        timer,
        resolve: (response) => {
          clearTimeout(timer);
          resolve(response);
        },
      });
      void this.core.conversations.emit(conversation.id, question);
    });
  }

  async answer(conversationId: string, inbound: Extract<Inbound, { type: "answer" }>): Promise<EngineResult> {
    const pending = this.elicitations.get(inbound.elicitationId);
    if ((!pending || pending.conversationId !== conversationId) && this.expired.get(inbound.elicitationId) === conversationId) {
      return fail("question_expired", "elicitationId", `this question expired: it was not answered within ${Math.round(this.waitMs / 1000)} seconds, or the tool went on without the answer. Nothing was sent to the tool; ask again if it is still needed`);
    }
    // A question waits in the memory of the node whose tool asked it: an answer arriving at another node
    // (the connection moved) is refused clearly; the asking node expires the question after its wait.
    if (!pending || pending.conversationId !== conversationId) return fail("question_not_open", "elicitationId", "no open question with this id on this server (it was answered, or waits on another node); ask again");
    if (inbound.action !== "accept") {
      this.elicitations.delete(inbound.elicitationId);
      pending.resolve({ action: inbound.action });
      return { ok: true };
    }
    const content = inbound.content ?? {};
    const issues = validateAgainst(pending.schema, content);
    if (issues.length > 0) return fail("answer_invalid", `content${issues[0]!.path ? `.${issues[0]!.path}` : ""}`, issues[0]!.message);
    this.elicitations.delete(inbound.elicitationId);
    pending.resolve({ action: "accept", content });
    return { ok: true };
  }

  /** The latest question of the conversation still waiting on this node for the customer's answer, as shown to them. */
  open(conversationId: string): Pick<Question, "elicitationId" | "style" | "message" | "fields"> | undefined {
    let latest: Question | undefined;
    for (const pending of this.elicitations.values()) if (pending.conversationId === conversationId) latest = pending.question;
    return latest && { elicitationId: latest.elicitationId, style: latest.style, message: latest.message, fields: latest.fields };
  }

  /** The wait ended, or the asking call did: the tool (if still waiting) sees cancel; a later answer is told it expired. */
  expire(elicitationId: string): void {
    const pending = this.elicitations.get(elicitationId);
    if (!pending) return;
    this.elicitations.delete(elicitationId);
    this.expired.set(elicitationId, pending.conversationId);
    if (this.expired.size > EXPIRED_KEPT) this.expired.delete(this.expired.keys().next().value!);
    pending.resolve({ action: "cancel" });
  }

  /** Every open question is cancelled (the engine stops): each waiting tool gets cancel. */
  cancelAll(): void {
    for (const id of [...this.elicitations.keys()]) this.expire(id);
  }
}
