// Sending with retry: retryable failures are retried with growing delays up to the limit; permanent
// failures are not retried.
import { describe, expect, it } from "vitest";
import type { SendResult } from "@caplo/adapters/adapter";
import { backoffDelay, sendWithRetry } from "./retry.ts";

const policy = { attempts: 4, baseMs: 100, maxMs: 250 };
const busy: SendResult = { ok: false, retryable: true, code: "platform_unavailable", status: 503, message: "busy" };
const refused: SendResult = { ok: false, retryable: false, code: "platform_refused", status: 400, message: "bad" };

describe("retry", () => {
  it("delays grow by doubling, capped, with at most 25% jitter below", () => {
    expect([2, 3, 4].map((n) => backoffDelay(n, policy, () => 1))).toEqual([100, 200, 250]);
    expect(backoffDelay(2, policy, () => 0)).toBe(75);
  });
  it("retries a retryable failure until it succeeds", async () => {
    const answers = [busy, busy, { ok: true, platformId: "SM1" } as SendResult];
    const slept: number[] = [];
    const { result, attempts } = await sendWithRetry(async () => answers.shift()!, policy, async (ms) => void slept.push(ms));
    expect(result).toEqual({ ok: true, platformId: "SM1" });
    expect(attempts).toBe(3);
    expect(slept).toHaveLength(2);
    expect(slept[1]!).toBeGreaterThan(slept[0]! - 1);
  });
  it("gives up after the last attempt and returns the failure", async () => {
    const { result, attempts } = await sendWithRetry(async () => busy, policy, async () => {});
    expect(result).toEqual(busy);
    expect(attempts).toBe(4);
  });
  it("does not retry a permanent failure", async () => {
    let calls = 0;
    const { result, attempts } = await sendWithRetry(async () => (calls++, refused), policy, async () => {});
    expect([result, attempts, calls]).toEqual([refused, 1, 1]);
  });
});
