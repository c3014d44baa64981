// A ConversationPort for tests of the glue's own work (webhooks, the inbox): it knows no agent, opens every
// conversation as `conv-1`, accepts every hand-over and holds no proposal or question; a test overrides what it watches.
import type { ConversationPort } from "../ports.ts";

export function quietPort(overrides: Partial<ConversationPort> = {}): ConversationPort {
  return {
    agentConfig: async () => undefined,
    openConversation: async () => ({ conversationId: "conv-1" }),
    receive: async () => ({ ok: true }),
    subscribe: () => () => {},
    recordUndelivered: async () => ({ ok: true }),
    pruneSources: async () => 0,
    proposal: async () => ({ ok: false, code: "proposal_not_found", message: "no such proposal in this conversation" }),
    openProposal: async () => undefined,
    openQuestion: async () => undefined,
    ...overrides,
  };
}
