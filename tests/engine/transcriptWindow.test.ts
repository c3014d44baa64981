// The transcript window: what the model is sent stays within the budget (the instructions always, the most
// recent whole turns, a tool result never without its call), at the exact boundary, while the stored
// transcript keeps everything. Pure cases first, then through the engine on a real SQLite file.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Engine } from "../../server/src/engine/engine.ts";
import { releaseFromVersions, StaticReleases } from "../../server/src/engine/release.ts";
import {
  CLIP_MARKER,
  messageCost,
  MESSAGE_OVERHEAD_CHARS,
  readTranscriptBudget,
  TRANSCRIPT_BUDGET_DEFAULT_CHARS,
  transcriptWindow,
} from "../../server/src/engine/transcriptWindow.ts";
import type { Model, ModelMessage, ModelRequest } from "../../server/src/model/model.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import { SqliteStore } from "../../server/src/store/sqliteStore.ts";
import { WEB } from "./support/harness.ts";
import { ShopBackend, shopRunner, shopVersion } from "./support/shopTools.ts";

const user = (content: string): ModelMessage => ({ role: "user", content });
const agent = (content: string): ModelMessage => ({ role: "assistant", content });
const cost = (messages: readonly ModelMessage[]) => messages.reduce((sum, message) => sum + messageCost(message), 0);
const isNote = (message: ModelMessage | undefined) => message?.role === "system" && /earlier message\(s\) of this conversation are not shown/.test(message.content);

