// Crash replay at the engine boundary: an inbound event the engine accepted before the process stopped
// (its inbox row never marked done) is processed again after the restart, and the engine's atomic dedup
// on the platform's source id (MessageSid, mid) gives it no second turn, no second write, no second reply.
import { afterEach, describe, expect, it } from "vitest";
import { CANCEL } from "../engine/support/harness.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { ChannelService } from "../../server/src/channels/channelService.ts";
import type { InboxStore } from "../../server/src/channels/ports.ts";
import type { SqliteInboxStore } from "../../server/src/channels/inbox/index.ts";
import { channelBench, type Bench } from "./support.ts";

const rules = [
  { when: /cancel/i, replies: [{ text: "Here is what I will do.", toolCalls: [CANCEL(ORDERS.applied)] }] },
  { when: /hello/i, replies: [{ text: "Hello there." }] },
];

/**
 * The inbox store of a process that stops at the crash point: the hand-off to the engine happened, and the
 * call that marks the row done never returns (the process is gone). `armed` chooses when it may happen.
 */
function crashingStore() {
  const state = { armed: false, crashed: false, release: () => {} };
  const wrap = (store: SqliteInboxStore): InboxStore =>
    new Proxy(store, {
      get(target, prop) {
        if (prop === "finishInbound") {
          return (...args: Parameters<InboxStore["finishInbound"]>) => {
            if (state.armed && !state.crashed && args[2] === "done") {
              state.crashed = true;
              return new Promise<void>((resolve) => (state.release = resolve));
            }
            return target.finishInbound(...args);
          };
        }
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  return { state, wrap };
}

let b: Bench | undefined;
let restarted: ChannelService | undefined;
let release: () => void = () => {};
afterEach(async () => {
  restarted?.close();
  release();
  await b?.close();
  b = undefined;
  restarted = undefined;
});
const texts = (bench: Bench) => bench.received().map((m) => m.text);

/** The process died: its service stops, and a new one on the same store resumes what was left. */
async function restart(bench: Bench): Promise<ChannelService> {
  // The crash point under test is the inbox row: let the dying process finish sending what the engine said.
  await bench.h.engine.idle();
  await bench.waitFor(async () => {
    const [binding] = await bench.store.listBindings();
    const conversation = binding && (await bench.h.store.getConversation(binding.conversationId));
    return !!conversation && binding!.cursor >= conversation.lastSeq;
  }, "the outbound cursor");
  bench.service.close();
  restarted = new ChannelService({ store: bench.store, port: bench.port, adapters: [bench.adapter], retry: { attempts: 2, baseMs: 1, maxMs: 2 } });
  await restarted.resume(await bench.store.listBindings());
  await restarted.idle();
  await bench.h.engine.idle();
  await restarted.idle();
  return restarted;
}

describe("crash replay", () => {
  it("WhatsApp: a message the engine accepted before the crash is replayed after the restart with no second turn and no second reply", async () => {
    const crash = crashingStore();
    crash.state.armed = true;
    b = await channelBench({ platform: "whatsapp", rules, storeFor: crash.wrap });
    const bench = b;
    release = () => crash.state.release();
    await bench.say("hello");
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the reply before the crash");
    await bench.h.engine.idle();
    expect(crash.state.crashed).toBe(true);
    const [left] = await bench.store.listInbound("processing");
    expect(left).toMatchObject({ platform: "whatsapp", handed: expect.stringContaining('"type":"message"') });

    await restart(bench);
    expect(await bench.store.listInbound("processing")).toEqual([]);
    expect((await bench.store.listInbound("done")).map((r) => r.messageId)).toEqual([left!.messageId]);
    const conversationId = (await bench.store.listBindings())[0]!.conversationId;
    const events = await bench.h.events(conversationId);
    expect(events.filter((e) => e.type === "text" && e.from === "customer").map((e) => (e.type === "text" ? e.text : ""))).toEqual(["hello"]);
    expect(events.filter((e) => e.type === "text" && e.from === "agent")).toHaveLength(1);
    expect(texts(bench).filter((t) => t === "Hello there.")).toHaveLength(1);
  });

  it("Messenger: a Confirm tap the engine accepted before the crash runs the write once after the restart, and the customer gets no stale-button reply", async () => {
    const crash = crashingStore();
    b = await channelBench({ platform: "messenger", rules, storeFor: crash.wrap });
    const bench = b;
    release = () => crash.state.release();
    await bench.say("cancel my order");
    await bench.waitFor(() => bench.received().some((m) => m.taps.some((t) => t.title === "Confirm")), "the review");
    await bench.service.idle();
    crash.state.armed = true;
    await bench.tap("Confirm");
    await bench.waitFor(() => crash.state.crashed, "the crash point");
    await bench.h.engine.idle();
    expect(bench.h.backend.invocations.filter((i) => i.tool === "cancel_order")).toHaveLength(1);
    const receivedBefore = texts(bench).length;

    await restart(bench);
    expect(bench.h.backend.invocations.filter((i) => i.tool === "cancel_order")).toHaveLength(1);
    expect(await bench.store.listInbound("processing")).toEqual([]);
    expect(texts(bench).slice(receivedBefore).filter((t) => t.includes("Nothing was changed"))).toEqual([]);
    expect(texts(bench).filter((t) => t.includes("Nothing was changed"))).toEqual([]);
  });

  it("the engine accepts one source id once: two copies at the same moment and a later replay give one turn, another id its own", async () => {
    b = await channelBench({ platform: "instagram", rules });
    const bench = b;
    const opened = await bench.port.openConversation("instagram", bench.customer);
    if (!("conversationId" in opened)) throw new Error(opened.unanswered);
    const { conversationId } = opened;
    const actor = { channel: "instagram" as const, externalId: bench.customer, sourceId: "instagram:m_same" };
    await Promise.all([
      bench.port.receive(conversationId, { type: "message", text: "hello" }, actor),
      bench.port.receive(conversationId, { type: "message", text: "hello" }, actor),
    ]);
    await bench.port.receive(conversationId, { type: "message", text: "hello" }, actor);
    await bench.h.engine.idle();
    const customer = async () => (await bench.h.events(conversationId)).filter((e) => e.type === "text" && e.from === "customer");
    expect(await customer()).toHaveLength(1);
    await bench.port.receive(conversationId, { type: "message", text: "hello" }, { ...actor, sourceId: "instagram:m_other" });
    await bench.h.engine.idle();
    expect(await customer()).toHaveLength(2);
    expect((await bench.h.events(conversationId)).filter((e) => e.type === "text" && e.from === "agent")).toHaveLength(2);
  });
});
