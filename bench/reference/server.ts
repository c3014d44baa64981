// The minimal reference server of bench/engine: the irreducible work of a read turn and nothing else.
// `ws` on loopback and Caplo's own store (SQLite file or PostgreSQL): parse each frame with the protocol's
// schema, open a conversation on hello, and for a customer message append the message and the reply in ONE
// transaction (events and transcript entries, as a turn stores them) and send both events. No model, no
// tool, no bus. Prints "caplo serve: http://127.0.0.1:PORT" like caplo serve, so the bench starts both alike.
//
// --message-first: the customer's message in a transaction of its own, sent, and only then the reply in a
// second one. That is the least any server keeping Caplo's promise does: a customer's message is on disk
// (with the turn it is owed) before the model runs, so a crash mid-turn loses neither (bench/README).
//
//   node --import tsx bench/reference/server.ts --db FILE|postgres://... [--message-first]
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { WebSocketServer, type WebSocket } from "ws";
import { clientFrameSchema, PROTOCOL_VERSION, type Outbound } from "@caplo/shared";
import { openStore } from "../../server/src/store/index.ts";

const at = process.argv.indexOf("--db");
const db = at >= 0 ? process.argv[at + 1] : undefined;
if (!db) throw new Error("usage: server.ts --db FILE|postgres://... [--message-first]");
const messageFirst = process.argv.includes("--message-first");
const NODE = "reference";
const store = await openStore(db);
const http = createServer((_request, response) => response.writeHead(404).end());
const wss = new WebSocketServer({ server: http, path: "/v1/ws", perMessageDeflate: false });
const id = (prefix: string) => `${prefix}_${randomBytes(12).toString("base64url")}`;

wss.on("connection", (ws: WebSocket) => {
  let conversationId: string | undefined;
  ws.on("message", (data) => {
    void (async () => {
      const frame = clientFrameSchema.safeParse(JSON.parse(String(data)));
      if (!frame.success) return ws.send(JSON.stringify({ t: "error", code: "frame_invalid", message: frame.error.message }));
      if (frame.data.t === "hello") {
        const conversation = await store.createConversation({
          id: id("c"),
          workspaceId: "default",
          agent: frame.data.agent,
          releaseId: "reference",
          channel: "web",
          externalId: null,
          resumeHash: null,
          ownerId: id("o"),
          capabilities: { editableFields: false, forms: false, questions: true, files: false, pages: false, richText: false },
          createdAt: Date.now(),
        });
        conversationId = conversation.id;
        ws.send(JSON.stringify({ t: "welcome", v: PROTOCOL_VERSION, conversationId, resumeToken: id("r"), verified: false }));
        return;
      }
      if (frame.data.t !== "in" || frame.data.event.type !== "message" || !conversationId) return;
      const text = frame.data.event.text;
      const reply = "Your order is on its way.";
      const customer: Outbound = { type: "text", id: id("m"), from: "customer", text };
      const agent: Outbound = { type: "text", id: id("m"), from: "agent", text: reply };
      const send = (stored: { events: { seq: number; at: number; message: Outbound }[] }) => {
        for (const event of stored.events) ws.send(JSON.stringify({ t: "event", seq: event.seq, at: new Date(event.at).toISOString(), message: event.message }));
      };
      if (messageFirst) {
        // The turn owed to the message is recorded with it, and the reply's append finishes it (as a turn's own).
        const owed = await store.append(conversationId, { events: [customer], transcript: [{ role: "user", content: text }], owedBy: NODE }, Date.now());
        send(owed);
        send(await store.append(conversationId, { events: [agent], transcript: [{ role: "assistant", content: reply }], finish: { nodeId: NODE, seq: owed.conversation.lastTranscriptSeq } }, Date.now()));
        return;
      }
      send(await store.append(conversationId, { events: [customer, agent], transcript: [{ role: "user", content: text }, { role: "assistant", content: reply }] }, Date.now()));
    })();
  });
});

http.listen(0, "127.0.0.1", () => {
  process.stdout.write(`caplo serve: http://127.0.0.1:${(http.address() as { port: number }).port}\n`);
});
process.on("SIGTERM", () => {
  wss.close();
  http.close();
  void store.close().then(() => process.exit(0));
});