describe("transcriptWindow", () => {
  it("a transcript of exactly the budget goes whole; one character more and the oldest message is left out, with a note", () => {
    const messages = [user("a".repeat(84)), agent("b".repeat(84)), user("c".repeat(84))];
    const budget = cost(messages);
    expect(budget).toBe(3 * (84 + MESSAGE_OVERHEAD_CHARS));
    expect(transcriptWindow(messages, budget)).toEqual(messages);
    const trimmed = transcriptWindow(messages, budget - 1);
    expect(isNote(trimmed[0])).toBe(true);
    expect(trimmed[0]!.content).toMatch(/^\[1 earlier message/);
    expect(trimmed.slice(1)).toEqual(messages.slice(1));
    expect(cost(trimmed.slice(1))).toBeLessThanOrEqual(budget - 1);
  });

  it("a tool call and its results go together or not at all, and a result never opens the window", () => {
    const call: ModelMessage = {
      role: "assistant",
      content: "",
      toolCalls: [
        { id: "call_1", name: "shop__get_order", arguments: '{"orderId":"SO-1001"}' },
        { id: "call_2", name: "shop__get_order", arguments: '{"orderId":"SO-1002"}' },
      ],
    };
    const results: ModelMessage[] = [
      { role: "tool", toolCallId: "call_1", name: "shop__get_order", content: "x".repeat(300) },
      { role: "tool", toolCallId: "call_2", name: "shop__get_order", content: "y".repeat(300) },
    ];
    const last = [agent("Both orders are on their way."), user("thanks")];
    const messages = [user("where are SO-1001 and SO-1002?"), call, ...results, ...last];
    // Room for the last two messages and the two results, but not for the call as well: the whole unit goes.
    const budget = cost([...results, ...last]) + 10;
    const sent = transcriptWindow(messages, budget);
    expect(isNote(sent[0])).toBe(true);
    expect(sent.slice(1)).toEqual(last);
    // With room for the unit, all of it goes, in order, and no result without its call.
    const roomy = transcriptWindow(messages, cost([call, ...results, ...last]));
    expect(roomy.slice(1)).toEqual([call, ...results, ...last]);
    for (const [index, message] of roomy.entries()) {
      if (message.role !== "tool") continue;
      const opener = roomy.slice(0, index).reverse().find((m) => m.role !== "tool");
      expect(opener?.role === "assistant" && opener.toolCalls?.some((c) => c.id === message.toolCallId)).toBe(true);
    }
  });

  it("a tool result whose call is missing is never sent", () => {
    const orphan: ModelMessage = { role: "tool", toolCallId: "call_gone", name: "shop__get_order", content: "stale" };
    expect(transcriptWindow([orphan, user("hi")], 10_000)).toEqual([user("hi")]);
  });

  it("the newest turn always goes: if it alone is over the budget its longest content is clipped, with a marker", () => {
    const call: ModelMessage = { role: "assistant", content: "", toolCalls: [{ id: "call_1", name: "shop__find_invoice", arguments: "{}" }] };
    const huge: ModelMessage = { role: "tool", toolCallId: "call_1", name: "shop__find_invoice", content: "z".repeat(20_000) };
    const messages = [user("old question"), agent("old answer"), call, huge];
    const budget = 2_000;
    const sent = transcriptWindow(messages, budget);
    expect(isNote(sent[0])).toBe(true);
    const [, sentCall, sentResult] = sent;
    expect(sentCall).toEqual(call);
    expect(sentResult?.role).toBe("tool");
    expect(sentResult!.content.endsWith(CLIP_MARKER)).toBe(true);
    expect(cost(sent.slice(1))).toBeLessThanOrEqual(budget);
    expect(cost(sent.slice(1))).toBeGreaterThan(budget - 50);
    // The input is not changed: the stored message keeps every character.
    expect(huge.content.length).toBe(20_000);
  });

  it("an empty transcript sends nothing, and the default budget is documented as 48,000 characters", () => {
    expect(transcriptWindow([])).toEqual([]);
    expect(TRANSCRIPT_BUDGET_DEFAULT_CHARS).toBe(48_000);
  });

  it("CAPLO_TRANSCRIPT_BUDGET_CHARS: 48,000 by default, whole characters from 2,000 to 2,000,000, anything else refused by name", () => {
    expect(readTranscriptBudget({})).toEqual({ ok: true, chars: 48_000 });
    expect(readTranscriptBudget({ CAPLO_TRANSCRIPT_BUDGET_CHARS: "2000" })).toEqual({ ok: true, chars: 2000 });
    expect(readTranscriptBudget({ CAPLO_TRANSCRIPT_BUDGET_CHARS: "2000000" })).toEqual({ ok: true, chars: 2_000_000 });
    for (const bad of ["1999", "2000001", "12k", "-1"]) {
      expect(readTranscriptBudget({ CAPLO_TRANSCRIPT_BUDGET_CHARS: bad })).toMatchObject({ ok: false, error: { code: "transcript_budget_invalid", path: "CAPLO_TRANSCRIPT_BUDGET_CHARS" } });
    }
  });
});

/** A model that records every request and answers through the scripted model. */
class RecordingModel implements Model {
  readonly id = "recording";
  readonly requests: ModelRequest[] = [];
  private readonly inner: Model;
  constructor(inner: Model) {
    this.inner = inner;
  }
  stream(request: ModelRequest) {
    this.requests.push({ ...request, messages: request.messages.map((message) => ({ ...message })) });
    return this.inner.stream(request);
  }
}

describe("the engine sends the model a bounded transcript", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it("a long conversation: every request has the instructions first and the recent turns within the budget, and the store keeps every message", async () => {
    const dir = mkdtempSync(join(tmpdir(), "caplo-window-"));
    const store = new SqliteStore(join(dir, "caplo.db"));
    await store.migrate();
    const runner = shopRunner(new ShopBackend()).runner;
    const instructions = "You help customers of the shop. ".repeat(40).trim();
    const release = releaseFromVersions({ agent: "shop-agent", instructions, origins: ["https://shop.example"], versions: [shopVersion()] });
    const model = new RecordingModel(new ScriptedModel([{ when: /question/, replies: [{ text: "An answer of some length. ".repeat(20) }] }]));
    const budget = 4_000;
    const engine = new Engine({ store, runner, model, releases: new StaticReleases([release]), transcriptBudgetChars: budget });
    await engine.start({ scheduler: false });
    cleanups.push(async () => {
      await engine.stop();
      await runner.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const conversation = await engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "owner" });
    for (let turn = 1; turn <= 30; turn++) await engine.handle(conversation.id, "owner", { type: "message", text: `question number ${turn}: ${"detail ".repeat(30)}` });

    const stored = (await store.listTranscript(conversation.id)).map((entry) => entry.message);
    expect(stored.length).toBe(60);
    expect(cost(stored)).toBeGreaterThan(budget * 4);
    const last = model.requests.at(-1)!;
    expect(last.messages[0]).toMatchObject({ role: "system" });
    expect(last.messages[0]!.content.startsWith(instructions)).toBe(true);
    expect(isNote(last.messages[1])).toBe(true);
    const window = last.messages.slice(2);
    expect(cost(window)).toBeLessThanOrEqual(budget);
    // The most recent customer message is the last thing the model sees (its reply was stored after the
    // request), and what it sees is the stored tail up to that message.
    const asked = stored.slice(0, -1);
    expect(window.at(-1)).toEqual(asked.at(-1));
    expect(window.at(-1)).toMatchObject({ role: "user", content: expect.stringMatching(/^question number 30:/) });
    expect(window).toEqual(asked.slice(asked.length - window.length));
    // Early requests, under the budget, had everything and no note.
    expect(model.requests[0]!.messages.slice(1)).toEqual(stored.slice(0, 1));
  });
});

