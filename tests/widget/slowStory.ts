// A model for the widget's streaming tests and walkthrough: the scripted rules, except that a message
// asking for a "story" is answered slowly, word by word, as a real model streams (20 ms a word, 60
// sentences), stopping when the request is aborted (the visitor's Stop).
import type { Model, ModelRequest, ModelStreamPart } from "../../server/src/model/model.ts";
import { ScriptedModel, type ScriptedRule } from "../../server/src/model/scripted.ts";

export const STORY = Array.from({ length: 60 }, (_, i) => `Sentence ${i + 1} of a long story.`).join(" ");

export class SlowStoryModel implements Model {
  readonly id = "scripted:slow-story";
  private readonly scripted: ScriptedModel;
  constructor(rules: ScriptedRule[]) {
    this.scripted = new ScriptedModel(rules, { fallback: "I can help with orders." });
  }
  async *stream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
    const last = request.messages.at(-1);
    if (last?.role === "user" && /story/i.test(last.content)) {
      for (const word of STORY.match(/\S+\s*/g)!) {
        if (request.signal?.aborted) return void (yield { type: "error", code: "model_aborted", message: "the request was cancelled" });
        await new Promise((resolve) => setTimeout(resolve, 20));
        yield { type: "text-delta", text: word };
      }
      return void (yield { type: "finish", reason: "stop" });
    }
    yield* this.scripted.stream(request);
  }
}
