// The window index gives exactly transcriptWindow's answer, whatever the transcript: after every append,
// for tool-calling steps and their results, results that answer no call, messages over the budget, a note
// for messages no longer held, and a new array (a cut copy) instead of an appended one.
import { describe, expect, it } from "vitest";
import type { ModelMessage } from "../model/model.ts";
import { TranscriptWindowIndex, transcriptWindow } from "./transcriptWindow.ts";

/** A small deterministic generator (mulberry32), so a failure names its seed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every other seed's transcript has tool results that answer no call. */
function transcript(seed: number, length: number): ModelMessage[] {
  const next = random(seed);
  const text = () => "x".repeat(Math.floor(next() < 0.05 ? 400 + next() * 800 : next() * 120));
  const messages: ModelMessage[] = [];
  let open: string[] = [];
  for (let n = 0; messages.length < length; n++) {
    const roll = next();
    if (roll < 0.3 && open.length > 0) {
      messages.push({ role: "tool", toolCallId: open.shift()!, name: "shop__get_order", content: text() });
    } else if (roll < 0.34 && seed % 2 === 0) {
      messages.push({ role: "tool", toolCallId: `orphan_${n}`, name: "shop__get_order", content: text() }); // answers no call
    } else if (roll < 0.6) {
      const calls = Array.from({ length: Math.floor(next() * 3) }, (_, k) => ({ id: `call_${n}_${k}`, name: "shop__get_order", arguments: '{"orderId":"SO-1001"}' }));
      open = calls.map((call) => call.id);
      messages.push({ role: "assistant", content: text(), ...(calls.length > 0 && { toolCalls: calls }) });
    } else if (roll < 0.65) {
      open = [];
      messages.push({ role: "system", content: text() });
    } else {
      open = [];
      messages.push({ role: "user", content: text() });
    }
  }
  return messages;
}

/**
 * For `seeds` random transcripts of 160 messages and three budgets (every third seed with earlier messages
 * not held): a fresh index, and `check` called after each message is appended to the held copy.
 */
function everyAppend(seeds: number, check: (index: TranscriptWindowIndex, held: ModelMessage[], next: ModelMessage[], budget: number, earlier: number, label: string) => void): void {
  for (let seed = 1; seed <= seeds; seed++) {
    const all = transcript(seed, 160);
    for (const budget of [300, 2_000, 48_000]) {
      const earlier = seed % 3 === 0 ? 7 : 0;
      const index = new TranscriptWindowIndex();
      const held: ModelMessage[] = [];
      for (let at = 0; at < all.length; at++) {
        held.push(all[at]!);
        check(index, held, all.slice(at + 1), budget, earlier, `seed ${seed}, budget ${budget}, ${held.length} messages`);
      }
    }
  }
}

describe("the transcript window index", () => {
  it("answers exactly as transcriptWindow after every append, for several budgets, with and without earlier messages", () => {
    everyAppend(12, (index, held, _next, budget, earlier, label) => {
      expect(index.window(held, budget, earlier), label).toEqual(transcriptWindow(held, budget, earlier));
    });
  });

  it("a new array (the cache cut its copy) is indexed afresh", () => {
    const all = transcript(7, 200);
    const index = new TranscriptWindowIndex();
    expect(index.window(all, 2_000)).toEqual(transcriptWindow(all, 2_000));
    const cut = all.slice(120);
    expect(index.window(cut, 2_000, 120)).toEqual(transcriptWindow(cut, 2_000, 120));
    expect(index.window(all.slice(0, 50), 2_000)).toEqual(transcriptWindow(all.slice(0, 50), 2_000));
  });
});

describe("the window with messages not stored yet (a step held for the turn's end)", () => {
  it("answers as transcriptWindow of the held copy and the pending messages, and forgets the pending ones afterwards", () => {
    everyAppend(6, (index, held, next, budget, earlier, label) => {
      for (const count of [1, 3]) {
        const pending = next.slice(0, count);
        expect(index.window(held, budget, earlier, pending), `${label} + ${pending.length} pending`).toEqual(transcriptWindow([...held, ...pending], budget, earlier));
      }
      expect(index.window(held, budget, earlier), label).toEqual(transcriptWindow(held, budget, earlier));
    });
  });
});
