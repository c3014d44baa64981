// A SMALL PROTOCOL-SPEAKING TEST SERVER for the widget's browser tests and benchmark — not the product's
// gateway. It serves the built widget (widget/dist) the way the gateway does (/widget.js, /widget/…),
// speaks the widget protocol on /v1/ws with every frame checked by the shared zod schemas both ways,
// and plays a scripted shop conversation (look up, cancel with a review card, confirm with edits,
// decline, more layouts). A second server on another port is the owner's site with the script tag.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { WebSocketServer, type WebSocket } from "ws";
import { clientFrameSchema, serverFrameSchema, type ClientFrame, type ServerFrame } from "@caplo/shared/protocol";
import type { Outbound, OutboundOf } from "@caplo/shared";
import { serveFile, widgetAppPageHeaders, widgetCacheControl } from "../../server/src/gateway/staticFiles.ts";

export const DIST = fileURLToPath(new URL("../../widget/dist/", import.meta.url));

interface Proposal {
  id: string;
  orderId: string;
  state: OutboundOf<"review">["state"];
  review: OutboundOf<"review">;
}

interface Conversation {
  id: string;
  token: string;
  events: { seq: number; at: string; message: Outbound }[];
  proposals: Map<string, Proposal>;
  sockets: Set<WebSocket>;
  identity?: string;
}

export interface WidgetTestServer {
  /** The owner's site with the script tag (its own origin). */
  siteUrl: string;
  /** The widget host: /widget.js, /widget/app.html, /v1/ws. */
  gatewayUrl: string;
  /** Every client frame received, after schema validation. */
  frames: ClientFrame[];
  /** Frames the schema refused (there should be none). */
  refused: unknown[];
  /** WebSocket connections accepted so far. */
  connections: number;
  /** Milliseconds the scripted agent waits before replying (so progress and typing can be seen). */
  delayMs: number;
  close(): Promise<void>;
}

const REASONS = [
  { value: "changed_mind", label: "Changed my mind" },
  { value: "too_slow", label: "Delivery too slow" },
  { value: "ordered_twice", label: "Ordered twice" },
];

/** The embedding docs' snippet that adds the loader once the page has loaded (docs/site-owners/embedding.md). */
export function afterLoadSnippet(src: string, agent: string): string {
  return `<script>
  (function (load) { document.readyState === "complete" ? load() : addEventListener("load", load); })(function () {
    var s = document.createElement("script");
    s.src = "${src}";
    s.setAttribute("data-agent", "${agent}");
    document.body.appendChild(s);
  });
</script>`;
}

export interface SiteOptions {
  locale?: string;
  color?: string;
  position?: "left" | "right";
  open?: boolean;
  /** HTML put in the page's body before the script tag (a test's own images or markup). */
  bodyHtml?: string;
}

