// Retention of the channel state: processed inbox rows (and the engine's accepted source ids, and sent
// outbox records) older than the retention window are deleted, a row exactly at the boundary is kept,
// rows still waiting are never deleted, and a platform redelivery inside the window is still refused.
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_RETENTION } from "../../server/src/channels/channelService.ts";
import { channelBench, type Bench } from "./support.ts";

const rules = [{ when: /hello/i, replies: [{ text: "Hello there." }] }];
const DAY = 24 * 60 * 60 * 1000;

let b: Bench | undefined;
afterEach(async () => {
  await b?.close();
  b = undefined;
});
const texts = (bench: Bench) => bench.received().map((m) => m.text);

describe("retention pruning", () => {
  it("keeps dedup keys for 7 days: a redelivery on day 7 is refused; past 7 days the processed row, its source id and its sent record are pruned", async () => {
    expect(DEFAULT_RETENTION.keepMs).toBe(7 * DAY);
    const clock = { t: Date.parse("2026-12-01T10:00:00Z") };
    b = await channelBench({ platform: "messenger", rules, now: () => clock.t });
    const bench = b;
    bench.h.clock.now = clock.t; // the engine stamps its accepted source ids with its own clock
    const first = bench.body({ text: "hello", id: "retained" });
    expect((await bench.post(first)).status).toBe(200);
    await bench.waitFor(() => texts(bench).includes("Hello there."), "the reply");
    await bench.service.idle();
    await bench.h.engine.idle();
    const received = (await bench.store.listInbound())[0]!.receivedAt;
    // A row still waiting to be processed is never pruned, however old.
    await bench.store.insertInbound({ platform: "messenger", messageId: "m_waiting", event: "{}", receivedAt: received - 30 * DAY });

    // Exactly at the boundary: everything is kept, and a redelivery of the same mid is still refused.
    clock.t = received + 7 * DAY;
    expect(await bench.service.prune()).toEqual({ inbox: 0, outbox: 0, sources: 0 });
    expect((await bench.post(first)).status).toBe(200);
    await bench.service.idle();
    await bench.h.engine.idle();
    expect(texts(bench).filter((t) => t === "Hello there.")).toHaveLength(1);
    expect((await bench.store.listInbound("done")).map((r) => r.messageId)).toEqual(["m_retained"]);

    // One millisecond later the processed row, the engine's source id and the sent records go; the waiting row stays.
    clock.t += 1;
    const pruned = await bench.service.prune();
    expect(pruned.inbox).toBe(1);
    expect(pruned.sources).toBe(1);
    expect(pruned.outbox).toBeGreaterThanOrEqual(2);
    expect((await bench.store.listInbound()).map((r) => [r.messageId, r.state])).toEqual([["m_waiting", "received"]]);
  });

  it("pruning runs by itself once started, and never keeps the process alive", async () => {
    const clock = { t: Date.parse("2026-12-01T10:00:00Z") };
    b = await channelBench({ platform: "instagram", rules, now: () => clock.t });
    const bench = b;
    await bench.store.insertInbound({ platform: "instagram", messageId: "m_old", event: "{}", receivedAt: clock.t - 8 * DAY });
    await bench.store.claimInbound(10);
    await bench.store.finishInbound("instagram", "m_old", "failed", "old failure");
    bench.service.startPruning();
    try {
      await bench.waitFor(async () => (await bench.store.listInbound()).length === 0, "the periodic prune");
    } finally {
      bench.service.stopPruning();
    }
  });
});
