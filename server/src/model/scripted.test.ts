// The scripted model is deterministic: rules match the latest customer message or system note, and
// each model step after it gets the next reply.
import { describe, expect, it } from "vitest";
import type { ModelMessage, ModelStreamPart } from "./model.ts";
import { ScriptedModel } from "./scripted.ts";

async function collect(model: ScriptedModel, messages: ModelMessage[]): Promise<ModelStreamPart[]> {
  const parts: ModelStreamPart[] = [];
  for await (const part of model.stream({ messages, tools: [] })) parts.push(part);
  return parts;
}

const text = (parts: ModelStreamPart[]) => parts.flatMap((part) => (part.type === "text-delta" ? [part.text] : [])).join("");

describe("ScriptedModel", () => {
  const model = new ScriptedModel(
    [
      { when: /order (SO-\d+)/, replies: [{ text: "Looking.", toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: "Result: {{tool}}" }] },
      { whenNote: "outcome: applied", replies: [{ text: "Done." }] },
    ],
    { fallback: "Sorry?" },
  );

  it("the first step after a matching customer message streams the text in pieces and the tool call with capture groups filled", async () => {
    const parts = await collect(model, [{ role: "system", content: "x" }, { role: "user", content: "my order SO-42" }]);
    expect(text(parts)).toBe("Looking.");
    expect(parts.filter((part) => part.type === "tool-call")).toEqual([{ type: "tool-call", call: { id: "call_2_0", name: "shop__get_order", arguments: '{"orderId":"SO-42"}' } }]);
    expect(parts.at(-1)).toEqual({ type: "finish", reason: "tool-calls" });
  });

  it("the step after a tool result gets the next reply, with {{tool}} filled", async () => {
    const messages: ModelMessage[] = [
      { role: "system", content: "x" },
      { role: "user", content: "my order SO-42" },
      { role: "assistant", content: "Looking.", toolCalls: [{ id: "call_2_0", name: "shop__get_order", arguments: "{}" }] },
      { role: "tool", toolCallId: "call_2_0", name: "shop__get_order", content: "shipped" },
    ];
    const parts = await collect(model, messages);
    expect(text(parts)).toBe("Result: shipped");
    expect(parts.at(-1)).toEqual({ type: "finish", reason: "stop" });
    expect(await collect(model, messages)).toEqual(parts);
  });

  it("system notes trigger whenNote rules; unmatched customer text gets the fallback once", async () => {
    expect(text(await collect(model, [{ role: "system", content: "x" }, { role: "system", content: "[write] outcome: applied." }]))).toBe("Done.");
    expect(text(await collect(model, [{ role: "system", content: "x" }, { role: "user", content: "hm" }]))).toBe("Sorry?");
    expect(text(await collect(model, [{ role: "system", content: "x" }, { role: "user", content: "hm" }, { role: "assistant", content: "Sorry?" }]))).toBe("");
  });

  it("a reply with pauseMs streams its first part, waits, then the rest; the visitor's stop ends the wait", async () => {
    const slow = new ScriptedModel([{ when: "slow", replies: [{ text: "One two three.", pauseMs: 60_000 }] }]);
    const controller = new AbortController();
    const parts: ModelStreamPart[] = [];
    const streaming = (async () => {
      for await (const part of slow.stream({ messages: [{ role: "system", content: "x" }, { role: "user", content: "slow please" }], tools: [], signal: controller.signal })) parts.push(part);
    })();
    while (parts.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(text(parts)).toBe("One ");
    controller.abort();
    await streaming;
    expect(text(parts)).toBe("One ");
    const quick = new ScriptedModel([{ when: "slow", replies: [{ text: "One two three.", pauseMs: 1 }] }]);
    expect(text(await collect(quick, [{ role: "system", content: "x" }, { role: "user", content: "slow please" }]))).toBe("One two three.");
  });
});