export async function startWidgetTestServer(options: { delayMs?: number; site?: SiteOptions } = {}): Promise<WidgetTestServer> {
  const conversations = new Map<string, Conversation>();
  const frames: ClientFrame[] = [];
  const refused: unknown[] = [];
  let counter = 0;
  const nextId = (p: string) => `${p}${++counter}`;

  const gateway = createServer((req, res) => void serveWidget(req, res));
  const site = createServer((req, res) => serveSite(req, res));
  await Promise.all([listen(gateway), listen(site)]);
  const gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  const siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
  const server: WidgetTestServer = { siteUrl, gatewayUrl, frames, refused, connections: 0, delayMs: options.delayMs ?? 150, close };

  async function serveWidget(req: IncomingMessage, res: ServerResponse) {
    const path = new URL(req.url ?? "/", gatewayUrl).pathname;
    const file = path === "/widget.js" ? "widget.js" : path.startsWith("/widget/") ? path.slice("/widget/".length) : null;
    // The gateway's own static file serving (compression, caching, validators) and the app page's CSP as
    // the gateway sends it: its own inline style only, and only the agent's sites may frame it.
    const headers = file === "app.html" ? await widgetAppPageHeaders(DIST, siteUrl) : {};
    if (file === null || !headers || !(await serveFile(req, res, DIST, file, widgetCacheControl(file), headers))) notFound(res);
  }

  function serveSite(req: IncomingMessage, res: ServerResponse) {
    const path = new URL(req.url ?? "/", siteUrl).pathname;
    if (path === "/favicon.ico") {
      res.writeHead(204);
      res.end();
      return;
    }
    if (path === "/pay") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(`<!doctype html><title>Pay</title><body style="font-family:sans-serif;padding:16px"><h1>Payment</h1>
<p>Order SO-1002 · €49.90</p><button id="done" onclick="parent.postMessage({type:'caplo:done'}, '*')">Finish</button></body>`);
      return;
    }
    // "/after-load": the same page embedding the loader with the snippet that adds it after the load event.
    if (path !== "/" && path !== "/after-load") return notFound(res);
    const s = options.site ?? {};
    const attrs = [
      `data-agent="shop"`,
      s.locale ? `data-locale="${s.locale}"` : "",
      s.color ? `data-color="${s.color}"` : "",
      s.position ? `data-position="${s.position}"` : "",
      s.open ? `data-open="true"` : "",
    ].join(" ");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Alpine Outdoor Shop</title>
<style>body{font-family:Georgia,serif;margin:0;background:#f6f1e7;color:#333} header{background:#3b5d3a;color:#fff;padding:24px}
main{padding:24px;max-width:720px} button{all:unset} iframe{border:10px solid red !important} div{color:red}</style></head>
<body><header><h1>Alpine Outdoor Shop</h1></header><main><p>Boots, tents and everything for the mountains.</p>
<p>(This page's hostile CSS — red iframe borders, unset buttons — must not reach the widget.)</p></main>${s.bodyHtml ?? ""}
${path === "/after-load" ? afterLoadSnippet(`${gatewayUrl}/widget.js`, "shop") : `<script src="${gatewayUrl}/widget.js" ${attrs} async></script>`}</body></html>`);
  }

  const wss = new WebSocketServer({ server: gateway, path: "/v1/ws" });
  wss.on("connection", (socket) => {
    server.connections++;
    let conversation: Conversation | null = null;
    const send = (frame: ServerFrame) => {
      serverFrameSchema.parse(frame); // what this server says is held to the contract too
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
    };
    const emit = (message: Outbound) => {
      if (!conversation) return;
      const event = { seq: conversation.events.length + 1, at: new Date().toISOString(), message };
      conversation.events.push(event);
      for (const s of conversation.sockets) {
        serverFrameSchema.parse({ t: "event", ...event });
        if (s.readyState === s.OPEN) s.send(JSON.stringify({ t: "event", ...event }));
      }
    };
    const typing = (on: boolean) => send({ t: "typing", on });
    socket.on("message", (data) => {
      let raw: unknown;
      try {
        raw = JSON.parse(String(data));
      } catch {
        return send({ t: "error", code: "frame_invalid", message: "Frames are JSON." });
      }
      const parsed = clientFrameSchema.safeParse(raw);
      if (!parsed.success) {
        refused.push(raw);
        const issue = parsed.error.issues[0];
        return send({ t: "error", code: "frame_invalid", path: `/${issue?.path.join("/") ?? ""}`, message: issue?.message ?? "invalid" });
      }
      const frame = parsed.data;
      frames.push(frame);
      if (frame.t === "hello") {
        const known = frame.resume ? [...conversations.values()].find((c) => c.token === frame.resume!.token) : undefined;
        conversation = known ?? { id: nextId("conv-"), token: nextId("resume-"), events: [], proposals: new Map(), sockets: new Set() };
        conversations.set(conversation.id, conversation);
        conversation.sockets.add(socket);
        send({ t: "welcome", v: 1, conversationId: conversation.id, resumeToken: conversation.token, verified: Boolean(conversation.identity) });
        const after = known ? frame.resume!.after : 0;
        for (const e of conversation.events) if (e.seq > after) send({ t: "event", ...e });
        if (!known) emit({ type: "text", id: nextId("m"), from: "agent", text: "Hi! I can look up your orders, cancel them, find stores and book fittings." });
        return;
      }
      if (!conversation) return send({ t: "error", code: "hello_first", message: "Say hello first." });
      if (frame.t === "ping") return send({ t: "pong" });
      if (frame.t === "identify") {
        conversation.identity = frame.token;
        return send({ t: "ack", ref: frame.ref });
      }
      if (frame.t === "stop") return send({ t: "ack", ref: frame.ref });
      if (frame.t === "rate") return send({ t: "ack", ref: frame.ref });
      const event = frame.event;
      if (event.type === "confirm" || event.type === "decline") {
        const proposal = conversation.proposals.get(event.proposalId);
        if (!proposal || proposal.state !== "proposed") {
          return send({ t: "error", ref: frame.ref, code: "proposal_closed", message: "This request was already decided." });
        }
        send({ t: "ack", ref: frame.ref });
        if (event.type === "decline") {
          proposal.state = "declined";
          emit({ type: "outcome", id: nextId("m"), proposalId: proposal.id, state: "declined", message: "Nothing was changed." });
          emit({ type: "text", id: nextId("m"), from: "agent", text: `OK, I left ${proposal.orderId} as it is.` });
          return;
        }
        const editable = new Set(proposal.review.fields.filter((f) => f.editable).map((f) => f.path));
        const edits = event.edits ?? {};
        const bad = Object.keys(edits).find((path) => !editable.has(path));
        if (bad) return send({ t: "error", ref: frame.ref, code: "edit_not_allowed", path: bad, message: "That field cannot be changed." });
        proposal.state = "running";
        emit({ ...proposal.review, id: nextId("m"), state: "running" });
        const reason = edits["/reason"] ?? "changed_mind";
        const note = edits["/note"] ?? "";
        setTimeout(() => {
          proposal.state = "applied";
          emit({
            type: "outcome",
            id: nextId("m"),
            proposalId: proposal.id,
            state: "applied",
            message: `Order ${proposal.orderId} is cancelled.`,
            receipt: [
              { label: "Order", value: proposal.orderId },
              { label: "Reason", value: REASONS.find((r) => r.value === reason)?.label ?? reason },
              ...(note ? [{ label: "Note", value: note }] : []),
              { label: "Refund", value: "€49.90 to card ending 4242" },
            ],
          });
          emit({ type: "text", id: nextId("m"), from: "agent", text: `Done: **${proposal.orderId}** is cancelled and the refund is on its way.` });
        }, server.delayMs);
        return;
      }
      if (event.type === "answer") {
        send({ t: "ack", ref: frame.ref });
        emit({ type: "text", id: nextId("m"), from: "agent", text: event.action === "accept" ? "Thanks, I have what I need." : "No problem." });
        return;
      }
      send({ t: "ack", ref: frame.ref });
      emit({ type: "text", id: nextId("m"), from: "customer", text: event.text });
      typing(true);
      setTimeout(() => reply(event.text), server.delayMs);
    });
    socket.on("close", () => conversation?.sockets.delete(socket));

    function reply(text: string) {
      const order = /SO-\d{4}/i.exec(text)?.[0]?.toUpperCase() ?? "SO-1002";
      if (/cancel/i.test(text)) {
        const id = nextId("prop-");
        const review: OutboundOf<"review"> = {
          type: "review",
          id: nextId("m"),
          proposalId: id,
          tool: "orders/cancel_order",
          title: `Cancel order ${order}`,
          state: "proposed",
          fields: [
            { path: "/orderId", label: "Order", display: "plain", value: order, editable: false },
            { path: "/card", label: "Refund to card", display: "last4", value: "4242", editable: false },
            { path: "/reason", label: "Reason", display: "plain", value: "changed_mind", editable: true, input: "select", options: REASONS },
            { path: "/note", label: "Note for the shop", display: "plain", value: "", editable: true, input: "text" },
          ],
        };
        conversation!.proposals.set(id, { id, orderId: order, state: "proposed", review });
        emit({ type: "text", id: nextId("m"), from: "agent", text: `I can cancel **${order}**. Please check the details and confirm.` });
        emit(review);
        return typing(false);
      }
      const callId = nextId("call-");
      const progress = (label: string, state: "start" | "end") => emit({ type: "progress", id: nextId("m"), callId, state, label });
      if (/^Book the fitting on/.test(text)) {
        emit({ type: "text", id: nextId("m"), from: "agent", text: `${text.replace(/^Book the fitting on/, "Noted: a fitting on")}. I'll hold it for you.` });
      } else if (/store/i.test(text)) {
        progress("Finding stores near you", "start");
        emit(result("map", "Stores near you", [
          { key: "name", label: "Store", display: "plain", role: "title" },
          { key: "lat", label: "Latitude", display: "plain", role: "latitude" },
          { key: "lon", label: "Longitude", display: "plain", role: "longitude" },
          { key: "address", label: "Address", display: "plain", role: "address" },
          { key: "hours", label: "Open", display: "plain" },
        ], [
          { name: "Ljubljana Center", lat: 46.0511, lon: 14.5051, address: "Čopova 14, Ljubljana", hours: "9–20" },
          { name: "BTC City", lat: 46.0658, lon: 14.5445, address: "Šmartinska 152, Ljubljana", hours: "9–21" },
          { name: "Kranj", lat: 46.2389, lon: 14.3556, address: "Koroška 2, Kranj", hours: "9–19" },
          { name: "Bled", lat: 46.3683, lon: 14.1146, address: "Ljubljanska 4, Bled", hours: "10–18" },
        ], [{ kind: "reply", label: "Directions", template: "How do I get to {name}?" }]));
        progress("Finding stores near you", "end");
      } else if (/slot|fitting|book/i.test(text)) {
        emit(result("choices", "Free fitting times", [
          { key: "slot", label: "Time", display: "plain", role: "title" },
          { key: "store", label: "Store", display: "plain", role: "subtitle" },
        ], [
          { slot: "Mon 10:00", store: "Ljubljana Center" },
          { slot: "Mon 14:30", store: "Ljubljana Center" },
          { slot: "Tue 09:00", store: "BTC City" },
        ], [{ kind: "reply", label: "Book", template: "Book the fitting on {slot} at {store}" }]));
      } else if (/track/i.test(text)) {
        emit(result("timeline", `Delivery of ${order}`, [
          { key: "step", label: "Step", display: "plain", role: "title" },
          { key: "state", label: "State", display: "plain", role: "status", statuses: { ok: "done", now: "current", later: "upcoming" } },
          { key: "when", label: "When", display: "plain", role: "time" },
        ], [
          { step: "Ordered", state: "ok", when: "2026-11-28T09:12:00Z" },
          { step: "Shipped", state: "ok", when: "2026-11-29T15:40:00Z" },
          { step: "Out for delivery", state: "now", when: "2026-12-02T07:05:00Z" },
          { step: "Delivered", state: "later", when: null },
        ]));
      } else if (/plan|compare/i.test(text)) {
        emit(result("comparison", "Care plans", [
          { key: "name", label: "Plan", display: "plain", role: "title" },
          { key: "price", label: "Price", display: "plain", role: "money", currency: { code: "EUR" } },
          { key: "repairs", label: "Free repairs", display: "plain" },
          { key: "tag", label: "", display: "plain", role: "badge" },
        ], [
          { name: "Basic", price: 0, repairs: "None", tag: null },
          { name: "Plus", price: 4.9, repairs: "1 per year", tag: "Popular" },
          { name: "Pro", price: 9.9, repairs: "Unlimited", tag: null },
        ], [{ kind: "reply", label: "Choose", template: "I'd like the {name} plan" }]));
      } else if (/invoice/i.test(text)) {
        emit({ type: "file", id: nextId("m"), name: `invoice-${order}.pdf`, mimeType: "application/pdf", size: 48213, url: `${gatewayUrl}/widget/app.html` });
      } else if (/pay/i.test(text)) {
        emit({
          ...result("page", "Pay for your order", [{ key: "url", label: "Payment page", display: "plain", role: "link" }], [{ url: `${siteUrl}/pay` }]),
          page: { label: "Pay now", display: "panel", origins: [siteUrl], urlKey: "url" },
        });
      } else if (/size|detail/i.test(text)) {
        emit({
          type: "question",
          id: nextId("m"),
          elicitationId: nextId("el-"),
          style: "form",
          message: "To find the right boot I need a few details.",
          fields: [
            { name: "size", title: "EU size", kind: "integer", required: true, minimum: 35, maximum: 50 },
            { name: "email", title: "Email for the reservation", kind: "string", required: true, format: "email" },
            { name: "wide", title: "Wide fit", kind: "boolean", required: false },
          ],
        });
      } else if (/SO-\d{4}|order|where/i.test(text)) {
        // The lookup "runs" for delayMs: the tool's static progress label shows meanwhile.
        progress("Looking up your order", "start");
        setTimeout(() => {
          emit(result("cards", `Order ${order}`, [
            { key: "image", label: "Photo", display: "plain", role: "image" },
            { key: "item", label: "Item", display: "plain", role: "title" },
            { key: "orderId", label: "Order", display: "plain", role: "subtitle" },
            { key: "status", label: "Status", display: "plain", role: "badge" },
            { key: "total", label: "Total", display: "plain", role: "money", currency: { key: "currency" } },
            { key: "placed", label: "Placed", display: "plain", role: "time" },
          ], [{ image: null, item: "Trail boots Alpina 42", orderId: order, status: "Shipped", total: 49.9, currency: "EUR", placed: "2026-11-28T09:12:00Z" }],
          [{ kind: "reply", label: "Cancel it", template: "Please cancel {orderId}" }]));
          progress("Looking up your order", "end");
          emit({ type: "text", id: nextId("m"), from: "agent", text: `Your order **${order}** has *shipped* and should arrive tomorrow.` });
          typing(false);
        }, server.delayMs);
        return;
      } else {
        emit({ type: "text", id: nextId("m"), from: "agent", text: "I can look up an order (for example SO-1002), cancel it, find stores or book a fitting." });
      }
      typing(false);
    }

    function result(
      layout: OutboundOf<"result">["layout"],
      title: string,
      columns: OutboundOf<"result">["columns"],
      items: OutboundOf<"result">["items"],
      actions?: OutboundOf<"result">["actions"],
    ): OutboundOf<"result"> {
      return { type: "result", id: nextId("m"), callId: nextId("call-"), layout, title, columns, items, ...(actions ? { actions } : {}) };
    }
  });

  async function close() {
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    await Promise.all([stop(gateway), stop(site)]);
  }
  return server;
}

function listen(server: Server) {
  return new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
}
function stop(server: Server) {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
}
function notFound(res: ServerResponse) {
  res.writeHead(404, { "content-type": "text/plain" });
  res.end("not found");
}

// `npx tsx tests/widget/protocolTestServer.ts` runs it by hand and prints the site's address.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const s = await startWidgetTestServer();
  console.log(`site ${s.siteUrl}\ngateway ${s.gatewayUrl}`);
}
