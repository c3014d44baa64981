// What waits for the customer, as the engine answers it (what the channels ask instead of keeping a copy):
// the open proposal and a proposal's state as the customer is told it, from the write ledger; the open
// question, from the node where the tool waits for it. Another conversation's proposal is a refusal as a value.
import { afterEach, describe, expect, it } from "vitest";
import { shownState } from "../../server/src/engine/customerActions.ts";
import { WRITE_STATES } from "../../server/src/engine/ledger.ts";
import { CANCEL, engineHarness, type Harness } from "./support/harness.ts";
import { ORDERS } from "./support/shopTools.ts";

let h: Harness;
afterEach(async () => h?.close());

describe("the customer's open proposal", () => {
  const rules = [
    { when: /cancel/i, replies: [{ text: "Please review.", toolCalls: [CANCEL(ORDERS.applied)] }] },
    { whenNote: /outcome: applied/, replies: [{ text: "Done." }] },
    { whenNote: /declined/, replies: [{ text: "Left as it is." }] },
  ];

  it("is the proposed write until it is decided; each proposal's state follows the ledger, another conversation's is not found", async () => {
    h = await engineHarness({ rules });
    expect(await h.engine.openProposal(h.conversation.id)).toBeUndefined();
    await h.say("cancel my order");
    const review = await h.lastReview();
    expect(await h.engine.openProposal(h.conversation.id)).toEqual({ proposalId: review.proposalId, state: "proposed" });
    expect(await h.engine.proposal(h.conversation.id, review.proposalId)).toEqual({ ok: true, value: { proposalId: review.proposalId, state: "proposed" } });
    const other = await h.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: h.conversation.capabilities, ownerId: "owner-2" });
    expect(await h.engine.proposal(other.id, review.proposalId)).toEqual({ ok: false, error: { code: "proposal_not_found", path: "proposalId", message: "no such proposal in this conversation" } });
    expect(await h.engine.openProposal(other.id)).toBeUndefined();
    expect(await h.engine.proposal(h.conversation.id, "p_never")).toMatchObject({ ok: false, error: { code: "proposal_not_found" } });

    expect(await h.confirm(review.proposalId)).toEqual({ ok: true });
    expect(await h.engine.proposal(h.conversation.id, review.proposalId)).toEqual({ ok: true, value: { proposalId: review.proposalId, state: "applied" } });
    expect(await h.engine.openProposal(h.conversation.id)).toBeUndefined();
  });

  it("a write's state is shown as the ledger holds it, but confirmed is shown running (as the outcome events say)", () => {
    expect(WRITE_STATES.map((state) => [state, shownState(state)])).toEqual(WRITE_STATES.map((state) => [state, state === "confirmed" ? "running" : state]));
  });

  it("a declined proposal no longer waits and says declined", async () => {
    h = await engineHarness({ rules });
    await h.say("cancel my order");
    const review = await h.lastReview();
    expect(await h.decline(review.proposalId)).toEqual({ ok: true });
    expect(await h.engine.proposal(h.conversation.id, review.proposalId)).toEqual({ ok: true, value: { proposalId: review.proposalId, state: "declined" } });
    expect(await h.engine.openProposal(h.conversation.id)).toBeUndefined();
  });
});

describe("the customer's open question", () => {
  const rules = [{ when: "size", replies: [{ toolCalls: [{ name: "shop__pick_size", args: {} }] }, { text: "{{tool}}" }] }];

  it("is the question the tool waits for, as shown, until it is answered; none in another conversation", async () => {
    h = await engineHarness({ rules });
    expect(h.engine.openQuestion(h.conversation.id)).toBeUndefined();
    const turn = h.say("which size");
    for (let i = 0; i < 200 && !h.engine.openQuestion(h.conversation.id); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const shown = (await h.ofType("question")).at(-1)!;
    const open = h.engine.openQuestion(h.conversation.id);
    expect(open).toEqual({ elicitationId: shown.elicitationId, style: "questions", message: "Which size?", fields: shown.fields });
    const other = await h.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: h.conversation.capabilities, ownerId: "owner-2" });
    expect(h.engine.openQuestion(other.id)).toBeUndefined();
    expect(await h.engine.handle(h.conversation.id, "owner-1", { type: "answer", elicitationId: shown.elicitationId, action: "accept", content: { size: "S" } })).toEqual({ ok: true });
    expect(h.engine.openQuestion(h.conversation.id)).toBeUndefined();
    await turn;
    expect((await h.ofType("text")).at(-1)?.text).toBe("size S");
  });

  it("closes when the question expires unanswered", async () => {
    h = await engineHarness({ rules, elicitTimeoutMs: 150 });
    await h.say("which size");
    expect((await h.ofType("question")).length).toBe(1);
    expect(h.engine.openQuestion(h.conversation.id)).toBeUndefined();
  });
});
