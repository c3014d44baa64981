// A deterministic scripted Model for tests, benchmarks and the offline demo. Rules match the latest
// customer message (or the latest system note, such as a write's outcome) and give the replies of each
// model step after it: text and tool calls. The same conversation always gets the same stream.
import type { Model, ModelMessage, ModelRequest, ModelStreamPart, ModelToolCall } from "./model.ts";

export type ScriptedToolCall = {
  /** The tool's model name, `<package>__<tool>`. */
  name: string;
  /** Arguments; string values may use $1..$9 for the rule's capture groups. A string is sent as is (even invalid JSON). */
  args?: Record<string, unknown> | string;
};

export type ScriptedReply = {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** Text by the latest tool result: the first case whose pattern matches it wins over `text` (so a line follows what the tool did). */
  cases?: { tool: string | RegExp; text: string }[];
  /** A model that writes slowly: after the text's first part, wait this long before the rest (the visitor's stop ends the wait). */
  pauseMs?: number;
};

export type ScriptedRule = {
  /** Matches the latest customer message: a RegExp, or a case-insensitive substring. */
  when?: string | RegExp;
  /** Matches the latest system note instead (for example a write's outcome). */
  whenNote?: string | RegExp;
  /** replies[k] is the model's k-th step after the message that matched. Text may use {{tool}} (the latest tool result) and {{user}}. */
  replies: ScriptedReply[];
  /** For a note: answer the latest customer message again, by the rules, as if it had just come (a request that waited). */
  replayUser?: boolean;
};

export type ScriptedModelOptions = {
  id?: string;
  /** Said when no rule matches a customer message. */
  fallback?: string;
};

function matches(pattern: string | RegExp | undefined, text: string): RegExpMatchArray | null {
  if (pattern === undefined) return null;
  if (typeof pattern === "string") return text.toLowerCase().includes(pattern.toLowerCase()) ? ([text] as RegExpMatchArray) : null;
  return text.match(pattern);
}

function fill(value: unknown, groups: RegExpMatchArray): unknown {
  if (typeof value === "string") return value.replace(/\$([1-9])/g, (_all, index: string) => groups[Number(index)] ?? "");
  if (Array.isArray(value)) return value.map((item) => fill(item, groups));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fill(item, groups)]));
  return value;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

export class ScriptedModel implements Model {
  readonly id: string;
  private readonly rules: ScriptedRule[];
  private readonly fallback: string | undefined;

  constructor(rules: ScriptedRule[], options: ScriptedModelOptions = {}) {
    this.rules = rules;
    this.id = `scripted:${options.id ?? "rules"}`;
    this.fallback = options.fallback;
  }

  /** The reply for this request: which rule, which step. Pure. */
  reply(messages: ModelMessage[]): { reply: ScriptedReply | undefined; groups: RegExpMatchArray } {
    let trigger = -1;
    for (let index = messages.length - 1; index > 0; index--) {
      const role = messages[index]!.role;
      if (role === "user" || role === "system") {
        trigger = index;
        break;
      }
    }
    const none = { reply: undefined, groups: [""] as unknown as RegExpMatchArray };
    if (trigger < 0) return none;
    const message = messages[trigger]!;
    const step = messages.slice(trigger + 1).filter((entry) => entry.role === "assistant").length;
    for (const rule of this.rules) {
      const groups = message.role === "user" ? matches(rule.when, message.content) : matches(rule.whenNote, message.content);
      if (groups && rule.replayUser) {
        const user = messages.slice(0, trigger).findLast((entry) => entry.role === "user");
        if (!user) return none;
        for (const again of this.rules) {
          const userGroups = matches(again.when, user.content);
          if (userGroups) return { reply: again.replies[step], groups: userGroups };
        }
        return none;
      }
      if (groups) return { reply: rule.replies[step], groups };
    }
    if (message.role === "user" && step === 0 && this.fallback) return { reply: { text: this.fallback }, groups: none.groups };
    return none;
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
    const { reply, groups } = this.reply(request.messages);
    const lastTool = request.messages.findLast((message) => message.role === "tool");
    const lastUser = request.messages.findLast((message) => message.role === "user");
    const byTool = reply?.cases?.find((entry) => matches(entry.tool, lastTool?.content ?? ""));
    const text = (byTool?.text ?? reply?.text ?? "")
      .replaceAll("{{tool}}", lastTool?.content ?? "")
      .replaceAll("{{user}}", lastUser?.content ?? "");
    let parts = 0;
    for (const chunk of text.match(/\S+\s*|\s+/g) ?? []) {
      if (parts++ === 1 && reply?.pauseMs) await pause(reply.pauseMs, request.signal);
      if (request.signal?.aborted) return;
      yield { type: "text-delta", text: chunk };
    }
    const calls: ModelToolCall[] = (reply?.toolCalls ?? []).map((call, index) => ({
      id: `call_${request.messages.length}_${index}`,
      name: call.name,
      arguments: typeof call.args === "string" ? call.args : JSON.stringify(fill(call.args ?? {}, groups)),
    }));
    for (const call of calls) yield { type: "tool-call", call };
    yield { type: "finish", reason: calls.length > 0 ? "tool-calls" : "stop" };
  }
}
