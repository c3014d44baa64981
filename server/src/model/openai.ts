// The OpenAI-compatible model provider: Chat Completions with `stream: true` over server-sent events,
// for OpenAI and for servers that speak the same API (Ollama, vLLM, llama.cpp). It streams text as it
// comes, assembles tool call deltas by index, maps finish reasons and usage, and turns every failure
// into `{ type: "error", code, message }`. It retries only before any output reached the caller, and
// never lets the API key into a message.
import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { Model, ModelMessage, ModelRequest, ModelStreamPart, ModelTool, ModelToolCall } from "./model.ts";

export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

export type OpenAIOptions = {
  /** The model name, for example gpt-4.1-mini or llama3.1:8b. */
  model: string;
  /** Sent as `Authorization: Bearer`; local servers usually need none. */
  apiKey?: string;
  /** Up to and including the version path, for example http://127.0.0.1:11434/v1. */
  baseUrl?: string;
  /** Attempts after the first, only while nothing has been streamed to the caller. Default 2. */
  maxRetries?: number;
  /** The first retry waits this long, each next one twice as long (or what Retry-After says). Default 500. */
  retryDelayMs?: number;
  /** Longest wait for the response headers and between two chunks of the stream. Default 60 s. */
  idleTimeoutMs?: number;
  /** Ask for token usage in the last chunk (`stream_options.include_usage`). Default true. */
  includeUsage?: boolean;
};

/** Retry-After longer than this is not waited for: the error goes to the caller instead. */
const RETRY_AFTER_MAX_MS = 30_000;
/** A tool call's arguments longer than this are refused (a runaway model, or a broken server). */
const TOOL_ARGUMENTS_MAX = 1_000_000;
/** How much of an error response body is read for its message. */
const ERROR_BODY_MAX = 64 * 1024;
const ERROR_MESSAGE_MAX = 500;

/** Create the provider. The options are not kept anywhere but in this closure. */
export function createOpenAIModel(options: OpenAIOptions): Model {
  const settings = {
    model: options.model,
    apiKey: options.apiKey,
    url: `${(options.baseUrl ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, "")}/chat/completions`,
    maxRetries: options.maxRetries ?? 2,
    retryDelayMs: options.retryDelayMs ?? 500,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    includeUsage: options.includeUsage ?? true,
  };
  return {
    id: `openai:${options.model}`,
    stream: (request) => streamWithRetries(settings, request),
  };
}

type Settings = {
  model: string;
  apiKey: string | undefined;
  url: string;
  maxRetries: number;
  retryDelayMs: number;
  idleTimeoutMs: number;
  includeUsage: boolean;
};

/** An attempt's failure: retryable ones are retried only when the attempt yielded nothing. */
type Failure = { type: "failure"; code: string; message: string; retryable: boolean; retryAfterMs?: number };

async function* streamWithRetries(settings: Settings, request: ModelRequest): AsyncGenerator<ModelStreamPart> {
  const body = JSON.stringify(requestBody(settings, request));
  for (let attempt = 0; ; attempt++) {
    let emitted = false;
    let failure: Failure | undefined;
    for await (const item of attemptStream(settings, body, request.signal)) {
      if (item.type === "failure") {
        failure = item;
        break;
      }
      emitted = true;
      yield item;
    }
    if (!failure) return;
    const delay = failure.retryAfterMs ?? settings.retryDelayMs * 2 ** attempt;
    const retry = !emitted && failure.retryable && attempt < settings.maxRetries && delay <= RETRY_AFTER_MAX_MS && !request.signal?.aborted;
    if (retry && (await sleep(delay, request.signal))) continue;
    yield { type: "error", code: request.signal?.aborted ? "model_aborted" : failure.code, message: redact(failure.message, settings.apiKey) };
    return;
  }
}

