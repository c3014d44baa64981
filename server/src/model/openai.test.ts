import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequest, ModelStreamPart } from "./model.ts";
import { chunk, startFakeOpenAI, writeSse, type FakeOpenAI, type Respond } from "./openai.fake.ts";
import { createOpenAIModel, createSseDecoder, mapFinishReason, redact } from "./openai.ts";

const KEY = "sk-test-0123456789abcdefghijklmnopqrstuvwxyz";
const MODEL = "gpt-4.1-mini";
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function serve(respond: Respond, apiKey: string | null = KEY) {
  fake = await startFakeOpenAI(apiKey === null ? { model: MODEL } : { model: MODEL, apiKey }, respond);
  return createOpenAIModel({ model: MODEL, baseUrl: fake.baseUrl, ...(apiKey !== null && { apiKey }), retryDelayMs: 1, idleTimeoutMs: 2000 });
}

async function collect(stream: AsyncIterable<ModelStreamPart>): Promise<ModelStreamPart[]> {
  const parts: ModelStreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}
const text = (parts: ModelStreamPart[]) => parts.flatMap((part) => (part.type === "text-delta" ? [part.text] : [])).join("");

const request: ModelRequest = {
  messages: [
    { role: "system", content: "You help customers of the shop." },
    { role: "user", content: "Where is order SO-1002?" },
  ],
  tools: [
    {
      name: "orders__get_order",
      description: "Look up an order by its number.",
      parameters: { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"], additionalProperties: false },
    },
    { name: "orders__cancel_order", description: "Cancel an order.", parameters: { type: "object", properties: { orderId: { type: "string" } } } },
  ],
};

describe("OpenAI-compatible provider: requests", () => {
  it("sends a checked Chat Completions request: bearer key, model, messages, tools as functions, stream with usage", async () => {
    const model = await serve((_req, res) => writeSse(res, [chunk.text("ok"), chunk.finish("stop")]));
    await collect(model.stream(request));
    expect(fake!.problems).toEqual([]);
    expect(fake!.requests[0]!.body).toEqual({
      model: MODEL,
      messages: [
        { role: "system", content: "You help customers of the shop." },
        { role: "user", content: "Where is order SO-1002?" },
      ],
      tools: request.tools.map((tool) => ({ type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } })),
      tool_choice: "auto",
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(model.id).toBe("openai:gpt-4.1-mini");
  });

  it("sends an assistant's tool calls and their results back in the wire format", async () => {
    const model = await serve((_req, res) => writeSse(res, [chunk.text("It has shipped."), chunk.finish("stop")]));
    await collect(
      model.stream({
        ...request,
        messages: [
          ...request.messages,
          { role: "assistant", content: "", toolCalls: [{ id: "call_1", name: "orders__get_order", arguments: '{"orderId":"SO-1002"}' }] },
          { role: "tool", toolCallId: "call_1", name: "orders__get_order", content: '{"status":"shipped"}' },
          { role: "assistant", content: "It has shipped." },
          { role: "user", content: "Thanks" },
        ],
      }),
    );
    expect(fake!.problems).toEqual([]);
    expect((fake!.requests[0]!.body.messages as unknown[]).slice(2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "orders__get_order", arguments: '{"orderId":"SO-1002"}' } }] },
      { role: "tool", tool_call_id: "call_1", content: '{"status":"shipped"}' },
      { role: "assistant", content: "It has shipped." },
      { role: "user", content: "Thanks" },
    ]);
  });

  it("leaves tools out when there are none, and sends no authorization header without a key (Ollama, llama.cpp)", async () => {
    const model = await serve((_req, res) => writeSse(res, [chunk.text("hi"), chunk.finish("stop")]), null);
    const parts = await collect(model.stream({ messages: [{ role: "user", content: "hi" }], tools: [] }));
    expect(fake!.problems).toEqual([]);
    expect(fake!.requests[0]!.body).not.toHaveProperty("tools");
    expect(fake!.requests[0]!.body).not.toHaveProperty("tool_choice");
    expect(fake!.requests[0]!.headers.authorization).toBeUndefined();
    expect(text(parts)).toBe("hi");
  });
});

