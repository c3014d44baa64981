// The questions a running read's tool asked the customer (MCP elicitation), waiting in this node's memory
// for the answer; an answer is checked against the tool's requested schema before the tool gets it.
import type { Inbound } from "@caplo/shared";
import type { ElicitRequest, ElicitResponse } from "../runner/api.ts";
import { validateAgainst } from "../runner/schemaValidator.ts";
import type { ConversationRecord } from "../store/store.ts";
import { fail, randomId, type EngineResult } from "./common.ts";
import { EnginePart } from "./core.ts";
import { questionFields } from "./elicitation.ts";
import type { EngineTool } from "./release.ts";

type Pending = { conversationId: string; resolve: (response: ElicitResponse) => void; schema: Record<string, unknown> };

export class OpenQuestions extends EnginePart {
  readonly elicitations = new Map<string, Pending>();

  canElicit(conversation: ConversationRecord, tool: EngineTool): boolean {
    const elicitation = tool.policy.effect === "read" ? tool.policy.elicitation : undefined;
    if (!elicitation) return false;
    return elicitation.style === "questions" ? conversation.capabilities.questions : conversation.capabilities.forms;
  }

  elicit(conversation: ConversationRecord, tool: EngineTool, request: ElicitRequest): Promise<ElicitResponse> {
    const style = tool.policy.effect === "read" && tool.policy.elicitation?.style === "questions" ? "questions" : "form";
    const elicitationId = randomId("q");
    return new Promise<ElicitResponse>((resolve) => {
      const timer = setTimeout(() => {
        if (this.elicitations.delete(elicitationId)) resolve({ action: "cancel" });
      }, this.core.options.elicitTimeoutMs ?? 120_000);
      timer.unref?.();
      this.elicitations.set(elicitationId, {
        conversationId: conversation.id,
        schema: request.requestedSchema,
        resolve: (response) => {
          clearTimeout(timer);
          resolve(response);
        },
      });
      void this.core.conversations.emit(conversation.id, { type: "question", id: randomId("m"), elicitationId, style, message: request.message, fields: questionFields(request.requestedSchema) });
    });
  }

  async answer(conversationId: string, inbound: Extract<Inbound, { type: "answer" }>): Promise<EngineResult> {
    const pending = this.elicitations.get(inbound.elicitationId);
    // A question waits in the memory of the node whose tool asked it: an answer arriving at another node
    // (the connection moved) is refused clearly; the asking node cancels the question when it times out.
    if (!pending || pending.conversationId !== conversationId) return fail("question_not_open", "elicitationId", "no open question with this id on this server (it was answered, timed out, or waits on another node); ask again");
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

  /** Every open question is cancelled (the engine stops): each waiting tool gets cancel. */
  cancelAll(): void {
    for (const pending of this.elicitations.values()) pending.resolve({ action: "cancel" });
    this.elicitations.clear();
  }
}
