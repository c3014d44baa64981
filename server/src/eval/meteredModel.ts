// A Model that passes every request to the configured one and counts what it cost: each request is one
// model step; tokens are the input and output tokens the provider reported in its finish part (an
// OpenAI-compatible server with stream_options.include_usage). A provider that reports none (the scripted
// model) leaves `reported` false, so a token limit is never checked against a made-up number.
import type { Model, ModelRequest, ModelStreamPart } from "../model/model.ts";

export class MeteredModel implements Model {
  readonly id: string;
  private readonly inner: Model;
  steps = 0;
  inputTokens = 0;
  outputTokens = 0;
  /** Whether any step reported its usage. */
  reported = false;

  constructor(inner: Model) {
    this.inner = inner;
    this.id = inner.id;
  }

  get tokens(): number {
    return this.inputTokens + this.outputTokens;
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
    this.steps += 1;
    for await (const part of this.inner.stream(request)) {
      if (part.type === "finish" && part.usage) {
        this.reported = true;
        this.inputTokens += part.usage.inputTokens ?? 0;
        this.outputTokens += part.usage.outputTokens ?? 0;
      }
      yield part;
    }
  }
}
