// When a read's progress is stored: a read that answers at once costs no transaction of its own (its
// progress start is stored with its end and result, and its step is held: the model is asked with it from
// the turn's carry and it is stored with the turn's answer, so a read turn is two appends); a read still
// running after PROGRESS_SHOWN_AFTER_MS is shown working (its progress start, with the step that called it,
// is stored while it runs, so a crash then leaves what recovery needs). What happens when the process dies
// while a step is held: tests/gateway/turnCrash.test.ts and tests/faults/turnTakeover.test.ts.
import { afterEach, describe, expect, it } from "vitest";
import { PROGRESS_SHOWN_AFTER_MS } from "../../server/src/engine/turn.ts";
import type { AppendBatch, StoredEvent } from "../../server/src/store/store.ts";
import { engineHarness, type Harness } from "./support/harness.ts";
import { ORDERS, ShopBackend } from "./support/shopTools.ts";

let h: Harness;
afterEach(async () => h?.close());

/** Every append the engine makes from now on, by what it holds (the store's append is one transaction). */
function countAppends(): { events: string[]; transcript: string[]; finish: boolean }[] {
  const seen: { events: string[]; transcript: string[]; finish: boolean }[] = [];
  const append = h.store.append.bind(h.store);
  h.store.append = (conversationId: string, batch: AppendBatch, at: number) => {
    seen.push({ events: (batch.events ?? []).map((event) => event.type), transcript: (batch.transcript ?? []).map((entry) => entry.role), finish: batch.finish !== undefined });
    return append(conversationId, batch, at);
  };
  return seen;
}

const READ = { when: /order (SO-\d{4})/, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: "Found it." }] };

describe("a read's progress", () => {
  it("a read that answers at once: nothing of its step is stored while it runs; its start, end and result are stored together, in order, before the answer", async () => {
    const backend = new ShopBackend();
    // What the store holds at the moment the tool runs (SQLite reads synchronously, at the call).
    let whileRunning: Promise<StoredEvent[]> | undefined;
    const push = backend.invocations.push.bind(backend.invocations);
    backend.invocations.push = (...items) => {
      whileRunning ??= h.store.listEvents(h.conversation.id, 0);
      return push(...items);
    };
    // However slow this machine is, the read counts as answering at once.
    h = await engineHarness({ rules: [READ], backend, progressShownAfterMs: 60_000 });
    await h.say(`where is my order ${ORDERS.applied}`);
    expect((await whileRunning!).map((event) => event.message.type)).toEqual(["text"]);
    const events = await h.store.listEvents(h.conversation.id, 0);
    expect(events.map((event) => event.message.type)).toEqual(["text", "progress", "progress", "result", "text"]);
    expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5]);
    expect((await h.store.listTranscript(h.conversation.id)).map((entry) => entry.message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  it("a read turn is two appends: the customer's message, then the held read step with the answer and the turn's end; the model is asked with the read's result before it is stored", async () => {
    h = await engineHarness({ rules: [{ ...READ, replies: [READ.replies[0]!, { text: "Found: {{tool}}" }] }], progressShownAfterMs: 60_000 });
    const appends = countAppends();
    await h.say(`where is my order ${ORDERS.applied}`);
    expect(appends).toEqual([
      { events: ["text"], transcript: ["user"], finish: false },
      { events: ["progress", "progress", "result", "text"], transcript: ["assistant", "tool", "assistant"], finish: true },
    ]);
    const answer = (await h.ofType("text")).at(-1)!;
    expect(answer).toMatchObject({ from: "agent" });
    expect(answer.text).toContain(ORDERS.applied);
    expect(await h.store.listOwedTurns("node-test", 10)).toEqual([]);
  });

  it("a step whose text the customer saw streaming is stored before the next model call (the next reply would replace it on screen)", async () => {
    h = await engineHarness({ rules: [{ ...READ, replies: [{ text: "Let me look.", toolCalls: READ.replies[0]!.toolCalls }, { text: "Found it." }] }], progressShownAfterMs: 60_000 });
    const appends = countAppends();
    await h.say(`where is my order ${ORDERS.applied}`);
    expect(appends).toEqual([
      { events: ["text"], transcript: ["user"], finish: false },
      { events: ["text", "progress", "progress", "result"], transcript: ["assistant", "tool"], finish: false },
      { events: ["text"], transcript: ["assistant"], finish: true },
    ]);
  });

  it("two read steps in a row: the first is held, the second is not (one step at most waits in the carry)", async () => {
    const call = READ.replies[0]!;
    h = await engineHarness({ rules: [{ ...READ, replies: [call, call, { text: "Found it twice." }] }], progressShownAfterMs: 60_000 });
    const appends = countAppends();
    await h.say(`where is my order ${ORDERS.applied}`);
    expect(appends).toEqual([
      { events: ["text"], transcript: ["user"], finish: false },
      { events: ["progress", "progress", "result", "progress", "progress", "result"], transcript: ["assistant", "tool", "assistant", "tool"], finish: false },
      { events: ["text"], transcript: ["assistant"], finish: true },
    ]);
  });

  it(`a read still running after ${PROGRESS_SHOWN_AFTER_MS} ms: its progress start and the step that called it are stored while it runs`, async () => {
    h = await engineHarness({ rules: [READ] });
    const turn = h.say(`where is my order ${ORDERS.readHangs}`);
    const started = Date.now();
    let events: StoredEvent[] = [];
    while (!events.some((event) => event.message.type === "progress")) {
      expect(Date.now() - started).toBeLessThan(20_000);
      await new Promise((resolve) => setTimeout(resolve, 20));
      events = await h.store.listEvents(h.conversation.id, 0);
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(PROGRESS_SHOWN_AFTER_MS - 20);
    expect(events.map((event) => event.message)).toMatchObject([{ type: "text", from: "customer" }, { type: "progress", state: "start" }]);
    const transcript = (await h.store.listTranscript(h.conversation.id)).map((entry) => entry.message);
    expect(transcript.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(transcript[1]).toMatchObject({ role: "assistant", toolCalls: [{ name: "shop__get_order" }] });
    // The tool never answers: closing the runner ends the call, and the turn ends with its progress.
    await h.runner.close();
    await turn.catch(() => undefined);
    await h.engine.idle();
    expect((await h.ofType("progress")).map((event) => event.state)).toEqual(["start", "end"]);
  });
});