/** The Chat Completions request body. */
export function requestBody(settings: Pick<Settings, "model" | "includeUsage">, request: Pick<ModelRequest, "messages" | "tools">): Record<string, unknown> {
  return {
    model: settings.model,
    messages: request.messages.map(toWireMessage),
    // Some compatible servers refuse an empty tools array, so it is left out when there are none.
    ...(request.tools.length > 0 && { tools: request.tools.map(toWireTool), tool_choice: "auto" }),
    stream: true,
    ...(settings.includeUsage && { stream_options: { include_usage: true } }),
  };
}

function toWireMessage(message: ModelMessage): Record<string, unknown> {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content };
    case "assistant": {
      const calls = message.toolCalls ?? [];
      if (calls.length === 0) return { role: "assistant", content: message.content };
      return {
        role: "assistant",
        content: message.content === "" ? null : message.content,
        tool_calls: calls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } })),
      };
    }
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
  }
}

function toWireTool(tool: ModelTool): Record<string, unknown> {
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

const toolCallDeltaSchema = z.object({
  index: z.int().min(0).max(1000),
  id: z.string().nullish(),
  type: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});
const chunkSchema = z.object({
  choices: z
    .array(
      z.object({
        index: z.int().optional(),
        delta: z.object({ content: z.string().nullish(), tool_calls: z.array(toolCallDeltaSchema).nullish() }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: z.object({ prompt_tokens: z.number().nullish(), completion_tokens: z.number().nullish() }).nullish(),
  error: z.object({ message: z.string().nullish(), code: z.union([z.string(), z.number()]).nullish(), type: z.string().nullish() }).nullish(),
});

type FinishReason = Extract<ModelStreamPart, { type: "finish" }>["reason"];
type Usage = NonNullable<Extract<ModelStreamPart, { type: "finish" }>["usage"]>;

/** One HTTP attempt: yields stream parts, or ends with one failure item. */
async function* attemptStream(settings: Settings, body: string, signal: AbortSignal | undefined): AsyncGenerator<ModelStreamPart | Failure> {
  const controller = new AbortController();
  const combined = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const armIdleTimer = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, settings.idleTimeoutMs);
  };
  const interrupted = (error: unknown): Failure => {
    if (signal?.aborted) return failure("model_aborted", "the request was cancelled", false);
    if (timedOut) return failure("model_timeout", `no data from the model server for ${settings.idleTimeoutMs} ms`, true);
    return failure("model_unreachable", `cannot reach the model server at ${describeUrl(settings.url)}: ${describeError(error)}`, true);
  };

  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
  if (settings.apiKey) headers.authorization = `Bearer ${settings.apiKey}`;
  let response: Response;
  armIdleTimer();
  try {
    response = await fetch(settings.url, { method: "POST", headers, body, signal: combined });
  } catch (error) {
    clearTimeout(timer);
    yield interrupted(error);
    return;
  }

  const reader = response.body?.getReader();
  try {
    if (!response.ok) {
      yield await httpFailure(response, reader);
      return;
    }
    const type = response.headers.get("content-type") ?? "";
    if (!type.includes("text/event-stream") || !reader) {
      yield failure("model_response_invalid", `the model server answered ${type || "without a content type"} instead of an event stream`, false);
      return;
    }

    const decoder = new TextDecoder();
    const sse = createSseDecoder();
    const calls = new Map<number, { id: string; name: string; arguments: string }>();
    let finishReason: string | undefined;
    let usage: Usage | undefined;
    let done = false;

    const handle = function* (data: string): Generator<ModelStreamPart | Failure> {
      if (data === "[DONE]") {
        done = true;
        return;
      }
      let json: unknown;
      try {
        json = JSON.parse(data);
      } catch {
        yield failure("model_response_invalid", "the model server sent an event that is not JSON", false);
        return;
      }
      const parsed = chunkSchema.safeParse(json);
      if (!parsed.success) {
        yield failure("model_response_invalid", `the model server sent an unexpected chunk: ${parsed.error.issues[0]?.message ?? ""}`, false);
        return;
      }
      const chunk = parsed.data;
      if (chunk.error) {
        yield failure("model_stream_error", `the model server reported an error: ${chunk.error.message ?? chunk.error.type ?? "unknown"}`, true);
        return;
      }
      if (chunk.usage) {
        usage = {
          ...(chunk.usage.prompt_tokens != null && { inputTokens: chunk.usage.prompt_tokens }),
          ...(chunk.usage.completion_tokens != null && { outputTokens: chunk.usage.completion_tokens }),
        };
      }
      // One choice is asked for (n defaults to 1); anything for another index is ignored.
      const choice = chunk.choices?.find((item) => (item.index ?? 0) === 0);
      if (!choice) return;
      const content = choice.delta?.content;
      if (content) yield { type: "text-delta", text: content };
      for (const delta of choice.delta?.tool_calls ?? []) {
        const call = calls.get(delta.index) ?? { id: "", name: "", arguments: "" };
        calls.set(delta.index, call);
        if (delta.id && !call.id) call.id = delta.id;
        // OpenAI sends the name once; a server that repeats it whole in later deltas is not doubled.
        const name = delta.function?.name;
        if (name && name !== call.name) call.name += name;
        call.arguments += delta.function?.arguments ?? "";
        if (call.arguments.length > TOOL_ARGUMENTS_MAX) {
          yield failure("model_response_invalid", `a tool call's arguments are over ${TOOL_ARGUMENTS_MAX} characters`, false);
          return;
        }
      }
      if (choice.finish_reason) finishReason = choice.finish_reason;
    };

    armIdleTimer();
    for (;;) {
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch (error) {
        yield interrupted(error);
        return;
      }
      armIdleTimer();
      const events = read.done ? sse.end(decoder.decode()) : sse.push(decoder.decode(read.value, { stream: true }));
      for (const data of events) {
        for (const part of handle(data)) {
          yield part;
          if (part.type === "failure") return;
        }
        if (done) break;
      }
      if (done || read.done) break;
    }

    if (!done && finishReason === undefined) {
      yield failure("model_stream_truncated", "the model server closed the stream before it finished", true);
      return;
    }
    const ordered = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
    for (const call of ordered) {
      if (!call.name) {
        yield failure("model_tool_call_invalid", "the model server sent a tool call without a name", false);
        return;
      }
      const toolCall: ModelToolCall = {
        // The id only pairs a call with its result; a server that leaves it out gets a unique one.
        id: call.id || `call_${randomUUID()}`,
        name: call.name,
        // A call of a tool without parameters may come with no argument text at all: that is {}.
        arguments: call.arguments.trim() === "" ? "{}" : call.arguments,
      };
      yield { type: "tool-call", call: toolCall };
    }
    yield { type: "finish", reason: mapFinishReason(finishReason, ordered.length > 0), ...(usage && { usage }) };
  } finally {
    clearTimeout(timer);
    // Ends the HTTP request too when the caller stops reading early (break, return or abort).
    controller.abort();
    await reader?.cancel().catch(() => undefined);
  }
}

/** OpenAI's finish reasons in the Model's words. Some servers say stop after tool calls: that is tool-calls. */
export function mapFinishReason(reason: string | undefined, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case "tool_calls":
    case "function_call":
      return "tool-calls";
    case "stop":
      return hasToolCalls ? "tool-calls" : "stop";
    case "length":
      return "length";
    case "content_filter":
      return "content-filter";
    default:
      return hasToolCalls ? "tool-calls" : "other";
  }
}

async function httpFailure(response: Response, reader: ReadableStreamDefaultReader<Uint8Array> | undefined): Promise<Failure> {
  const text = reader ? await readLimited(reader, ERROR_BODY_MAX) : "";
  let detail = "";
  let errorCode: string | undefined;
  try {
    const parsed = z.object({ error: z.object({ message: z.string().nullish(), code: z.union([z.string(), z.number()]).nullish() }) }).safeParse(JSON.parse(text));
    if (parsed.success) {
      detail = parsed.data.error.message ?? "";
      errorCode = parsed.data.error.code == null ? undefined : String(parsed.data.error.code);
    }
  } catch {
    detail = text.trim();
  }
  const message = `the model server answered ${response.status}${detail ? `: ${detail.slice(0, ERROR_MESSAGE_MAX)}` : ""}`;
  const status = response.status;
  if (status === 401) return failure("model_auth_failed", message, false);
  if (status === 403) return failure("model_forbidden", message, false);
  if (status === 404) return failure("model_not_found", message, false);
  if (status === 413) return failure("model_request_too_large", message, false);
  if (status === 400 || status === 422) return failure("model_request_invalid", message, false);
  if (status === 429) {
    if (errorCode === "insufficient_quota") return failure("model_quota_exceeded", message, false);
    const retryAfterMs = parseRetryAfter(response.headers.get("retry-after"));
    return { ...failure("model_rate_limited", message, true), ...(retryAfterMs !== undefined && { retryAfterMs }) };
  }
  if (status === 408 || status === 409 || status >= 500) {
    const retryAfterMs = parseRetryAfter(response.headers.get("retry-after"));
    return { ...failure(status === 408 ? "model_timeout" : "model_unavailable", message, true), ...(retryAfterMs !== undefined && { retryAfterMs }) };
  }
  return failure("model_http_error", message, false);
}

function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

async function readLimited(reader: ReadableStreamDefaultReader<Uint8Array>, max: number): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  try {
    while (text.length < max) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // A broken error body still leaves the status to report.
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return text.slice(0, max);
}

function failure(code: string, message: string, retryable: boolean): Failure {
  return { type: "failure", code, message, retryable };
}

/** Wait, unless the signal fires first; true when the full delay passed. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return "the configured base URL";
  }
}

function describeError(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (cause && typeof cause.code === "string") return cause.code;
  if (cause && typeof cause.message === "string") return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Remove secrets from text that may be logged or shown: the API key itself wherever it appears (an
 * OpenAI 401 echoes part of it), and anything shaped like an OpenAI key or a bearer token.
 */
export function redact(text: string, apiKey: string | undefined): string {
  let out = text;
  if (apiKey) out = out.split(apiKey).join("[redacted]");
  return out.replace(/\bsk-[A-Za-z0-9_*-]{6,}/g, "sk-[redacted]").replace(/\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, "$1[redacted]");
}

/**
 * A server-sent events decoder (the WHATWG event stream format): text in, in pieces split anywhere,
 * and the data of each complete event out. Lines end with CRLF, LF or CR; `:` lines are comments;
 * event, id and retry fields are not needed here and are skipped.
 */
export function createSseDecoder(): { push(text: string): string[]; end(text?: string): string[] } {
  let data: string[] = [];
  let hasData = false;

  const line = (text: string, out: string[]) => {
    if (text === "") {
      if (hasData) out.push(data.join("\n"));
      data = [];
      hasData = false;
      return;
    }
    if (text.startsWith(":")) return;
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      data.push(value);
      hasData = true;
    }
  };

  // The unfinished line is kept in pieces and joined once it ends, so a long line arriving in many
  // small pieces costs linear time. A CR ends a line at once; an LF right after it is then skipped,
  // even when it arrives in the next piece.
  let partial: string[] = [];
  let skipLf = false;
  const lineEnd = /\r|\n/g;
  const feed = (text: string, out: string[]) => {
    let start = 0;
    if (skipLf && text.length > 0) {
      if (text[0] === "\n") start = 1;
      skipLf = false;
    }
    for (;;) {
      lineEnd.lastIndex = start;
      const match = lineEnd.exec(text);
      if (!match) {
        if (start < text.length) partial.push(text.slice(start));
        return;
      }
      line(partial.join("") + text.slice(start, match.index), out);
      partial = [];
      start = match.index + 1;
      if (match[0] === "\r") {
        if (start === text.length) skipLf = true;
        else if (text[start] === "\n") start++;
      }
    }
  };

  return {
    push: (text) => {
      const out: string[] = [];
      feed(text, out);
      return out;
    },
    end: (text = "") => {
      const out: string[] = [];
      feed(text, out);
      if (partial.length > 0) line(partial.join(""), out);
      partial = [];
      // A stream that ends without the blank line after its last event still delivers that event.
      line("", out);
      return out;
    },
  };
}