describe("OpenAI-compatible provider: streaming", () => {
  it("streams text deltas in order, from events split at every few bytes and inside UTF-8 characters", async () => {
    const pieces = ["Vaše naročilo ", "SO-1002 je ", "na poti 🚚", "."];
    const model = await serve((_req, res) =>
      writeSse(res, [chunk.role(), ...pieces.map(chunk.text), chunk.finish("stop"), chunk.usage(42, 9)], { split: 7 }),
    );
    const parts = await collect(model.stream(request));
    expect(fake!.problems).toEqual([]);
    expect(parts.filter((part) => part.type === "text-delta").map((part) => (part as { text: string }).text)).toEqual(pieces);
    expect(parts.at(-1)).toEqual({ type: "finish", reason: "stop", usage: { inputTokens: 42, outputTokens: 9 } });
  });

  it("assembles two interleaved tool calls by index, with arguments split across deltas", async () => {
    const model = await serve((_req, res) =>
      writeSse(
        res,
        [
          chunk.role(),
          chunk.tool(0, { id: "call_a", name: "orders__get_order", arguments: "" }),
          chunk.tool(0, { arguments: '{"order' }),
          chunk.tool(1, { id: "call_b", name: "orders__cancel_order", arguments: '{"orderId":' }),
          chunk.tool(0, { arguments: 'Id":"SO-1002"}' }),
          chunk.tool(1, { arguments: '"SO-1003"}' }),
          chunk.finish("tool_calls"),
          chunk.usage(100, 30),
        ],
        { split: 5 },
      ),
    );
    const parts = await collect(model.stream(request));
    expect(fake!.problems).toEqual([]);
    expect(parts).toEqual([
      { type: "tool-call", call: { id: "call_a", name: "orders__get_order", arguments: '{"orderId":"SO-1002"}' } },
      { type: "tool-call", call: { id: "call_b", name: "orders__cancel_order", arguments: '{"orderId":"SO-1003"}' } },
      { type: "finish", reason: "tool-calls", usage: { inputTokens: 100, outputTokens: 30 } },
    ]);
  });

  it("streams text before tool calls in the same turn, with CRLF line endings", async () => {
    const model = await serve((_req, res) =>
      writeSse(res, [chunk.text("Let me check."), chunk.tool(0, { id: "c1", name: "orders__get_order", arguments: '{"orderId":"SO-1"}' }), chunk.finish("tool_calls")], {
        newline: "\r\n",
        split: 3,
      }),
    );
    const parts = await collect(model.stream(request));
    expect(parts.map((part) => part.type)).toEqual(["text-delta", "tool-call", "finish"]);
  });

  it("reports tool-calls when a server says stop after tool calls, and {} for a call with no argument text", async () => {
    const model = await serve((_req, res) => writeSse(res, [chunk.tool(0, { id: "c1", name: "orders__get_order" }), chunk.finish("stop")]));
    const parts = await collect(model.stream(request));
    expect(parts).toEqual([
      { type: "tool-call", call: { id: "c1", name: "orders__get_order", arguments: "{}" } },
      { type: "finish", reason: "tool-calls" },
    ]);
  });

  it("does not double a tool name that a server repeats in every delta, and gives an id-less call an id", async () => {
    const model = await serve((_req, res) =>
      writeSse(res, [chunk.tool(0, { name: "orders__get_order", arguments: '{"a":' }), chunk.tool(0, { name: "orders__get_order", arguments: "1}" }), chunk.finish("tool_calls")]),
    );
    const parts = await collect(model.stream(request));
    const call = parts[0]?.type === "tool-call" ? parts[0].call : undefined;
    expect(call).toMatchObject({ name: "orders__get_order", arguments: '{"a":1}' });
    expect(call?.id).toMatch(/^call_[0-9a-f-]{36}$/);
  });

  it("maps finish reasons length and content_filter", async () => {
    expect(mapFinishReason("length", false)).toBe("length");
    expect(mapFinishReason("content_filter", false)).toBe("content-filter");
    expect(mapFinishReason("eos", false)).toBe("other");
    const model = await serve((_req, res) => writeSse(res, [chunk.text("a"), chunk.finish("length")]));
    expect((await collect(model.stream(request))).at(-1)).toEqual({ type: "finish", reason: "length" });
  });

  it("finishes when a server ends the stream after finish_reason without [DONE]", async () => {
    const model = await serve((_req, res) => writeSse(res, [chunk.text("a"), chunk.finish("stop")], { done: false }));
    expect((await collect(model.stream(request))).at(-1)).toEqual({ type: "finish", reason: "stop" });
  });
});

