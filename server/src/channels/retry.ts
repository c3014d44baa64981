// Sending with retry: a retryable failure is tried again after a growing, jittered delay; a permanent one
// (or the last attempt) is returned as it is, to be recorded.
import type { SendResult } from "@caplo/adapters/adapter";

export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseMs: 500, maxMs: 30_000 };

/** The delay before attempt `n` (1-based, n ≥ 2): base·2^(n-2), capped, with up to 25% jitter. */
export function backoffDelay(n: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const plain = Math.min(policy.maxMs, policy.baseMs * 2 ** (n - 2));
  return Math.round(plain * (0.75 + random() * 0.25));
}

export async function sendWithRetry(
  send: () => Promise<SendResult>,
  policy: RetryPolicy,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<{ result: SendResult; attempts: number }> {
  let result: SendResult = { ok: false, retryable: false, code: "not_sent", message: "not sent" };
  for (let n = 1; n <= policy.attempts; n++) {
    if (n > 1) await sleep(backoffDelay(n, policy));
    result = await send();
    if (result.ok || !result.retryable) return { result, attempts: n };
  }
  return { result, attempts: policy.attempts };
}
