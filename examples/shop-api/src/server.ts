// The demo shop API: a real local HTTP service (node:http, no framework) that the example tool packages
// call through their declared egress host. Start it with startShopApi({ port: 0 }) → { url, close }.
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { HELP_ARTICLES, PLANS, PRODUCTS, SERVICES, STORES, type Order, type Service } from "./data.ts";
import { helpIndex, helpPage, productImage } from "./pages.ts";
import { renderPdf } from "./pdf.ts";
import { ShopState, type CustomerToken, type Operation } from "./state.ts";

export type ShopApiOptions = {
  /** 0 picks a free port. */
  port?: number;
  host?: string;
  /** Save state to this JSON file after every change and load it on start. Absent: memory only. */
  dbFile?: string;
  /** The service key tools send as `authorization: Bearer <key>` (the packages' SHOP_API_KEY secret). */
  apiKey?: string;
  /** How long a 202 (pending) operation takes to finish, in ms. Tests use a few ms. */
  pendingMs?: number;
  /** The origin that public links (images, help pages, store pages, labels) are built on; "self" is this server's own URL. */
  publicUrl?: string;
  /** The clock, for tests. */
  now?: () => number;
};

export type ShopApi = { url: string; apiKey: string; close: () => Promise<void> };

export const DEFAULT_API_KEY = "demo-shop-key";
export const DEFAULT_PUBLIC_URL = "https://shop.caplo.test";
const BODY_MAX = 64 * 1024;
const TOKEN_TTL_MS = 15 * 60_000;
const LEVELS = ["low", "standard", "high"] as const;
type Level = (typeof LEVELS)[number];

type Answer = { status: number; body: unknown; headers?: Record<string, string>; raw?: Buffer | string };
type Request = {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  body: unknown;
  rawBody: string;
  params: string[];
};
type Route = { method: string; pattern: RegExp; auth: "service" | "customer" | "public"; handle: (request: Request) => Answer | "hang" };

const json = (status: number, body: unknown, headers?: Record<string, string>): Answer => ({ status, body, ...(headers ? { headers } : {}) });
const error = (status: number, code: string, message: string, headers?: Record<string, string>): Answer => json(status, { error: code, message }, headers);
const ORDER_ID = /^SO-[0-9]{4}$/;

