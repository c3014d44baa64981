// The Model interface: given messages and tool definitions, stream text and tool calls. The engine
// depends on this spec only; each provider (OpenAI-compatible, scripted) implements it in its own file.
// Model output never grants permission: the write policy lives in the engine.

export type ModelToolCall = {
  id: string;
  /** The tool's model name, `<package>__<tool>`. */
  name: string;
  /** The arguments as the model wrote them: JSON text, parsed and validated by the engine. */
  arguments: string;
};

export type ModelMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: ModelToolCall[] }
  | { role: "tool"; toolCallId: string; name: string; content: string };

export type ModelTool = {
  name: string;
  description: string;
  /** JSON Schema of the arguments (type: object). */
  parameters: Record<string, unknown>;
};

export type ModelStreamPart =
  | { type: "text-delta"; text: string }
  | { type: "tool-call"; call: ModelToolCall }
  | { type: "finish"; reason: "stop" | "tool-calls" | "length" | "content-filter" | "other"; usage?: { inputTokens?: number; outputTokens?: number } }
  | { type: "error"; code: string; message: string };

export type ModelRequest = {
  messages: ModelMessage[];
  tools: ModelTool[];
  signal?: AbortSignal;
};

export interface Model {
  /** For logs and the conversation record, for example `openai:gpt-4.1-mini` or `scripted:demo`. */
  readonly id: string;
  stream(request: ModelRequest): AsyncIterable<ModelStreamPart>;
}
