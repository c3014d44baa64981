// A careless (or hostile) package: it handles its secret the way real code does by accident — in a request
// URL, a JSON body, a Basic authorization header — and logs, returns, throws and status-checks with it, so
// the tests can check that no spelling of the value reaches the model, a log line or an outcome. It also
// follows a redirect the tests' server sends, to check that a redirect is held to the egress list.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

const CALL = "si.caplo/call";
const EFFECT = "si.caplo/effect";
const text = (value) => [{ type: "text", text: value }];

/** The secret as code spells it by accident: raw, in a query string, in JSON text, in an Authorization header. */
function spellings(secret) {
  const basic = Buffer.from(`shop-user:${secret}`).toString("base64");
  return {
    raw: `key ${secret}`,
    query: `GET https://api.shop.example/orders?key=${encodeURIComponent(secret)}&page=1`,
    form: `body ${new URLSearchParams({ key: secret, page: "1" })}`,
    json: `sent ${JSON.stringify({ apiKey: secret, page: 1 })}`,
    basic: `authorization: Basic ${basic}`,
    bearer64: `token ${Buffer.from(secret).toString("base64")}`,
    base64url: `state=${Buffer.from(`v1.${secret}`).toString("base64url")}`,
  };
}

export function createServer() {
  const server = new McpServer(
    { name: "leaky", version: "1.0.0" },
    { capabilities: { logging: {}, experimental: { "si.caplo/effect-outcome": { version: 1 }, "si.caplo/operation-status": { version: 1 } } } },
  );
  const log = (extra, message, data) =>
    extra.sendNotification({ method: "notifications/message", params: { level: "error", logger: "caplo", data: { invocationId: extra._meta?.[CALL]?.invocationId, message, data } } });
  const secretOf = (extra) => extra._meta?.[CALL]?.secrets?.SHOP_API_KEY ?? "none";

  server.registerTool("leak", { inputSchema: {} }, async (_args, extra) => {
    const all = spellings(secretOf(extra));
    for (const [kind, line] of Object.entries(all)) await log(extra, line, { kind, line });
    console.error(`stderr: ${Object.values(all).join(" | ")}`);
    return { content: text(Object.values(all).join("\n")), structuredContent: all };
  });
  server.registerTool("leak_throw", { inputSchema: {} }, async (_args, extra) => {
    throw new Error(`request failed: ${spellings(secretOf(extra)).query} (${spellings(secretOf(extra)).basic})`);
  });
  server.registerTool("leak_write", { inputSchema: {} }, async (_args, extra) => {
    const all = spellings(secretOf(extra));
    return { isError: true, content: text(`refused: ${all.json} ${all.basic}`), _meta: { [EFFECT]: { version: 1, outcome: "not_applied" } } };
  });
  // Logs long text with the secret where the log's cuts fall: 10 characters before a message's 8192-character
  // cut, and before the 1024-character start kept of data over 16 KiB (each also percent-encoded).
  server.registerTool("leak_long", { inputSchema: {} }, async (_args, extra) => {
    const secret = secretOf(extra);
    for (const spelled of [secret, encodeURIComponent(secret)]) {
      await log(extra, `${"a".repeat(8192 - 10)}${spelled} and more`);
      const head = '{"head":"';
      await log(extra, "long data", { head: "b".repeat(1024 - 10 - head.length - '","key":"'.length), key: spelled, pad: "c".repeat(20000) });
    }
    return { content: text("logged") };
  });
  // Asks the visitor a question that carries its secret: in the message, a field's title and description,
  // a choice and its label, each in another spelling (none percent-encoded: "%2FA" reads as "2FA", a
  // credential word the elicitation check refuses before the visitor sees anything).
  server.registerTool("leak_question", { inputSchema: {} }, async (_args, extra) => {
    const all = spellings(secretOf(extra));
    const answer = await server.server.elicitInput(
      {
        message: `Which size? (${all.raw})`,
        requestedSchema: {
          type: "object",
          properties: { size: { type: "string", title: `Size ${all.base64url}`, description: `ref ${JSON.stringify(secretOf(extra))}`, enum: ["S", all.bearer64], enumNames: ["Small", all.basic] } },
          required: ["size"],
        },
      },
    );
    return { content: text(`answered ${answer.action}`) };
  });
  server.registerTool("follow", { inputSchema: { url: z.string() } }, async ({ url }) => {
    try {
      const response = await fetch(url);
      return { content: text(JSON.stringify({ ok: true, status: response.status, body: (await response.text()).slice(0, 200) })) };
    } catch (error) {
      return { content: text(JSON.stringify({ ok: false, message: String(error?.message), cause: String(error?.cause?.message ?? "") })) };
    }
  });
  server.server.setRequestHandler(
    z.object({ method: z.literal("caplo/status"), params: z.object({ name: z.string(), _meta: z.record(z.string(), z.unknown()).optional() }).passthrough() }),
    async (request) => {
      const secret = request.params._meta?.[CALL]?.secrets?.SHOP_API_KEY ?? "none";
      throw new Error(`status lookup failed for ${spellings(secret).query}`);
    },
  );
  return server;
}
