// When a read's progress is stored: a read that answers at once costs no transaction of its own (its
// progress start is stored with its end and result, before the next model call); a read still running
// after PROGRESS_SHOWN_AFTER_MS is shown working (its progress start, with the step that called it, is
// stored while it runs, so a crash then leaves what recovery needs).
import { afterEach, describe, expect, it } from "vitest";
import { PROGRESS_SHOWN_AFTER_MS } from "../../server/src/engine/turn.ts";
import type { StoredEvent } from "../../server/src/store/store.ts";
import { engineHarness, type Harness } from "./support/harness.ts";
import { ORDERS, ShopBackend } from "./support/shopTools.ts";

let h: Harness;
afterEach(async () => h?.close());

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
