import { describe, expect, it } from "vitest";
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { parseMessage } from "./childTransport.ts";

/** What the MCP SDK's union accepts (and gives back), or that it refuses. */
const byUnion = (value: unknown) => {
  const parsed = JSONRPCMessageSchema.safeParse(value);
  return parsed.success ? { ok: true, message: parsed.data } : { ok: false };
};
const byKeys = (value: unknown) => {
  try {
    return { ok: true, message: parseMessage(value) };
  } catch {
    return { ok: false };
  }
};

describe("parseMessage", () => {
  it("accepts and refuses exactly what JSONRPCMessageSchema does, with the same result", () => {
    const messages: unknown[] = [
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_order", arguments: { orderId: "SO-1" }, _meta: { a: 1 } } },
      { jsonrpc: "2.0", id: "x", method: "ping" },
      { jsonrpc: "2.0", method: "notifications/progress", params: { progress: 1, extra: true } },
      { jsonrpc: "2.0", id: 2, result: { content: [{ type: "text", text: "ok" }], structuredContent: { a: 1 }, extra: [1] } },
      { jsonrpc: "2.0", id: 3, error: { code: -32602, message: "bad", data: { why: 1 } } },
      { jsonrpc: "2.0", error: { code: -32700, message: "parse" } },
      // refused: wrong version, extra keys on strict kinds, two kinds at once, wrong types, not objects
      { jsonrpc: "1.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", id: 1, method: "ping", result: {} },
      { jsonrpc: "2.0", id: 1, result: {}, error: { code: 1, message: "x" } },
      { jsonrpc: "2.0", id: 1, result: {}, extra: 1 },
      { jsonrpc: "2.0", method: "x", extra: 1 },
      { jsonrpc: "2.0", id: 1.5, method: "ping" },
      { jsonrpc: "2.0", id: null, result: {} },
      { jsonrpc: "2.0", id: 1, result: "not an object" },
      { jsonrpc: "2.0", id: 1, error: { code: "1", message: "x" } },
      { jsonrpc: "2.0", method: 5 },
      { jsonrpc: "2.0" },
      {},
      [],
      null,
      "text",
      42,
    ];
    for (const message of messages) expect(byKeys(message), JSON.stringify(message)).toEqual(byUnion(message));
  });
});
