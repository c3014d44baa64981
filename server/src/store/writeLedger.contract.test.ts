// The write ledger's contract (WriteLedgerPort: writes, their compare-and-set changes with what announces
// them, status checks and expiry), on SQLite and on PostgreSQL: of concurrent changes exactly one lands, a
// conversation holds one unresolved write, a change with its announcement and audit entry is one transaction,
// due checks are claimed once, recovery touches only this node's running writes, the sweeps list what is due.
import { expect, it } from "vitest";
import { WriteBlockedError } from "./store.ts";
import { describeEachStore, newWrite, text, uid, sequence } from "./testing/storeHarness.ts";

describeEachStore("Write ledger contract", ({ kind, store, second, conversation, reopen, sql }) => {
  it("a write transition is a compare-and-set: of two concurrent confirms exactly one wins", async () => {
    const c = await conversation();
    const w = await store.insertWrite(newWrite(c.id));
    const results = await Promise.all(
      [store, second, store, second].map((s, i) =>
        s.transitionWrite(w.id, { states: ["proposed"] }, { state: "confirmed", idempotencyKey: `key-${w.id}-${i}`, finalArgs: { orderId: "SO-1002" } }, 2000),
      ),
    );
    const winners = results.filter((result) => result !== undefined);
    expect(winners).toHaveLength(1);
    const stored = await store.getWrite(w.id);
    expect(stored?.state).toBe("confirmed");
    expect(stored?.idempotencyKey).toBe(winners[0]!.idempotencyKey);
    const history = await store.listTransitions(w.id);
    expect(history.map((t) => `${t.from}->${t.to}`)).toEqual(["proposed->proposed", "proposed->confirmed"]);
  });

  it("a transition from the wrong state changes nothing", async () => {
    const c = await conversation();
    const w = await store.insertWrite(newWrite(c.id));
    await store.transitionWrite(w.id, { states: ["proposed"] }, { state: "declined" }, 2);
    expect(await store.transitionWrite(w.id, { states: ["proposed"] }, { state: "confirmed", idempotencyKey: uid("k") }, 3)).toBeUndefined();
    const stored = await store.getWrite(w.id);
    expect(stored?.state).toBe("declined");
    expect(stored?.idempotencyKey).toBeNull();
  });

  it("an idempotency key cannot be used by two writes", async () => {
    const c = await conversation();
    const a = await store.insertWrite(newWrite(c.id));
    const b = await store.insertWrite(newWrite((await conversation()).id));
    const key = uid("key");
    await store.transitionWrite(a.id, { states: ["proposed"] }, { state: "confirmed", idempotencyKey: key }, 2);
    await expect(store.transitionWrite(b.id, { states: ["proposed"] }, { state: "confirmed", idempotencyKey: key }, 2)).rejects.toThrow();
    expect((await store.getWrite(b.id))?.state).toBe("proposed");
  });

  it("a conversation holds one unresolved write: of two proposals stored at once by two store instances one is kept, the other refused with write_blocked; once it is resolved the next may be stored", async () => {
    const c = await conversation();
    const attempts = await Promise.allSettled([store.insertWrite(newWrite(c.id)), second.insertWrite(newWrite(c.id))]);
    const kept = attempts.flatMap((attempt) => (attempt.status === "fulfilled" ? [attempt.value] : []));
    const refused = attempts.flatMap((attempt) => (attempt.status === "rejected" ? [attempt.reason as unknown] : []));
    expect(kept).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(WriteBlockedError);
    expect(refused[0]).toMatchObject({ code: "write_blocked", conversationId: c.id });
    expect((await store.listWrites(c.id)).map((write) => write.id)).toEqual([kept[0]!.id]);
    // Every unresolved state blocks; a resolved write does not.
    const unresolved = ["confirmed", "running", "pending", "unknown", "step_up_required"] as const;
    let current = kept[0]!;
    for (const state of unresolved) {
      const moved = await store.transitionWrite(current.id, { states: [current.state] }, { state }, 2);
      current = moved!;
      await expect(second.insertWrite(newWrite(c.id))).rejects.toBeInstanceOf(WriteBlockedError);
    }
    await store.transitionWrite(current.id, { states: ["step_up_required"] }, { state: "not_applied" }, 3);
    const next = await second.insertWrite(newWrite(c.id));
    expect(next.state).toBe("proposed");
    // Another conversation was never blocked.
    await expect(store.insertWrite(newWrite((await conversation()).id))).resolves.toMatchObject({ state: "proposed" });
  });

  it("a proposal and its batch are one transaction: stored together with the next seqs, or, refused with write_blocked as a value, neither", async () => {
    const c = await conversation();
    const batch = { events: [text("Please review."), text("card")], transcript: [{ role: "assistant" as const, content: "Please review." }, { role: "tool" as const, toolCallId: "call_1", name: "orders__cancel_order", content: "proposed" }] };
    const first = await store.proposeWrite(newWrite(c.id), batch);
    if (!first.ok) throw new Error("refused");
    expect(first.write).toMatchObject({ conversationId: c.id, state: "proposed" });
    expect(first.appended!.events.map((event) => event.seq)).toEqual([1, 2]);
    expect(first.appended!.transcript.map((entry) => entry.seq)).toEqual([1, 2]);
    expect(first.appended!.conversation).toMatchObject({ id: c.id, lastSeq: 2, lastTranscriptSeq: 2 });
    expect((await store.listTransitions(first.write.id)).map((t) => [t.from, t.to, t.note])).toEqual([["proposed", "proposed", "created"]]);
    const refused = await second.proposeWrite(newWrite(c.id), batch);
    expect(refused).toEqual({ ok: false, code: "write_blocked", conversationId: c.id });
    expect((await store.listEvents(c.id, 0)).map((event) => event.seq)).toEqual([1, 2]);
    expect((await store.listTranscript(c.id)).map((entry) => entry.seq)).toEqual([1, 2]);
    expect(await store.listWrites(c.id)).toHaveLength(1);
  });

  it("a ledger change and what announces it are one transaction: appended only when the compare-and-set lands, with its transition recorded", async () => {
    const c = await conversation();
    const w = await store.insertWrite(newWrite(c.id));
    const announce = { events: [text("Done.")], transcript: [{ role: "system" as const, content: "outcome: applied" }] };
    // Two nodes record the same change at once: one lands (and appends), the other changes and appends nothing.
    const results = await Promise.all([
      store.changeWrite(w.id, { states: ["proposed"] }, { state: "declined", note: "declined by the customer" }, 5, announce),
      second.changeWrite(w.id, { states: ["proposed"] }, { state: "declined", note: "declined by the customer" }, 5, announce),
    ]);
    const landed = results.filter((result) => result !== undefined);
    expect(landed).toHaveLength(1);
    expect(landed[0]!.write).toMatchObject({ id: w.id, state: "declined", updatedAt: 5 });
    expect(landed[0]!.appended!.events.map((event) => event.seq)).toEqual([1]);
    expect(landed[0]!.appended!.conversation.lastTranscriptSeq).toBe(1);
    expect((await store.listEvents(c.id, 0)).map((event) => event.seq)).toEqual([1]);
    expect((await store.listTranscript(c.id)).map((entry) => entry.message)).toEqual([{ role: "system", content: "outcome: applied" }]);
    expect((await store.listTransitions(w.id)).map((t) => [t.from, t.to, t.note])).toEqual([
      ["proposed", "proposed", "created"],
      ["proposed", "declined", "declined by the customer"],
    ]);
    // The check count is part of the condition when given.
    const checked = await store.insertWrite(newWrite((await conversation()).id));
    await store.transitionWrite(checked.id, { states: ["proposed"] }, { state: "unknown", idempotencyKey: uid("k") }, 6);
    expect(await store.changeWrite(checked.id, { states: ["unknown"], checkCount: 1 }, { state: "applied" }, 7, announce)).toBeUndefined();
    expect(await store.listEvents(checked.conversationId, 0)).toEqual([]);
    expect((await store.changeWrite(checked.id, { states: ["unknown"], checkCount: 0 }, { state: "applied", checkCount: 1 }, 7))?.write).toMatchObject({ state: "applied", checkCount: 1 });
  });

  it("a change's audit entry lands with it, in its conversation's workspace: none when the compare-and-set is refused, no change when the entry cannot be stored", async () => {
    await store.ensureWorkspace("acme", 1);
    const c = await conversation({ workspaceId: "acme" });
    const w = await store.insertWrite(newWrite(c.id));
    await store.transitionWrite(w.id, { states: ["proposed"] }, { state: "unknown", followUp: true }, 6);
    const audit = { actor: "ana", action: "follow_up.resolved", detail: { state: "applied", note: "checked" } };
    const announce = { events: [text("Applied.")] };
    const auditOf = async () => (await store.listAudit("acme", { limit: 100_000 })).filter((entry) => entry.target === w.id);
    // The database refuses the audit entry: the change and its announcement are not made either.
    await sql(kind === "sqlite" ? "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events BEGIN SELECT RAISE(ABORT, 'audit refused'); END" : "CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$; CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()");
    try {
      await expect(store.changeWrite(w.id, { states: ["unknown"] }, { state: "applied", followUp: false }, 7, announce, audit)).rejects.toThrow(/audit refused/);
    } finally {
      await sql(kind === "sqlite" ? "DROP TRIGGER refuse_audit" : "DROP TRIGGER refuse_audit ON audit_events; DROP FUNCTION refuse_audit()");
    }
    expect(await store.getWrite(w.id)).toMatchObject({ state: "unknown", followUp: true });
    expect(await store.listEvents(c.id, 0)).toEqual([]);
    expect((await store.listTransitions(w.id)).map((t) => t.to)).toEqual(["proposed", "unknown"]);
    expect(await auditOf()).toEqual([]);
    // Refused by its compare-and-set: no entry.
    expect(await store.changeWrite(w.id, { states: ["pending"] }, { state: "applied", followUp: false }, 7, announce, audit)).toBeUndefined();
    expect(await auditOf()).toEqual([]);
    // Landed: the entry is the conversation's workspace's, at the change's time, naming the write; none in another workspace.
    expect((await second.changeWrite(w.id, { states: ["unknown"] }, { state: "applied", followUp: false }, 8, announce, audit))?.write.state).toBe("applied");
    expect(await auditOf()).toEqual([{ id: expect.any(Number), workspaceId: "acme", at: 8, actor: "ana", action: "follow_up.resolved", target: w.id, detail: { state: "applied", note: "checked" } }]);
    expect((await store.listAudit("default", { limit: 100_000 })).filter((entry) => entry.target === w.id)).toEqual([]);
  });

  it("a write's result, operationRef, check schedule and follow-up flag are kept", async () => {
    const c = await conversation();
    const w = await store.insertWrite(newWrite(c.id));
    await store.transitionWrite(w.id, { states: ["proposed"] }, { state: "running", idempotencyKey: uid("k"), nodeId: "n1" }, 2);
    const pending = await store.transitionWrite(
      w.id,
      { states: ["running"] },
      { state: "pending", operationRef: "op_123", result: { outcome: "pending", message: "processing" }, nextCheckAt: 50, checkCount: 0 },
      3,
    );
    expect(pending).toMatchObject({ state: "pending", operationRef: "op_123", nextCheckAt: 50, checkCount: 0, result: { outcome: "pending" } });
    const exhausted = await store.transitionWrite(w.id, { states: ["pending"], checkCount: 0 }, { state: "unknown", checkCount: 8, followUp: true, nextCheckAt: null }, 4);
    expect(exhausted?.followUp).toBe(true);
    expect((await store.listFollowUps()).map((row) => row.id)).toContain(w.id);
    expect(await store.transitionWrite(w.id, { states: ["unknown"], checkCount: 0 }, { state: "applied" }, 5)).toBeUndefined();
  });

  it("due status checks are claimed once: a second claim before the lease ends gets nothing", async () => {
    const c = await conversation();
    const due = await store.insertWrite(newWrite(c.id));
    const later = await store.insertWrite(newWrite((await conversation()).id));
    const done = await store.insertWrite(newWrite((await conversation()).id));
    const now = 10_000_000_000_000 + sequence();
    await store.transitionWrite(due.id, { states: ["proposed"] }, { state: "unknown", idempotencyKey: uid("k"), nextCheckAt: now - 5 }, 1);
    await store.transitionWrite(later.id, { states: ["proposed"] }, { state: "pending", idempotencyKey: uid("k"), nextCheckAt: now + 60_000 }, 1);
    await store.transitionWrite(done.id, { states: ["proposed"] }, { state: "applied", idempotencyKey: uid("k"), nextCheckAt: now - 5 }, 1);
    const [first, again] = await Promise.all([store.claimDueChecks(now, now + 30_000, 50), second.claimDueChecks(now, now + 30_000, 50)]);
    const claimed = [...first!, ...again!].map((row) => row.id).filter((id) => [due.id, later.id, done.id].includes(id));
    expect(claimed).toEqual([due.id]);
    const afterLease = await store.claimDueChecks(now + 30_001, now + 60_000, 50);
    expect(afterLease.map((row) => row.id)).toContain(due.id);
    expect(await store.nextCheckAt()).not.toBeNull();
  });

  it("startup recovery turns this node's running writes into unknown with a check due, and leaves other nodes' alone", async () => {
    const c = await conversation();
    const mine = await store.insertWrite(newWrite(c.id));
    const theirs = await store.insertWrite(newWrite((await conversation()).id));
    const confirmed = await store.insertWrite(newWrite((await conversation()).id));
    const node = uid("node");
    await store.transitionWrite(mine.id, { states: ["proposed"] }, { state: "running", idempotencyKey: uid("k"), nodeId: node }, 1);
    await store.transitionWrite(theirs.id, { states: ["proposed"] }, { state: "running", idempotencyKey: uid("k"), nodeId: uid("other") }, 1);
    await store.transitionWrite(confirmed.id, { states: ["proposed"] }, { state: "confirmed", idempotencyKey: uid("k"), nodeId: node }, 1);
    await reopen();
    const recovered = await store.recoverRunning(node, 100, 200);
    expect(recovered.map((row) => [row.id, row.state]).sort()).toEqual(
      [
        [mine.id, "unknown"],
        [confirmed.id, "not_applied"],
      ].sort(),
    );
    const stored = await store.getWrite(mine.id);
    expect(stored).toMatchObject({ state: "unknown", nextCheckAt: 200, checkCount: 0, result: { outcome: "unknown" } });
    expect(stored?.idempotencyKey).toBe((await second.getWrite(mine.id))?.idempotencyKey);
    expect((await store.getWrite(theirs.id))?.state).toBe("running");
    expect((await store.listTransitions(mine.id)).at(-1)).toMatchObject({ from: "running", to: "unknown", note: "recovered at startup" });
  });

  it("the sweep lists writes waiting for step-up since at or before the cutoff (by when they began to wait), oldest first, and no other state", async () => {
    const base = 60_000_000;
    const waitingSince = async (at: number, state: "step_up_required" | "proposed" = "step_up_required") => {
      const write = await store.insertWrite(newWrite((await conversation()).id, { createdAt: 1 }));
      if (state === "proposed") return write;
      await store.transitionWrite(write.id, { states: ["proposed"] }, { state: "confirmed" }, at - 10);
      return (await store.transitionWrite(write.id, { states: ["confirmed"] }, { state: "step_up_required", stepUp: { level: "high" } }, at))!;
    };
    const later = await waitingSince(base + 1);
    const earliest = await waitingSince(base);
    const atCutoff = await waitingSince(base + 2);
    const fresh = await waitingSince(base + 3);
    const proposal = await waitingSince(base, "proposed");
    const mine = new Set([later.id, earliest.id, atCutoff.id, fresh.id, proposal.id]);
    const listed = (await second.listExpiredStepUps(base + 2, 1000)).filter((write) => mine.has(write.id)).map((write) => write.id);
    expect(listed).toEqual([earliest.id, later.id, atCutoff.id]);
    expect((await store.listExpiredStepUps(base + 3, 2)).length).toBe(2);
    // Expired by compare-and-set from step_up_required: a second expiry finds nothing to change.
    expect(await store.transitionWrite(earliest.id, { states: ["step_up_required"] }, { state: "expired" }, base + 5)).toMatchObject({ state: "expired" });
    expect(await second.transitionWrite(earliest.id, { states: ["step_up_required"] }, { state: "expired" }, base + 5)).toBeUndefined();
    expect((await store.listExpiredStepUps(base + 2, 1000)).map((write) => write.id)).not.toContain(earliest.id);
  });

  it("the proposal sweep lists open proposals made at or before the cutoff, oldest first, and nothing decided", async () => {
    const base = 50_000_000;
    // One open write per conversation: each proposal in a conversation of its own.
    const propose = async (createdAt: number) => store.insertWrite(newWrite((await conversation()).id, { createdAt }));
    const old = await propose(base + 1);
    const older = await propose(base);
    const atCutoff = await propose(base + 2);
    const fresh = await propose(base + 3);
    const decided = await propose(base);
    await store.transitionWrite(decided.id, { states: ["proposed"] }, { state: "declined" }, base + 1);
    const mine = new Set([old.id, older.id, atCutoff.id, fresh.id, decided.id]);
    const listed = (await second.listExpiredProposals(base + 2, 1000)).filter((write) => mine.has(write.id)).map((write) => write.id);
    expect(listed).toEqual([older.id, old.id, atCutoff.id]);
    expect(listed).not.toContain(fresh.id);
    expect((await store.listExpiredProposals(base + 3, 2)).length).toBe(2);
  });
});
