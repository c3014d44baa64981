// A follow-up outcome a team member records and its entry in the workspace's audit are one transaction, on
// both stores: when the database refuses the audit entry the outcome is not recorded either (the write stays
// listed for follow-up, the customer is told nothing), and when it lands the entry is there with who and when.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine } from "../../server/src/engine/engine.ts";
import { releaseFromVersions, StaticReleases } from "../../server/src/engine/release.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import type { Store } from "../../server/src/store/index.ts";
import { eachStore } from "../../server/src/store/testing/storeHarness.ts";
import { ShopBackend, shopRunner, shopVersion } from "../engine/support/shopTools.ts";
import { WEB } from "../engine/support/harness.ts";

describe.each(eachStore("caplo_followup"))("a follow-up outcome and its audit entry ($name)", (harness) => {
  let store: Store;
  let engine: Engine;
  const runner = shopRunner(new ShopBackend()).runner;

  beforeAll(async () => {
    store = await harness.open();
    await store.ensureWorkspace("acme", 1);
    const release = releaseFromVersions({ agent: "shop-agent", workspaceId: "acme", instructions: "Acme shop.", origins: ["https://acme.example"], versions: [shopVersion()] });
    engine = new Engine({ store, runner, model: new ScriptedModel([], { fallback: "Hello." }), releases: new StaticReleases([release]), nodeId: "node-followup" });
    await engine.start({ scheduler: false });
  });
  afterAll(async () => {
    await engine?.stop();
    await runner.close();
    await store?.close();
    await harness.cleanup();
  });

  it("are recorded together or not at all", async () => {
    const conversation = await engine.openConversation({ agent: "acme/shop-agent", channel: "web", capabilities: WEB, ownerId: "visitor" });
    const write = await store.insertWrite({
      id: `w_followup_${harness.name}`, conversationId: conversation.id, turnId: "t", callId: "c", toolRef: "shop/cancel_order", modelName: "shop__cancel_order",
      packageVersionId: shopVersion().id, tool: "cancel_order", args: { orderId: "SO-1" }, state: "proposed", confirmation: "required", ownerId: "visitor", subjectId: null, createdAt: 1,
    });
    await store.transitionWrite(write.id, { states: ["proposed"] }, { state: "unknown", followUp: true }, 2);
    const eventsBefore = await store.listEvents(conversation.id, 0);
    await harness.sql(harness.name === "sqlite" ? "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events BEGIN SELECT RAISE(ABORT, 'audit refused'); END" : "CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$; CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()");
    try {
      await expect(engine.resolveFollowUp(write.id, "ana", "applied", "Checked the shop: cancelled", "acme")).rejects.toThrow(/audit refused/);
    } finally {
      await harness.sql(harness.name === "sqlite" ? "DROP TRIGGER refuse_audit" : "DROP TRIGGER refuse_audit ON audit_events; DROP FUNCTION refuse_audit()");
    }
    expect(await store.getWrite(write.id)).toMatchObject({ state: "unknown", followUp: true });
    expect(await store.listEvents(conversation.id, 0)).toEqual(eventsBefore);
    expect((await engine.followUps("acme")).map((listed) => listed.id)).toEqual([write.id]);
    expect(await engine.audit("acme")).toEqual([]);

    expect(await engine.resolveFollowUp(write.id, "ana", "applied", "Checked the shop: cancelled", "acme")).toEqual({ ok: true });
    const resolvedAt = (await store.listTransitions(write.id)).at(-1)!.at;
    expect(await engine.audit("acme")).toEqual([
      { id: expect.any(Number), workspaceId: "acme", at: resolvedAt, actor: "ana", action: "follow_up.resolved", target: write.id, detail: { conversationId: conversation.id, tool: "shop/cancel_order", state: "applied", note: "Checked the shop: cancelled" } },
    ]);
    expect((await store.listEvents(conversation.id, 0)).at(-1)?.message).toMatchObject({ type: "outcome", proposalId: write.id, state: "applied" });
    expect(await engine.audit("default")).toEqual([]);
  });
});
