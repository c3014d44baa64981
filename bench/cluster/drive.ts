// The customer's side of the benchmarks: a read turn and a confirmed write, each timed, over BenchClient.
import { agentText, type BenchClient, outcome, review } from "./client.ts";

export type TurnResult = { ok: true; ms: number } | { ok: false; ms: number; why: string };

/** "where is order SO-n": lookup tool, result, agent's sentence. */
export async function readTurn(client: BenchClient, n: number, timeoutMs = 60_000): Promise<TurnResult> {
  const started = performance.now();
  const frame = await client.say(`where is order SO-${String(1000 + (n % 9000)).padStart(4, "0")}`, `r${n}`, agentText, timeoutMs);
  const ms = performance.now() - started;
  return frame.t === "event" ? { ok: true, ms } : { ok: false, ms, why: `read turn: ${frame.t}` };
}

/** A turn the model answers without a tool: the customer's message and the agent's reply, as the reference server does. */
export async function chatTurn(client: BenchClient, n: number, timeoutMs = 60_000): Promise<TurnResult> {
  const started = performance.now();
  const frame = await client.say(`hi ${n}`, `h${n}`, agentText, timeoutMs);
  const ms = performance.now() - started;
  return frame.t === "event" ? { ok: true, ms } : { ok: false, ms, why: `chat turn: ${frame.t}` };
}

/**
 * A confirmed write end to end: the customer asks, the agent proposes (review card), the customer
 * confirms, the tool runs with the write's idempotency key, the outcome event arrives, then the agent's
 * sentence (so the conversation is idle again). `state` is the outcome's state (applied when all went well).
 */
export async function writeTurn(client: BenchClient, n: number, timeoutMs = 60_000): Promise<TurnResult & { state?: string }> {
  const started = performance.now();
  const card = await client.say(`note SO-${String(1000 + (n % 9000)).padStart(4, "0")} w${n}`, `w${n}`, review, timeoutMs);
  if (card.t !== "event" || !card.message?.proposalId) return { ok: false, ms: performance.now() - started, why: `no review card: ${card.t}` };
  // Both waiters before the confirm: the outcome and the sentence can arrive in one read of the socket.
  const done = client.next(outcome, timeoutMs);
  const sentence = client.next(agentText, timeoutMs);
  client.send({ t: "in", ref: `c${n}`, event: { type: "confirm", proposalId: card.message.proposalId } });
  const result = await done;
  const ms = performance.now() - started;
  if (result.t !== "event") return { ok: false, ms, why: `no outcome: ${result.t}` };
  const state = result.message?.state;
  if (state === "applied") await sentence;
  return state === "applied" ? { ok: true, ms, state } : { ok: false, ms, state, why: `outcome ${state}` };
}
