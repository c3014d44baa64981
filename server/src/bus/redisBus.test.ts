// RedisBus's own economy: notices of one tick merged per conversation into one PUBLISH of the highest seq,
// sent together; another node's notice delivered, this node's echo dropped (it was delivered when published).
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { REDIS_SKIP_REASON, TEST_REDIS_URL } from "../../../tests/support/services.ts";
import { RedisBus } from "./redisBus.ts";

const prefix = `caplo-test-merge-${randomUUID().slice(0, 8)}`;
const latestSeqs = async () => new Map<string, number>();
const open: { close: () => unknown }[] = [];
afterAll(async () => {
  for (const item of open) await item.close();
});

if (!TEST_REDIS_URL) describe.skip(`RedisBus publishing: ${REDIS_SKIP_REASON}`, () => it("is not run", () => undefined));

describe.skipIf(!TEST_REDIS_URL)("RedisBus publishing", () => {
  it("notices of one tick are merged per conversation (the highest seq), and a node hears another node's notices once each, never its own echo twice", async () => {
    const url = TEST_REDIS_URL!;
    const a = new RedisBus({ url, prefix, latestSeqs });
    const b = new RedisBus({ url, prefix, latestSeqs });
    open.push(a, b);
    const raw = new Redis(url);
    open.push({ close: () => raw.disconnect() });
    const seen: string[] = [];
    await raw.psubscribe(`${prefix}:conv:*`);
    raw.on("pmessage", (_pattern, channel: string, message: string) => seen.push(`${channel.split(":").at(-1)} ${JSON.parse(message).seq}`));
    const heardA: number[] = [];
    const heardB: number[] = [];
    await a.subscribe("c1", (_id, notice) => heardA.push(notice.seq)).ready;
    await b.subscribe("c1", (_id, notice) => heardB.push(notice.seq)).ready;
    await new Promise((resolve) => setTimeout(resolve, 300)); // both subscribed on Redis
    const results = await Promise.all([a.publish("c1", { seq: 1 }), a.publish("c1", { seq: 3 }), a.publish("c1", { seq: 2 }), a.publish("c2", { seq: 7 })]);
    expect(results.every((result) => result.ok)).toBe(true);
    await expect.poll(() => heardB).toEqual([3]);
    await expect.poll(() => [...seen].sort()).toEqual(["c1 3", "c2 7"]);
    // The publishing node's own listeners hear each newer seq at once, locally, and nothing more from the echo.
    expect(heardA).toEqual([1, 3]);
    // Bad input is still refused with the schema's own words.
    expect(await a.publish("has space", { seq: 1 })).toMatchObject({ ok: false, error: { code: "bus_notice_invalid", path: "conversationId" } });
  });
});