/** Canonical JSON (sorted keys) so that the same body in another key order is the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

function publicOrder(order: Order) {
  const { cancelBehaviour, notes, ...rest } = order;
  return { ...rest, itemCount: order.items.reduce((sum, line) => sum + line.quantity, 0), noteCount: notes.length };
}

function publicOperation(operation: Operation) {
  const { completesAt, completesAs, ...rest } = operation;
  return { ...rest, ...(operation.kind === "cancel_order" ? { orderId: operation.target } : {}) };
}

export async function startShopApi(options: ShopApiOptions = {}): Promise<ShopApi> {
  const apiKey = options.apiKey ?? DEFAULT_API_KEY;
  // Reassigned once the server listens when it is "self" (its own URL, known only then).
  let publicUrl = (options.publicUrl ?? DEFAULT_PUBLIC_URL).replace(/\/$/, "");
  const state = new ShopState({ dbFile: options.dbFile, now: options.now ?? Date.now, pendingMs: options.pendingMs ?? 4000 });
  const iso = () => new Date(state.now()).toISOString();

  /** Runs a write once per Idempotency-Key: the same request again gets the first answer, another request 422. */
  function idempotent(request: Request, run: () => Answer | { answer: Answer; recorded: Answer } | "hang"): Answer | "hang" {
    const key = request.headers["idempotency-key"];
    if (typeof key !== "string" || key.length === 0) return error(400, "idempotency_key_required", "Send an Idempotency-Key header with every write.");
    if (!/^[\x21-\x7E]{1,255}$/.test(key)) return error(400, "idempotency_key_invalid", "The Idempotency-Key must be 1 to 255 visible ASCII characters.");
    const fingerprint = createHash("sha256").update(`${request.method} ${request.path}\n${canonical(request.body)}`).digest("hex");
    const known = state.idempotency(key);
    if (known) {
      if (known.fingerprint !== fingerprint) {
        return error(422, "idempotency_key_reused", "This Idempotency-Key was already used with a different request.");
      }
      return json(known.status, known.body, { "idempotent-replayed": "true" });
    }
    const outcome = run();
    if (outcome === "hang") return "hang";
    // A handler may answer differently from what it recorded: the change applied but the answer failed.
    const { answer, recorded } = "recorded" in outcome ? outcome : { answer: outcome, recorded: outcome };
    state.remember(key, { fingerprint, status: recorded.status, body: recorded.body, done: true });
    state.save();
    return answer;
  }

  function requireCustomer(request: Request, customerId: string, need: { level: Level; maxAgeSeconds: number }): Answer | CustomerToken {
    const header = request.headers.authorization ?? "";
    const token = state.token(header.replace(/^Bearer\s+/i, ""));
    if (!token) return error(401, "invalid_token", "A customer access token is required.", { "www-authenticate": 'Bearer realm="shop", error="invalid_token"' });
    if (token.customerId !== customerId) return error(403, "forbidden", "This token belongs to another customer.");
    const ageSeconds = (state.now() - token.authTime) / 1000;
    if (LEVELS.indexOf(token.acr) < LEVELS.indexOf(need.level) || ageSeconds > need.maxAgeSeconds) {
      return error(401, "insufficient_user_authentication", "A more recent or stronger sign-in is required.", {
        "www-authenticate": `Bearer realm="shop", error="insufficient_user_authentication", error_description="A more recent or stronger sign-in is required", acr_values="${need.level}", max_age=${need.maxAgeSeconds}`,
      });
    }
    return token;
  }

  function cancelOrder(request: Request): Answer | "hang" {
    const orderId = request.params[0]!;
    const order = state.order(orderId);
    if (!order) return error(404, "order_not_found", `There is no order ${orderId}.`);
    const body = (request.body ?? {}) as { reason?: unknown };
    const reason = typeof body.reason === "string" ? body.reason.slice(0, 200) : "";
    return idempotent(request, () => {
      if (order.status !== "processing") {
        const why = order.status === "cancelled" ? "This order is already cancelled." : `This order has already ${order.status === "shipped" ? "shipped" : "been delivered"}; return it instead.`;
        state.addOperation({ kind: "cancel_order", target: orderId, idempotencyKey: key(request), status: "not_applied", reason: why });
        return json(409, { orderId, status: order.status, reason: why });
      }
      if (order.cancelBehaviour === "pending" || order.cancelBehaviour === "pending_refused") {
        const refused = order.cancelBehaviour === "pending_refused";
        const operation = state.addPending("cancel_order", orderId, key(request), refused ? "not_applied" : "applied", refused ? "The warehouse had already packed this order." : undefined);
        return json(202, { orderId, status: "pending", operationId: operation.operationId });
      }
      state.markCancelled(order);
      const applied = { orderId, status: "cancelled", refundAmount: order.total, currency: order.currency, refundCard: order.paymentCard, cancelledAt: order.cancelledAt, ...(reason ? { reason } : {}) };
      state.addOperation({ kind: "cancel_order", target: orderId, idempotencyKey: key(request), status: "applied", result: applied });
      if (order.cancelBehaviour === "error") {
        // The change is made, but the answer fails: a retry with the same key, or a status check, tells the truth.
        return { answer: error(500, "internal_error", "Something went wrong."), recorded: json(200, applied) };
      }
      if (order.cancelBehaviour === "hang") {
        state.remember(key(request), { fingerprint: fingerprintOf(request), status: 200, body: applied, done: true });
        state.save();
        return "hang";
      }
      return json(200, applied);
    });
  }

  const key = (request: Request) => String(request.headers["idempotency-key"]);
  const fingerprintOf = (request: Request) => createHash("sha256").update(`${request.method} ${request.path}\n${canonical(request.body)}`).digest("hex");

  function invoiceOf(invoiceId: string) {
    const order = state.order(invoiceId.replace(/^INV-/, "SO-"));
    if (!order || !/^INV-[0-9]{4}$/.test(invoiceId)) return undefined;
    const customer = state.customer(order.customerId)!;
    const total = order.total;
    const tax = Math.round((total - total / 1.22) * 100) / 100;
    return {
      invoiceId,
      orderId: order.id,
      customerName: customer.name,
      issuedAt: order.placedAt,
      lines: order.items.map((line) => ({ description: line.name, quantity: line.quantity, unitPrice: line.unitPrice, amount: Math.round(line.quantity * line.unitPrice * 100) / 100 })),
      subtotal: Math.round((total - tax) * 100) / 100,
      tax,
      total,
      currency: order.currency,
      status: order.status === "cancelled" ? "void" : "paid",
      pdfUrl: `${publicUrl}/invoices/${invoiceId}.pdf`,
    };
  }

  function trackingOf(order: Order) {
    const steps = ["Order placed", "Packed", "Shipped", "Out for delivery", "Delivered"];
    const reached = { processing: 1, shipped: 3, delivered: 5, cancelled: 1 }[order.status];
    const placed = Date.parse(order.placedAt);
    const events = steps.map((label, index) => ({
      step: index + 1,
      label,
      status: index < reached ? "completed" : index === reached && order.status !== "cancelled" ? "in_progress" : "pending",
      at: index < reached ? new Date(placed + index * 20 * 3_600_000).toISOString() : null,
      location: index === 2 || index === 3 ? "Ljubljana sorting centre" : index === 4 ? "Delivered to the door" : "Caplo warehouse",
    }));
    if (order.status === "cancelled") {
      events.splice(1, events.length - 1, { step: 2, label: "Cancelled", status: "failed", at: order.cancelledAt ?? null, location: "Caplo warehouse" });
    }
    return { orderId: order.id, status: order.status, carrier: order.carrier ?? null, trackingNumber: order.trackingNumber ?? null, events };
  }

  const routes: Route[] = [
    { method: "GET", pattern: /^\/health$/, auth: "public", handle: () => json(200, { ok: true }) },
    {
      method: "GET", pattern: /^\/orders$/, auth: "service",
      handle: ({ query }) => {
        const email = query.get("email");
        const customerId = query.get("customerId") ?? (email ? state.customerByEmail(email)?.id : undefined);
        if (!customerId) return error(400, "customer_required", "Give customerId or email.");
        if (!state.customer(customerId)) return error(404, "customer_not_found", "No customer matches.");
        const status = query.get("status");
        const orders = state.ordersOf(customerId).filter((order) => !status || order.status === status);
        return json(200, { customerId, orders: orders.map(publicOrder) });
      },
    },
    {
      method: "GET", pattern: /^\/orders\/([^/]+)$/, auth: "service",
      handle: ({ params }) => {
        const order = state.order(params[0]!);
        return order ? json(200, publicOrder(order)) : error(404, "order_not_found", `There is no order ${params[0]}.`);
      },
    },
    {
      method: "GET", pattern: /^\/orders\/([^/]+)\/tracking$/, auth: "service",
      handle: ({ params }) => {
        const order = state.order(params[0]!);
        return order ? json(200, trackingOf(order)) : error(404, "order_not_found", `There is no order ${params[0]}.`);
      },
    },
    { method: "POST", pattern: /^\/orders\/([^/]+)\/cancel$/, auth: "service", handle: cancelOrder },
    {
      method: "POST", pattern: /^\/orders\/([^/]+)\/notes$/, auth: "service",
      handle: (request) => {
        const order = state.order(request.params[0]!);
        if (!order) return error(404, "order_not_found", `There is no order ${request.params[0]}.`);
        const text = (request.body as { text?: unknown } | undefined)?.text;
        if (typeof text !== "string" || text.trim().length === 0 || text.length > 500) return error(400, "text_invalid", "A note is 1 to 500 characters.");
        return idempotent(request, () => {
          const note = { at: iso(), text: text.trim() };
          order.notes.push(note);
          state.addOperation({ kind: "add_note", target: order.id, idempotencyKey: key(request), status: "applied" });
          return json(201, { orderId: order.id, noteCount: order.notes.length, addedAt: note.at });
        });
      },
    },
    {
      method: "GET", pattern: /^\/operations$/, auth: "service",
      handle: ({ query }) => {
        const idKey = query.get("key");
        const operationId = query.get("operation");
        if (!idKey && !operationId) return error(400, "lookup_required", "Give key (the Idempotency-Key) or operation (the operation id).");
        const operation = operationId ? state.operation(operationId) : state.operationByKey(idKey!);
        if (!operation || (idKey && operation.idempotencyKey !== idKey)) return error(404, "operation_not_found", "No operation matches.");
        return json(200, publicOperation(operation));
      },
    },
    {
      method: "GET", pattern: /^\/operations\/([^/]+)$/, auth: "service",
      handle: ({ params }) => {
        const operation = state.operation(params[0]!);
        return operation ? json(200, publicOperation(operation)) : error(404, "operation_not_found", "No operation matches.");
      },
    },
    {
      method: "GET", pattern: /^\/slots$/, auth: "service",
      handle: ({ query }) => {
        const service = query.get("service");
        if (service && !(SERVICES as readonly string[]).includes(service)) return error(400, "service_invalid", `service is one of ${SERVICES.join(", ")}.`);
        const storeId = query.get("storeId") ?? undefined;
        const date = query.get("date");
        const slots = state
          .slots({ ...(storeId ? { storeId } : {}), ...(service ? { service: service as Service } : {}) })
          .filter((slot) => slot.available && (!date || slot.start.startsWith(date)));
        const limit = Math.min(Number(query.get("limit") ?? 10) || 10, 50);
        return json(200, { slots: slots.slice(0, limit) });
      },
    },
    {
      method: "POST", pattern: /^\/slots\/([^/]+)\/book$/, auth: "service",
      handle: (request) => {
        const slot = state.slot(request.params[0]!);
        if (!slot) return error(404, "slot_not_found", "There is no such appointment slot.");
        const body = (request.body ?? {}) as { customerName?: unknown; reminder?: unknown };
        const reminder = body.reminder ?? "email";
        if (reminder !== "email" && reminder !== "sms" && reminder !== "none") return error(400, "reminder_invalid", "reminder is email, sms or none.");
        const customerName = typeof body.customerName === "string" ? body.customerName.slice(0, 80) : "Guest";
        return idempotent(request, () => {
          if (!slot.available) {
            state.addOperation({ kind: "book_slot", target: slot.slotId, idempotencyKey: key(request), status: "not_applied", reason: "slot taken" });
            return json(409, { slotId: slot.slotId, reason: "That time is no longer available. Please pick another." });
          }
          const booking = { bookingId: state.nextId("BK-"), slotId: slot.slotId, customerName, reminder, service: slot.service, storeId: slot.storeId, start: slot.start, bookedAt: iso() };
          state.addBooking(booking);
          const result = { ...booking, storeName: slot.storeName, status: "booked" };
          state.addOperation({ kind: "book_slot", target: slot.slotId, idempotencyKey: key(request), status: "applied", result });
          return json(200, result);
        });
      },
    },
    {
      method: "GET", pattern: /^\/returns$/, auth: "service",
      handle: ({ query }) => {
        const orderId = query.get("orderId") ?? undefined;
        const customerId = query.get("customerId") ?? undefined;
        if (!orderId && !customerId) return error(400, "lookup_required", "Give orderId or customerId.");
        const returns = state.returns({ ...(orderId ? { orderId } : {}), ...(customerId ? { customerId } : {}) });
        return json(200, { returns: returns.map((entry) => ({ ...entry, labelUrl: `${publicUrl}${entry.labelUrl}` })) });
      },
    },
    {
      method: "POST", pattern: /^\/returns$/, auth: "service",
      handle: (request) => {
        const body = (request.body ?? {}) as { orderId?: unknown; reason?: unknown };
        if (typeof body.orderId !== "string" || !ORDER_ID.test(body.orderId)) return error(400, "order_id_invalid", "orderId is an order number such as SO-1004.");
        if (typeof body.reason !== "string" || body.reason.length === 0 || body.reason.length > 200) return error(400, "reason_invalid", "reason is 1 to 200 characters.");
        const order = state.order(body.orderId);
        if (!order) return error(404, "order_not_found", `There is no order ${body.orderId}.`);
        const reason = body.reason;
        return idempotent(request, () => {
          if (order.status !== "delivered") {
            return json(409, { orderId: order.id, reason: "Only delivered orders can be returned." });
          }
          const returnId = state.nextId("RT-");
          const entry = { returnId, orderId: order.id, customerId: order.customerId, reason, status: "requested" as const, createdAt: iso(), labelUrl: `/returns/${returnId}/label` };
          state.addReturn(entry);
          state.addOperation({ kind: "create_return", target: order.id, idempotencyKey: key(request), status: "applied" });
          return json(201, { ...entry, labelUrl: `${publicUrl}${entry.labelUrl}` });
        });
      },
    },
    {
      method: "GET", pattern: /^\/stores$/, auth: "service",
      handle: ({ query }) => {
        const city = query.get("city")?.toLowerCase();
        const stores = STORES.filter((store) => !city || store.city.toLowerCase() === city);
        return json(200, { stores: stores.map((store) => ({ ...store, url: `${publicUrl}${store.url}` })) });
      },
    },
    { method: "GET", pattern: /^\/plans$/, auth: "service", handle: () => json(200, { currency: "EUR", plans: PLANS }) },
    {
      method: "GET", pattern: /^\/products$/, auth: "service",
      handle: ({ query }) => {
        const words = (query.get("q") ?? "").toLowerCase().split(/\s+/).filter(Boolean);
        const category = query.get("category");
        const products = PRODUCTS.filter(
          (product) =>
            (!category || product.category === category) &&
            words.every((word) => `${product.name} ${product.description} ${product.category}`.toLowerCase().includes(word)),
        );
        return json(200, {
          products: products.map(({ colour, ...product }) => ({
            ...product,
            imageUrl: `${publicUrl}/images/${product.productId}.svg`,
            url: `${publicUrl}/products/${product.productId}`,
          })),
        });
      },
    },
    {
      method: "GET", pattern: /^\/invoices\/(INV-[0-9]{4})\.pdf$/, auth: "service",
      handle: ({ params }) => {
        const invoice = invoiceOf(params[0]!);
        if (!invoice) return error(404, "invoice_not_found", `There is no invoice ${params[0]}.`);
        const pdf = renderPdf(`Invoice ${invoice.invoiceId}`, [
          { text: "Caplo demo shop", size: 18, bold: true },
          { text: `Invoice ${invoice.invoiceId} for order ${invoice.orderId}`, size: 13, bold: true },
          { text: `Issued ${invoice.issuedAt.slice(0, 10)} to ${invoice.customerName}` },
          { text: "" },
          ...invoice.lines.map((line) => ({ text: `${line.quantity} x ${line.description}  ${line.amount.toFixed(2)} ${invoice.currency}` })),
          { text: "" },
          { text: `Subtotal ${invoice.subtotal.toFixed(2)} ${invoice.currency}` },
          { text: `VAT 22% ${invoice.tax.toFixed(2)} ${invoice.currency}` },
          { text: `Total ${invoice.total.toFixed(2)} ${invoice.currency} (${invoice.status})`, bold: true },
        ]);
        return { status: 200, body: null, raw: pdf, headers: { "content-type": "application/pdf", "content-disposition": `inline; filename="${invoice.invoiceId}.pdf"` } };
      },
    },
    {
      method: "GET", pattern: /^\/invoices\/([^/]+)$/, auth: "service",
      handle: ({ params }) => {
        const invoice = invoiceOf(params[0]!);
        return invoice ? json(200, invoice) : error(404, "invoice_not_found", `There is no invoice ${params[0]}.`);
      },
    },
    {
      method: "GET", pattern: /^\/help-articles$/, auth: "service",
      handle: ({ query }) => {
        const words = (query.get("q") ?? "").toLowerCase().split(/\s+/).filter(Boolean);
        const articles = HELP_ARTICLES.filter((article) => words.length === 0 || words.some((word) => `${article.topic} ${article.title} ${article.summary}`.toLowerCase().includes(word)));
        return json(200, { articles: articles.map(({ body, ...article }) => ({ ...article, url: `${publicUrl}/help/${article.topic}` })) });
      },
    },
    { method: "GET", pattern: /^\/help$/, auth: "public", handle: () => ({ status: 200, body: null, raw: helpIndex(), headers: { "content-type": "text/html; charset=utf-8" } }) },
    {
      method: "GET", pattern: /^\/help\/([a-z-]+)$/, auth: "public",
      handle: ({ params }) => {
        const article = HELP_ARTICLES.find((entry) => entry.topic === params[0]);
        if (!article) return { status: 404, body: null, raw: "<!doctype html><title>Not found</title><p>No such help article.</p>", headers: { "content-type": "text/html; charset=utf-8" } };
        return { status: 200, body: null, raw: helpPage(article), headers: { "content-type": "text/html; charset=utf-8" } };
      },
    },
    {
      method: "GET", pattern: /^\/images\/([A-Z0-9-]+)\.svg$/, auth: "public",
      handle: ({ params }) => {
        const product = PRODUCTS.find((entry) => entry.productId === params[0]);
        if (!product) return error(404, "image_not_found", "No such image.");
        return { status: 200, body: null, raw: productImage(product), headers: { "content-type": "image/svg+xml", "cache-control": "public, max-age=3600" } };
      },
    },
    {
      method: "POST", pattern: /^\/auth\/token$/, auth: "service",
      handle: ({ body }) => {
        // Token exchange: the trusted tool vouches for a customer Caplo verified, with how and when.
        const { customerId, acr, authTime } = (body ?? {}) as { customerId?: unknown; acr?: unknown; authTime?: unknown };
        if (typeof customerId !== "string" || !state.customer(customerId)) return error(400, "customer_invalid", "customerId must name a customer.");
        if (typeof acr !== "string" || !(LEVELS as readonly string[]).includes(acr)) return error(400, "acr_invalid", "acr is low, standard or high.");
        const signedInAt = typeof authTime === "string" ? Date.parse(authTime) : Number.NaN;
        if (!Number.isFinite(signedInAt) || signedInAt > state.now() + 60_000) return error(400, "auth_time_invalid", "authTime is an ISO 8601 time, not in the future.");
        const token = `cus_${randomBytes(18).toString("base64url")}`;
        state.addToken(token, { customerId, acr: acr as Level, authTime: signedInAt, expiresAt: state.now() + TOKEN_TTL_MS });
        state.save();
        return json(200, { access_token: token, token_type: "Bearer", expires_in: TOKEN_TTL_MS / 1000 });
      },
    },
    {
      method: "GET", pattern: /^\/customers\/([^/]+)$/, auth: "customer",
      handle: (request) => {
        const customerId = request.params[0]!;
        const token = requireCustomer(request, customerId, { level: "standard", maxAgeSeconds: 86_400 });
        if ("status" in token) return token;
        return json(200, state.customer(customerId));
      },
    },
    {
      method: "PUT", pattern: /^\/customers\/([^/]+)\/address$/, auth: "customer",
      handle: (request) => {
        const customerId = request.params[0]!;
        const token = requireCustomer(request, customerId, { level: "high", maxAgeSeconds: 300 });
        if ("status" in token) return token;
        const body = (request.body ?? {}) as Record<string, unknown>;
        for (const field of ["street", "city", "postalCode"] as const) {
          const value = body[field];
          if (typeof value !== "string" || value.trim().length === 0 || value.length > 100) return error(400, `${field}_invalid`, `${field} is 1 to 100 characters.`);
        }
        return idempotent(request, () => {
          const customer = state.customer(customerId)!;
          customer.address = { street: String(body.street).trim(), city: String(body.city).trim(), postalCode: String(body.postalCode).trim(), country: customer.address.country };
          const result = { customerId, address: customer.address, updatedAt: iso() };
          state.addOperation({ kind: "update_address", target: customerId, idempotencyKey: key(request), status: "applied", result });
          return json(200, result);
        });
      },
    },
  ];

  async function readBody(incoming: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of incoming) {
      size += (chunk as Buffer).length;
      if (size > BODY_MAX) throw Object.assign(new Error("body too large"), { code: "body_too_large" });
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks).toString("utf8");
  }

  function send(response: ServerResponse, answer: Answer): void {
    const headers: Record<string, string> = { "cache-control": "no-store", ...answer.headers };
    if (answer.raw !== undefined) {
      response.writeHead(answer.status, headers).end(answer.raw);
      return;
    }
    response.writeHead(answer.status, { "content-type": "application/json; charset=utf-8", ...headers }).end(JSON.stringify(answer.body));
  }

  async function handle(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(incoming.url ?? "/", "http://shop.local");
    const method = incoming.method ?? "GET";
    const matches = routes.filter((route) => route.pattern.test(url.pathname));
    const route = matches.find((candidate) => candidate.method === method);
    if (!route) {
      send(response, matches.length ? error(405, "method_not_allowed", `${method} is not allowed here.`) : error(404, "not_found", `No endpoint ${url.pathname}.`));
      return;
    }
    if (route.auth === "service" && incoming.headers.authorization !== `Bearer ${apiKey}`) {
      send(response, error(401, "unauthorized", "Send the shop API key as a bearer token.", { "www-authenticate": 'Bearer realm="shop"' }));
      return;
    }
    let rawBody = "";
    let body: unknown;
    try {
      rawBody = await readBody(incoming);
      body = rawBody.length ? JSON.parse(rawBody) : undefined;
    } catch (cause) {
      const tooLarge = (cause as { code?: string }).code === "body_too_large";
      send(response, tooLarge ? error(413, "body_too_large", "The body is over 64 KiB.") : error(400, "invalid_json", "The body is not valid JSON."));
      return;
    }
    state.settle();
    const params = route.pattern.exec(url.pathname)!.slice(1).map((part) => decodeURIComponent(part));
    const answer = route.handle({ method, path: url.pathname, query: url.searchParams, headers: incoming.headers, body, rawBody, params });
    if (answer === "hang") return; // never answered: the caller's timeout decides
    send(response, answer);
  }

  const server = createServer((incoming, response) => {
    handle(incoming, response).catch((cause: unknown) => {
      if (!response.headersSent) send(response, error(500, "internal_error", cause instanceof Error ? cause.message : "Unexpected error."));
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  if (options.publicUrl === "self") publicUrl = url;
  return {
    url,
    apiKey,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
