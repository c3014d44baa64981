// A fake OpenAI-compatible server on loopback for the provider's tests: it checks every request it
// receives against the Chat Completions wire format (headers, model, messages, tools, stream flag),
// answers a bad one with 400 and records the problem, and streams server-sent events as a test scripts.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";

export type RecordedRequest = { headers: IncomingMessage["headers"]; body: Record<string, unknown> };
export type Respond = (request: RecordedRequest, response: ServerResponse, attempt: number) => void | Promise<void>;

const toolCallSchema = z.strictObject({
  id: z.string().min(1),
  type: z.literal("function"),
  function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
});
const messageSchema = z.discriminatedUnion("role", [
  z.strictObject({ role: z.literal("system"), content: z.string() }),
  z.strictObject({ role: z.literal("user"), content: z.string() }),
  z.strictObject({ role: z.literal("assistant"), content: z.string().nullable(), tool_calls: z.array(toolCallSchema).min(1).optional() }),
  z.strictObject({ role: z.literal("tool"), tool_call_id: z.string().min(1), content: z.string() }),
]);
const toolSchema = z.strictObject({
  type: z.literal("function"),
  function: z.strictObject({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
    description: z.string(),
    parameters: z.looseObject({ type: z.literal("object") }),
  }),
});
const bodySchema = z.strictObject({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1),
  tools: z.array(toolSchema).min(1).optional(),
  tool_choice: z.literal("auto").optional(),
  stream: z.literal(true),
  stream_options: z.strictObject({ include_usage: z.literal(true) }).optional(),
});

export type FakeOpenAI = {
  /** The base URL to configure, ending in /v1. */
  baseUrl: string;
  requests: RecordedRequest[];
  /** What was wrong with requests the server refused; a test expects this to stay empty. */
  problems: string[];
  /** Connections the client closed before the response ended (an abort reaches the server). */
  closedEarly: number;
  close(): Promise<void>;
};

export async function startFakeOpenAI(expect: { model: string; apiKey?: string }, respond: Respond): Promise<FakeOpenAI> {
  const state = { requests: [] as RecordedRequest[], problems: [] as string[], closedEarly: 0 };
  const server = createServer(async (req, res) => {
    res.on("close", () => {
      if (!res.writableEnded) state.closedEarly++;
    });
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const problems: string[] = [];
    if (req.method !== "POST") problems.push(`method ${req.method}`);
    if (req.url !== "/v1/chat/completions") problems.push(`path ${req.url}`);
    if (!String(req.headers["content-type"]).startsWith("application/json")) problems.push(`content-type ${req.headers["content-type"]}`);
    if (!String(req.headers.accept).includes("text/event-stream")) problems.push(`accept ${req.headers.accept}`);
    const auth = req.headers.authorization;
    if (expect.apiKey !== undefined && auth !== `Bearer ${expect.apiKey}`) problems.push("authorization header missing or wrong");
    if (expect.apiKey === undefined && auth !== undefined) problems.push("an authorization header was sent without an API key");
    let body: Record<string, unknown> = {};
    try {
      const parsed = bodySchema.safeParse(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      if (parsed.success) body = parsed.data;
      else problems.push(...parsed.error.issues.map((issue) => `body ${issue.path.join(".")}: ${issue.message}`));
      if (parsed.success && parsed.data.model !== expect.model) problems.push(`model ${parsed.data.model}`);
      // Every tool call an assistant message makes is answered by a tool message with its id.
      if (parsed.success) {
        const ids = parsed.data.messages.flatMap((message) => (message.role === "assistant" ? (message.tool_calls ?? []).map((call) => call.id) : []));
        const answered = parsed.data.messages.flatMap((message) => (message.role === "tool" ? [message.tool_call_id] : []));
        for (const id of ids) if (!answered.includes(id)) problems.push(`tool call ${id} has no tool message`);
      }
    } catch {
      problems.push("body is not JSON");
    }
    if (problems.length > 0) {
      state.problems.push(...problems);
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: problems.join("; "), type: "invalid_request_error" } }));
      return;
    }
    const recorded = { headers: req.headers, body };
    state.requests.push(recorded);
    await respond(recorded, res, state.requests.length);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    get requests() {
      return state.requests;
    },
    get problems() {
      return state.problems;
    },
    get closedEarly() {
      return state.closedEarly;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Chunks as OpenAI streams them. */
export const chunk = {
  role: () => ({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] }),
  text: (content: string) => ({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] }),
  tool: (index: number, part: { id?: string; name?: string; arguments?: string }) => ({
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [
      {
        index: 0,
        delta: {
          tool_calls: [
            { index, ...(part.id && { id: part.id, type: "function" }), function: { ...(part.name && { name: part.name }), arguments: part.arguments ?? "" } },
          ],
        },
        finish_reason: null,
      },
    ],
  }),
  finish: (reason: string) => ({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: {}, finish_reason: reason }] }),
  usage: (prompt: number, completion: number) => ({
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  }),
};

/** Write events as `data:` lines, the whole byte stream cut into pieces of `split` bytes, one write each. */
export async function writeSse(
  res: ServerResponse,
  events: (unknown | string)[],
  options: { split?: number; done?: boolean; newline?: string; end?: boolean } = {},
): Promise<void> {
  const newline = options.newline ?? "\n";
  const text =
    `: keep-alive${newline}${newline}` +
    events.map((event) => `data: ${typeof event === "string" ? event : JSON.stringify(event)}${newline}${newline}`).join("") +
    (options.done === false ? "" : `data: [DONE]${newline}${newline}`);
  const bytes = Buffer.from(text, "utf8");
  if (!res.headersSent) res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  const step = options.split ?? bytes.length;
  for (let at = 0; at < bytes.length; at += step) {
    res.write(bytes.subarray(at, at + step));
    // Yield to the event loop so pieces tend to leave as separate writes.
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (options.end !== false) res.end();
}