describe("OpenAI-compatible provider: errors and retries", () => {
  it("maps 401 to model_auth_failed without retrying, and never shows the API key even when the server echoes it", async () => {
    const model = await serve((_req, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}. Also Bearer ${KEY}`, code: "invalid_api_key" } }));
    });
    const parts = await collect(model.stream(request));
    expect(parts).toHaveLength(1);
    expect(parts[0]).toMatchObject({ type: "error", code: "model_auth_failed" });
    expect(JSON.stringify(parts)).not.toContain(KEY);
    expect(JSON.stringify(parts)).not.toContain(KEY.slice(3, 20));
    expect(fake!.requests).toHaveLength(1);
  });

  it("maps 400 and 404 without retrying", async () => {
    for (const [status, code] of [
      [400, "model_request_invalid"],
      [404, "model_not_found"],
    ] as const) {
      const model = await serve((_req, res) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "nope" } }));
      });
      expect(await collect(model.stream(request))).toEqual([{ type: "error", code, message: `the model server answered ${status}: nope` }]);
      expect(fake!.requests).toHaveLength(1);
      await fake!.close();
      fake = undefined;
    }
  });

  it("retries 429 and 5xx before any output, then streams the answer", async () => {
    const model = await serve(async (_req, res, attempt) => {
      if (attempt === 1) {
        res.writeHead(429, { "content-type": "application/json", "retry-after": "0" });
        return void res.end(JSON.stringify({ error: { message: "Rate limit reached", code: "rate_limit_exceeded" } }));
      }
      if (attempt === 2) {
        res.writeHead(503);
        return void res.end("overloaded");
      }
      await writeSse(res, [chunk.text("third time"), chunk.finish("stop")]);
    });
    const parts = await collect(model.stream(request));
    expect(text(parts)).toBe("third time");
    expect(fake!.requests).toHaveLength(3);
  });

  it("gives up after maxRetries retries with the last error", async () => {
    const model = await serve((_req, res) => {
      res.writeHead(500);
      res.end();
    });
    expect(await collect(model.stream(request))).toEqual([{ type: "error", code: "model_unavailable", message: "the model server answered 500" }]);
    expect(fake!.requests).toHaveLength(3);
  });

  it("does not retry insufficient_quota", async () => {
    const model = await serve((_req, res) => {
      res.writeHead(429, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "You exceeded your current quota", code: "insufficient_quota" } }));
    });
    expect(await collect(model.stream(request))).toMatchObject([{ type: "error", code: "model_quota_exceeded" }]);
    expect(fake!.requests).toHaveLength(1);
  });

  it("retries a stream cut before any output, and never one cut after output", async () => {
    const cutEarly = await serve(async (_req, res, attempt) => {
      if (attempt === 1) {
        await writeSse(res, [chunk.role()], { done: false, end: false });
        return void res.destroy();
      }
      await writeSse(res, [chunk.text("whole"), chunk.finish("stop")]);
    });
    expect(text(await collect(cutEarly.stream(request)))).toBe("whole");
    expect(fake!.requests).toHaveLength(2);
    await fake!.close();

    const cutLate = await serve(async (_req, res) => {
      await writeSse(res, [chunk.text("half")], { done: false, end: false });
      res.destroy();
    });
    const parts = await collect(cutLate.stream(request));
    expect(parts[0]).toEqual({ type: "text-delta", text: "half" });
    expect(parts.at(-1)).toMatchObject({ type: "error" });
    expect(["model_stream_truncated", "model_unreachable"]).toContain((parts.at(-1) as { code: string }).code);
    expect(fake!.requests).toHaveLength(1);
  });

  it("reports an error event inside the stream as an error part", async () => {
    const model = await serve((_req, res) => writeSse(res, [chunk.text("a"), { error: { message: "The server had an error", type: "server_error" } }]));
    const parts = await collect(model.stream(request));
    expect(parts).toEqual([
      { type: "text-delta", text: "a" },
      { type: "error", code: "model_stream_error", message: "the model server reported an error: The server had an error" },
    ]);
  });

  it("refuses a chunk that is not JSON, and a tool call without a name", async () => {
    const notJson = await serve((_req, res) => writeSse(res, ["{not json"]));
    expect(await collect(notJson.stream(request))).toMatchObject([{ type: "error", code: "model_response_invalid" }]);
    await fake!.close();
    const nameless = await serve((_req, res) => writeSse(res, [chunk.tool(0, { id: "c", arguments: "{}" }), chunk.finish("tool_calls")]));
    expect(await collect(nameless.stream(request))).toMatchObject([{ type: "error", code: "model_tool_call_invalid" }]);
  });

  it("refuses a response that is not an event stream", async () => {
    const model = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
    expect(await collect(model.stream(request))).toMatchObject([{ type: "error", code: "model_response_invalid" }]);
  });

  it("reports an unreachable server as model_unreachable after retrying", async () => {
    const model = createOpenAIModel({ model: MODEL, apiKey: KEY, baseUrl: "http://127.0.0.1:1/v1", retryDelayMs: 1, maxRetries: 1 });
    const parts = await collect(model.stream(request));
    expect(parts).toMatchObject([{ type: "error", code: "model_unreachable" }]);
    expect(JSON.stringify(parts)).not.toContain(KEY);
  });

  it("times out a server that stops sending, retrying only while nothing was streamed", async () => {
    fake = await startFakeOpenAI({ model: MODEL, apiKey: KEY }, async (_req, res) => {
      await writeSse(res, [chunk.text("slow")], { done: false, end: false });
    });
    const model = createOpenAIModel({ model: MODEL, apiKey: KEY, baseUrl: fake.baseUrl, idleTimeoutMs: 150, retryDelayMs: 1 });
    const parts = await collect(model.stream(request));
    expect(parts).toEqual([
      { type: "text-delta", text: "slow" },
      { type: "error", code: "model_timeout", message: "no data from the model server for 150 ms" },
    ]);
    expect(fake.requests).toHaveLength(1);
  });
});

describe("OpenAI-compatible provider: abort", () => {
  it("stops streaming when the signal fires and closes the connection to the server", async () => {
    const model = await serve(async (_req, res) => {
      await writeSse(res, [chunk.text("first")], { done: false, end: false });
      // Holds the stream open until the client goes away.
    });
    const controller = new AbortController();
    const parts: ModelStreamPart[] = [];
    for await (const part of model.stream({ ...request, signal: controller.signal })) {
      parts.push(part);
      if (part.type === "text-delta") controller.abort();
    }
    expect(parts).toEqual([
      { type: "text-delta", text: "first" },
      { type: "error", code: "model_aborted", message: "the request was cancelled" },
    ]);
    await expect.poll(() => fake!.closedEarly).toBe(1);
  });

  it("closes the connection when the caller stops reading early", async () => {
    const model = await serve(async (_req, res) => {
      await writeSse(res, [chunk.text("one"), chunk.text("two")], { done: false, end: false });
    });
    for await (const part of model.stream(request)) {
      if (part.type === "text-delta") break;
    }
    await expect.poll(() => fake!.closedEarly).toBe(1);
  });

  it("does not start a request when the signal has already fired", async () => {
    const model = await serve((_req, res) => writeSse(res, [chunk.text("x"), chunk.finish("stop")]));
    const parts = await collect(model.stream({ ...request, signal: AbortSignal.abort() }));
    expect(parts).toMatchObject([{ type: "error", code: "model_aborted" }]);
    expect(fake!.requests).toHaveLength(0);
  });
});

describe("server-sent events decoder", () => {
  const stream = 'data: {"a":1}\n\n: comment\nevent: message\ndata: line1\ndata: line2\r\n\r\ndata:nospace\r\rdata: [DONE]\n\n';
  const expected = ['{"a":1}', "line1\nline2", "nospace", "[DONE]"];

  it("decodes the same events wherever the text is split", () => {
    for (let at = 0; at <= stream.length; at++) {
      const decoder = createSseDecoder();
      const events = [...decoder.push(stream.slice(0, at)), ...decoder.push(stream.slice(at)), ...decoder.end()];
      expect(events, `split at ${at}`).toEqual(expected);
    }
  });

  it("decodes a stream fed one character at a time", () => {
    const decoder = createSseDecoder();
    const events = [...stream].flatMap((character) => decoder.push(character));
    expect([...events, ...decoder.end()]).toEqual(expected);
  });

  it("decodes a 200,000-character line arriving in 100-character pieces", () => {
    const long = "x".repeat(200_000);
    const decoder = createSseDecoder();
    const text = `data: ${long}\n\n`;
    const events: string[] = [];
    for (let at = 0; at < text.length; at += 100) events.push(...decoder.push(text.slice(at, at + 100)));
    expect(events).toEqual([long]);
  });

  it("delivers a last event that has no blank line after it", () => {
    const decoder = createSseDecoder();
    expect([...decoder.push("data: last"), ...decoder.end()]).toEqual(["last"]);
  });
});

describe("redaction", () => {
  it("removes the key and anything shaped like an OpenAI key or bearer token", () => {
    expect(redact(`bad key ${KEY}`, KEY)).toBe("bad key [redacted]");
    expect(redact("Incorrect API key provided: sk-proj-abc***************wxyz.", undefined)).toBe("Incorrect API key provided: sk-[redacted].");
    expect(redact("Authorization: Bearer abcdefghijkl", undefined)).toBe("Authorization: Bearer [redacted]");
  });
});