describe("the engine's transcript cache", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  /** An engine on a real SQLite file whose model records, with each request, how much transcript was stored when it was asked. */
  async function cachedEngine(dir: string, budget: number, cacheChars?: number) {
    const store = new SqliteStore(join(dir, "caplo.db"));
    await store.migrate();
    const runner = shopRunner(new ShopBackend()).runner;
    const release = releaseFromVersions({ agent: "shop-agent", instructions: "Help.", origins: ["https://shop.example"], versions: [shopVersion()] });
    const scripted = new ScriptedModel([
      { when: /order (SO-\d{4})/, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: "Found it: {{tool}}" }] },
      { when: /question/, replies: [{ text: "An answer of some length. ".repeat(6) }] },
    ]);
    const asked: { request: ModelRequest; storedUpTo: number }[] = [];
    const model: Model = {
      id: "recording-seq",
      async *stream(request) {
        const conversationId = request.messages.length > 0 ? current : "";
        const storedUpTo = (await store.getConversation(conversationId))!.lastTranscriptSeq;
        asked.push({ request: { ...request, messages: request.messages.map((message) => ({ ...message })) }, storedUpTo });
        yield* scripted.stream(request);
      },
    };
    let current = "";
    const engine = new Engine({ store, runner, model, releases: new StaticReleases([release]), transcriptBudgetChars: budget, ...(cacheChars !== undefined && { transcriptCacheChars: cacheChars }) });
    await engine.start({ scheduler: false });
    cleanups.push(async () => {
      await engine.stop();
      await runner.close();
      await store.close();
    });
    const say = async (conversationId: string, text: string) => {
      current = conversationId;
      await engine.handle(conversationId, "owner", { type: "message", text });
    };
    return { store, engine, asked, say };
  }

  it("holds per conversation only what the window can use (at most twice the budget plus one unit), and every request is exactly the window of the whole stored transcript", async () => {
    const dir = mkdtempSync(join(tmpdir(), "caplo-cache-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const budget = 2_000;
    const first = await cachedEngine(dir, budget);
    const conversation = await first.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "owner" });
    for (let turn = 1; turn <= 60; turn++) {
      await first.say(conversation.id, turn % 3 === 0 ? `where is order SO-1001 (${turn})` : `question number ${turn}: ${"detail ".repeat(10)}`);
      const size = first.engine.transcriptCacheSize();
      expect(size.conversations).toBe(1);
      expect(size.chars).toBeLessThanOrEqual(2 * budget + 600); // twice the budget, plus the last step appended
    }
    const stored = (await first.store.listTranscript(conversation.id)).map((entry) => entry.message);
    expect(stored.length).toBe(160); // 40 plain turns of 2 messages, 20 read turns of 4
    expect(cost(stored)).toBeGreaterThan(8 * budget);
    expect(first.engine.transcriptCacheSize().messages).toBeLessThan(stored.length / 3);
    expect(first.asked).toHaveLength(80);
    // A read turn's second request also carries its held step (the call and its result, stored with the
    // answer): each request is the window of the transcript as stored up to then plus what was held.
    const held: number[] = [];
    for (const { request, storedUpTo } of first.asked) {
      const heldCount = request.messages.at(-1)?.role === "tool" ? 2 : 0;
      held.push(heldCount);
      expect(request.messages.slice(1)).toEqual(transcriptWindow(stored.slice(0, storedUpTo + heldCount), budget));
    }
    expect(held.filter((count) => count > 0)).toHaveLength(20);
    expect(isNote(first.asked.at(-1)!.request.messages[1])).toBe(true);

    // Another engine on the same store starts with no copy: it reads the transcript, keeps only the window's part, and sends the same window.
    const second = await cachedEngine(dir, budget);
    await second.say(conversation.id, "question number 61");
    const all = (await second.store.listTranscript(conversation.id)).map((entry) => entry.message);
    const [only] = second.asked;
    expect(only!.request.messages.slice(1)).toEqual(transcriptWindow(all.slice(0, only!.storedUpTo), budget));
    expect(second.engine.transcriptCacheSize().chars).toBeLessThanOrEqual(2 * budget + 600);
  });

  it("all conversations' copies together stay within the cache's size: the least recent are dropped, and read again from the store when needed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "caplo-cache-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const budget = 2_000;
    const cacheChars = 6_000;
    const node = await cachedEngine(dir, budget, cacheChars);
    const conversations = [];
    for (let index = 0; index < 6; index++) conversations.push(await node.engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: WEB, ownerId: "owner" }));
    for (let turn = 1; turn <= 8; turn++) {
      for (const conversation of conversations) {
        await node.say(conversation.id, `question number ${turn}: ${"detail ".repeat(10)}`);
        expect(node.engine.transcriptCacheSize().chars).toBeLessThanOrEqual(cacheChars);
      }
    }
    expect(node.engine.transcriptCacheSize().conversations).toBeLessThan(6);
    // The first conversation's copy was dropped; its next request is still its whole stored transcript's window.
    await node.say(conversations[0]!.id, "question number 9");
    const stored = (await node.store.listTranscript(conversations[0]!.id)).map((entry) => entry.message);
    const last = node.asked.at(-1)!;
    expect(last.request.messages.slice(1)).toEqual(transcriptWindow(stored.slice(0, last.storedUpTo), budget));
  });
});
