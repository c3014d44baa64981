// The demo shop API's endpoints and its idempotency rules, over real HTTP on a free port.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startShopApi, type ShopApi } from "./server.ts";

const START = Date.UTC(2026, 11, 2, 12, 0, 0);
let now = START;
let shop: ShopApi;
const auth = { authorization: "Bearer demo-shop-key" };

async function call(method: string, path: string, options: { body?: unknown; key?: string; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${shop.url}${path}`, {
    method,
    headers: {
      ...auth,
      ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(options.key !== undefined ? { "idempotency-key": options.key } : {}),
      ...options.headers,
    },
    ...(options.body !== undefined ? { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) } : {}),
  });
  const type = response.headers.get("content-type") ?? "";
  const body = type.includes("json") ? ((await response.json()) as Record<string, any>) : undefined;
  return { status: response.status, headers: response.headers, body: body ?? {}, response };
}

beforeEach(async () => {
  now = START;
  shop = await startShopApi({ port: 0, pendingMs: 1000, now: () => now });
});
afterEach(async () => {
  await shop.close();
});

describe("orders", () => {
  it("returns an order by id without internal fields", async () => {
    const { status, body } = await call("GET", "/orders/SO-1001");
    expect(status).toBe(200);
    expect(body).toMatchObject({ id: "SO-1001", customerId: "CUS-1001", status: "processing", total: 39.8, currency: "EUR", itemCount: 2 });
    expect(body).not.toHaveProperty("cancelBehaviour");
  });

  it("answers 404 with a code for an unknown order", async () => {
    const { status, body } = await call("GET", "/orders/SO-9999");
    expect(status).toBe(404);
    expect(body.error).toBe("order_not_found");
  });

  it("lists a customer's orders by id or by email, and filters by status", async () => {
    const byId = await call("GET", "/orders?customerId=CUS-1001");
    expect(byId.body.orders.map((order: { id: string }) => order.id)).toEqual(["SO-1001", "SO-1002", "SO-1003", "SO-1004"]);
    const byEmail = await call("GET", "/orders?email=ANA.NOVAK@example.com&status=shipped");
    expect(byEmail.body.orders.map((order: { id: string }) => order.id)).toEqual(["SO-1003"]);
    expect((await call("GET", "/orders")).body.error).toBe("customer_required");
    expect((await call("GET", "/orders?customerId=CUS-0000")).status).toBe(404);
  });

  it("refuses every service endpoint without the API key", async () => {
    const response = await fetch(`${shop.url}/orders/SO-1001`);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toContain("Bearer");
    const wrong = await fetch(`${shop.url}/orders/SO-1001`, { headers: { authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
  });

  it("answers 404 for an unknown path and 405 for a wrong method", async () => {
    expect((await call("GET", "/nothing")).body.error).toBe("not_found");
    expect((await call("DELETE", "/orders/SO-1001")).status).toBe(405);
  });

  it("refuses a body that is not JSON", async () => {
    const { status, body } = await call("POST", "/orders/SO-1001/cancel", { body: "{nope", key: "k" });
    expect(status).toBe(400);
    expect(body.error).toBe("invalid_json");
  });

  it("shows tracking events as completed, in progress, pending or failed", async () => {
    const shipped = await call("GET", "/orders/SO-1003/tracking");
    expect(shipped.body.carrier).toBe("PostExpress");
    expect(shipped.body.events.map((event: { status: string }) => event.status)).toEqual(["completed", "completed", "completed", "in_progress", "pending"]);
    const cancelled = await call("GET", "/orders/SO-1006/tracking");
    expect(cancelled.body.events.map((event: { label: string; status: string }) => `${event.label}:${event.status}`)).toEqual(["Order placed:completed", "Cancelled:failed"]);
  });

  it("adds a note to an order once per idempotency key", async () => {
    const first = await call("POST", "/orders/SO-1003/notes", { body: { text: "Leave at the door" }, key: "note-1" });
    expect(first.status).toBe(201);
    const again = await call("POST", "/orders/SO-1003/notes", { body: { text: "Leave at the door" }, key: "note-1" });
    expect(again.body).toEqual(first.body);
    expect((await call("GET", "/orders/SO-1003")).body.noteCount).toBe(1);
    expect((await call("POST", "/orders/SO-1003/notes", { body: { text: "" }, key: "note-2" })).body.error).toBe("text_invalid");
  });
});

describe("cancellations and their outcomes", () => {
  it("applies a cancellation of a processing order at once (200)", async () => {
    const { status, body } = await call("POST", "/orders/SO-1001/cancel", { body: { reason: "Changed my mind" }, key: "c-1" });
    expect(status).toBe(200);
    expect(body).toMatchObject({ orderId: "SO-1001", status: "cancelled", refundAmount: 39.8, refundCard: "**** **** **** 4242" });
    expect((await call("GET", "/orders/SO-1001")).body.status).toBe("cancelled");
  });

  it("refuses to cancel a shipped order with a reason (409) and changes nothing", async () => {
    const { status, body } = await call("POST", "/orders/SO-1003/cancel", { key: "c-2" });
    expect(status).toBe(409);
    expect(body.reason).toMatch(/shipped/);
    expect((await call("GET", "/orders/SO-1003")).body.status).toBe("shipped");
    const operation = await call("GET", "/operations?key=c-2");
    expect(operation.body.status).toBe("not_applied");
  });

  it("accepts a slow cancellation as pending (202) and finishes it after the configured delay", async () => {
    const accepted = await call("POST", "/orders/SO-1002/cancel", { key: "c-3" });
    expect(accepted.status).toBe(202);
    expect(accepted.body.operationId).toMatch(/^op_/);
    const during = await call("GET", `/operations?operation=${accepted.body.operationId}`);
    expect(during.body).toMatchObject({ status: "pending", orderId: "SO-1002", idempotencyKey: "c-3" });
    expect((await call("GET", "/orders/SO-1002")).body.status).toBe("processing");
    now += 1000;
    const after = await call("GET", `/operations?key=c-3&operation=${accepted.body.operationId}`);
    expect(after.body.status).toBe("applied");
    expect(after.body.result).toMatchObject({ orderId: "SO-1002", status: "cancelled", refundAmount: 89, currency: "EUR" });
    expect((await call("GET", "/orders/SO-1002")).body.status).toBe("cancelled");
  });

  it("can finish a pending cancellation as not applied", async () => {
    const accepted = await call("POST", "/orders/SO-1007/cancel", { key: "c-4" });
    expect(accepted.status).toBe(202);
    now += 1000;
    const after = await call("GET", `/operations/${accepted.body.operationId}`);
    expect(after.body).toMatchObject({ status: "not_applied", reason: expect.stringMatching(/packed/) });
    expect((await call("GET", "/orders/SO-1007")).body.status).toBe("processing");
  });

  it("answers 500 for SO-1009 although the change applied; the key and the status check tell the truth", async () => {
    const failed = await call("POST", "/orders/SO-1009/cancel", { key: "c-5" });
    expect(failed.status).toBe(500);
    expect((await call("GET", "/operations?key=c-5")).body.status).toBe("applied");
    const retry = await call("POST", "/orders/SO-1009/cancel", { key: "c-5" });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
  });

  it("never answers a cancellation of SO-1010 (a hang), but applies it", async () => {
    const aborted = await fetch(`${shop.url}/orders/SO-1010/cancel`, {
      method: "POST",
      headers: { ...auth, "idempotency-key": "c-6" },
      signal: AbortSignal.timeout(300),
    }).then(
      () => "answered",
      (cause: Error) => cause.name,
    );
    expect(aborted).toBe("TimeoutError");
    expect((await call("GET", "/operations?key=c-6")).body.status).toBe("applied");
    expect((await call("GET", "/orders/SO-1010")).body.status).toBe("cancelled");
  });

  it("answers the operations endpoint 400 without a lookup and 404 for an unknown key or a mismatched pair", async () => {
    expect((await call("GET", "/operations")).body.error).toBe("lookup_required");
    expect((await call("GET", "/operations?key=never")).status).toBe(404);
    const accepted = await call("POST", "/orders/SO-1002/cancel", { key: "c-7" });
    expect((await call("GET", `/operations?key=other&operation=${accepted.body.operationId}`)).status).toBe(404);
    expect((await call("GET", "/operations/op_9999")).status).toBe(404);
  });
});

describe("idempotency keys", () => {
  it("requires a key on every write", async () => {
    const { status, body } = await call("POST", "/orders/SO-1001/cancel");
    expect(status).toBe(400);
    expect(body.error).toBe("idempotency_key_required");
    expect((await call("POST", "/orders/SO-1001/cancel", { key: "has space" })).body.error).toBe("idempotency_key_invalid");
    expect((await call("GET", "/orders/SO-1001")).body.status).toBe("processing");
  });

  it("applies a repeated key once and returns the first answer", async () => {
    const first = await call("POST", "/orders/SO-1001/cancel", { body: { reason: "a", extra: 1 }, key: "same" });
    // The same body in another key order is the same request.
    const second = await call("POST", "/orders/SO-1001/cancel", { body: { extra: 1, reason: "a" }, key: "same" });
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    // A new key for the same order now sees it cancelled: the first key applied the change once.
    const third = await call("POST", "/orders/SO-1001/cancel", { body: { reason: "a", extra: 1 }, key: "new" });
    expect(third.status).toBe(409);
  });

  it("refuses the same key with a different body or path (422) and changes nothing", async () => {
    await call("POST", "/orders/SO-1001/cancel", { body: { reason: "a" }, key: "k" });
    const otherBody = await call("POST", "/orders/SO-1001/cancel", { body: { reason: "b" }, key: "k" });
    expect(otherBody.status).toBe(422);
    expect(otherBody.body.error).toBe("idempotency_key_reused");
    const otherPath = await call("POST", "/orders/SO-1005/cancel", { body: { reason: "a" }, key: "k" });
    expect(otherPath.status).toBe(422);
    expect((await call("GET", "/orders/SO-1005")).body.status).toBe("processing");
  });

  it("replays a pending answer for a repeated key without starting a second operation", async () => {
    const first = await call("POST", "/orders/SO-1002/cancel", { key: "p" });
    const second = await call("POST", "/orders/SO-1002/cancel", { key: "p" });
    expect(second.status).toBe(202);
    expect(second.body.operationId).toBe(first.body.operationId);
  });
});

describe("appointments", () => {
  it("finds free slots in the five days after today, filtered by store, service and date", async () => {
    const { body } = await call("GET", "/slots?storeId=ST-LJ1&service=fitting&limit=50");
    expect(body.slots.length).toBeGreaterThan(0);
    for (const slot of body.slots) {
      expect(slot).toMatchObject({ storeId: "ST-LJ1", service: "fitting", available: true });
      expect(Date.parse(slot.start)).toBeGreaterThan(START);
      expect(Date.parse(slot.start)).toBeLessThan(START + 6 * 86_400_000);
    }
    const dated = await call("GET", "/slots?date=2026-12-04&limit=50");
    expect(dated.body.slots.every((slot: { start: string }) => slot.start.startsWith("2026-12-04"))).toBe(true);
    expect((await call("GET", "/slots?service=massage")).body.error).toBe("service_invalid");
  });

  it("books a slot once per key; the slot is then taken (409) for anyone else", async () => {
    const { body } = await call("GET", "/slots?storeId=ST-MB1&service=tailoring&limit=1");
    const slotId = body.slots[0].slotId as string;
    const booked = await call("POST", `/slots/${slotId}/book`, { body: { customerName: "Ana", reminder: "sms" }, key: "b-1" });
    expect(booked.status).toBe(200);
    expect(booked.body).toMatchObject({ slotId, status: "booked", reminder: "sms", storeName: "Caplo Shop Maribor" });
    const replay = await call("POST", `/slots/${slotId}/book`, { body: { customerName: "Ana", reminder: "sms" }, key: "b-1" });
    expect(replay.body.bookingId).toBe(booked.body.bookingId);
    const taken = await call("POST", `/slots/${slotId}/book`, { body: { customerName: "Marko", reminder: "email" }, key: "b-2" });
    expect(taken.status).toBe(409);
    expect(taken.body.reason).toMatch(/no longer available/);
    const after = await call("GET", "/slots?storeId=ST-MB1&service=tailoring&limit=50");
    expect(after.body.slots.some((slot: { slotId: string }) => slot.slotId === slotId)).toBe(false);
  });

  it("refuses an unknown slot and a bad reminder", async () => {
    expect((await call("POST", "/slots/SL-NOPE/book", { key: "b-3" })).status).toBe(404);
    const { body } = await call("GET", "/slots?limit=1");
    expect((await call("POST", `/slots/${body.slots[0].slotId}/book`, { body: { reminder: "pigeon" }, key: "b-4" })).body.error).toBe("reminder_invalid");
  });
});

describe("returns, stores, plans, products, invoices and help", () => {
  it("lists returns and creates one for a delivered order only", async () => {
    const listed = await call("GET", "/returns?customerId=CUS-1001");
    expect(listed.body.returns).toHaveLength(1);
    expect(listed.body.returns[0].labelUrl).toBe("https://shop.caplo.test/returns/RT-2001/label");
    const created = await call("POST", "/returns", { body: { orderId: "SO-1004", reason: "Too small" }, key: "r-1" });
    expect(created.status).toBe(201);
    expect(created.body.status).toBe("requested");
    expect((await call("GET", "/returns?orderId=SO-1004")).body.returns).toHaveLength(2);
    const refused = await call("POST", "/returns", { body: { orderId: "SO-1001", reason: "Too small" }, key: "r-2" });
    expect(refused.status).toBe(409);
    expect((await call("POST", "/returns", { body: { orderId: "nope", reason: "x" }, key: "r-3" })).body.error).toBe("order_id_invalid");
    expect((await call("GET", "/returns")).body.error).toBe("lookup_required");
  });

  it("lists stores with coordinates, addresses and https pages", async () => {
    const { body } = await call("GET", "/stores");
    expect(body.stores).toHaveLength(5);
    for (const store of body.stores) {
      expect(store.latitude).toBeGreaterThan(45);
      expect(store.longitude).toBeGreaterThan(13);
      expect(store.address).toMatch(/\d{4} /);
      expect(store.url).toMatch(/^https:\/\/shop\.caplo\.test\/stores\//);
    }
    expect((await call("GET", "/stores?city=maribor")).body.stores.map((store: { storeId: string }) => store.storeId)).toEqual(["ST-MB1"]);
  });

  it("lists plans with prices in one currency", async () => {
    const { body } = await call("GET", "/plans");
    expect(body.currency).toBe("EUR");
    expect(body.plans.map((plan: { planId: string }) => plan.planId)).toEqual(["basic", "plus", "premium"]);
  });

  it("searches products, each with an https image, a price and a currency", async () => {
    const { body } = await call("GET", "/products?q=wool");
    expect(body.products.map((product: { productId: string }) => product.productId)).toEqual(["P-HOOD-GRY", "P-CAP-NVY", "P-SCF-RED"]);
    for (const product of body.products) {
      expect(product.imageUrl).toMatch(/^https:\/\/shop\.caplo\.test\/images\/P-[A-Z-]+\.svg$/);
      expect(typeof product.price).toBe("number");
      expect(product.currency).toMatch(/^[A-Z]{3}$/);
    }
    expect((await call("GET", "/products?category=shoes")).body.products).toHaveLength(1);
    const image = await fetch(`${shop.url}/images/P-TEE-BLK.svg`);
    expect(image.headers.get("content-type")).toBe("image/svg+xml");
    expect(await image.text()).toMatch(/^<svg /);
  });

  it("returns an invoice as JSON and as a valid PDF", async () => {
    const invoice = await call("GET", "/invoices/INV-1004");
    expect(invoice.body).toMatchObject({ invoiceId: "INV-1004", orderId: "SO-1004", total: 53, currency: "EUR", status: "paid", pdfUrl: "https://shop.caplo.test/invoices/INV-1004.pdf" });
    const pdf = await fetch(`${shop.url}/invoices/INV-1004.pdf`, { headers: auth });
    expect(pdf.headers.get("content-type")).toBe("application/pdf");
    const bytes = Buffer.from(await pdf.arrayBuffer());
    expect(bytes.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    const text = bytes.toString("latin1");
    expect(text.trimEnd().endsWith("%%EOF")).toBe(true);
    // The cross-reference table points at each object exactly.
    const xrefAt = Number(/startxref\n(\d+)/.exec(text)![1]);
    expect(text.slice(xrefAt, xrefAt + 4)).toBe("xref");
    const offsets = [...text.slice(xrefAt).matchAll(/^(\d{10}) 00000 n $/gm)].map((match) => Number(match[1]));
    offsets.forEach((offset, index) => expect(text.slice(offset).startsWith(`${index + 1} 0 obj`)).toBe(true));
    expect(text).toContain("(Invoice INV-1004 for order SO-1004) Tj");
    expect((await call("GET", "/invoices/INV-9999")).status).toBe(404);
  });

  it("serves help articles as escaped HTML pages, and finds them by words", async () => {
    const found = await call("GET", "/help-articles?q=refund");
    expect(found.body.articles.map((article: { topic: string }) => article.topic)).toEqual(["returns"]);
    expect(found.body.articles[0].url).toBe("https://shop.caplo.test/help/returns");
    const page = await fetch(`${shop.url}/help/returns`);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    expect(html).toContain("<h1>Returns and refunds</h1>");
    expect((await fetch(`${shop.url}/help`)).status).toBe(200);
    expect((await fetch(`${shop.url}/help/nothing`)).status).toBe(404);
  });
});

describe("customer-scoped endpoints and step-up", () => {
  async function token(acr: string, authTime: number, customerId = "CUS-1001") {
    const { status, body } = await call("POST", "/auth/token", { body: { customerId, acr, authTime: new Date(authTime).toISOString() } });
    expect(status).toBe(200);
    return body.access_token as string;
  }

  it("exchanges a verified customer for a token and refuses bad exchanges", async () => {
    expect((await call("POST", "/auth/token", { body: { customerId: "CUS-0000", acr: "high", authTime: new Date(now).toISOString() } })).body.error).toBe("customer_invalid");
    expect((await call("POST", "/auth/token", { body: { customerId: "CUS-1001", acr: "max", authTime: new Date(now).toISOString() } })).body.error).toBe("acr_invalid");
    expect((await call("POST", "/auth/token", { body: { customerId: "CUS-1001", acr: "high", authTime: new Date(now + 3_600_000).toISOString() } })).body.error).toBe("auth_time_invalid");
  });

  it("shows a profile to its own customer only", async () => {
    const mine = await token("standard", now - 3_600_000);
    const profile = await call("GET", "/customers/CUS-1001", { headers: { authorization: `Bearer ${mine}` } });
    expect(profile.body.email).toBe("ana.novak@example.com");
    expect((await call("GET", "/customers/CUS-1002", { headers: { authorization: `Bearer ${mine}` } })).status).toBe(403);
    const none = await call("GET", "/customers/CUS-1001", { headers: { authorization: "Bearer cus_unknown" } });
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  it("answers an RFC 9470 challenge when the sign-in is not strong enough", async () => {
    const weak = await token("standard", now);
    const { status, headers } = await call("PUT", "/customers/CUS-1001/address", {
      body: { street: "Nova ulica 1", city: "Ljubljana", postalCode: "1000" },
      key: "a-1",
      headers: { authorization: `Bearer ${weak}` },
    });
    expect(status).toBe(401);
    expect(headers.get("www-authenticate")).toMatch(/^Bearer .*error="insufficient_user_authentication".*acr_values="high", max_age=300$/);
  });

  it("answers the challenge when a strong sign-in is older than 300 seconds, and accepts one at 300", async () => {
    const old = await token("high", now - 301_000);
    const body = { street: "Nova ulica 1", city: "Ljubljana", postalCode: "1000" };
    expect((await call("PUT", "/customers/CUS-1001/address", { body, key: "a-2", headers: { authorization: `Bearer ${old}` } })).status).toBe(401);
    const fresh = await token("high", now - 300_000);
    const updated = await call("PUT", "/customers/CUS-1001/address", { body, key: "a-3", headers: { authorization: `Bearer ${fresh}` } });
    expect(updated.status).toBe(200);
    expect(updated.body.address).toEqual({ street: "Nova ulica 1", city: "Ljubljana", postalCode: "1000", country: "SI" });
    const profile = await call("GET", "/customers/CUS-1001", { headers: { authorization: `Bearer ${fresh}` } });
    expect(profile.body.address.street).toBe("Nova ulica 1");
  });
});

describe("state", () => {
  it("starts from the same seed every time", async () => {
    const first = (await call("GET", "/orders?customerId=CUS-1002")).body;
    await shop.close();
    shop = await startShopApi({ port: 0, now: () => now });
    expect((await call("GET", "/orders?customerId=CUS-1002")).body).toEqual(first);
  });

  it("keeps changes and idempotency records in a JSON file across restarts", async () => {
    const dir = mkdtempSync(join(tmpdir(), "shop-api-"));
    try {
      const dbFile = join(dir, "shop.json");
      await shop.close();
      shop = await startShopApi({ port: 0, dbFile, now: () => now });
      const first = await call("POST", "/orders/SO-1005/cancel", { key: "persist" });
      expect(first.status).toBe(200);
      await shop.close();
      expect(JSON.parse(readFileSync(dbFile, "utf8")).idempotency.persist.status).toBe(200);
      shop = await startShopApi({ port: 0, dbFile, now: () => now });
      expect((await call("GET", "/orders/SO-1005")).body.status).toBe("cancelled");
      const replay = await call("POST", "/orders/SO-1005/cancel", { key: "persist" });
      expect(replay.body).toEqual(first.body);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the demo setup", () => {
  it("starts the shop with public links on its own address, and gives the packages' secrets, egress map and folders", async () => {
    const { startDemoShop } = await import("./demo.ts");
    const demo = await startDemoShop({ port: 0 });
    try {
      const port = new URL(demo.shop.url).port;
      expect(demo.egressResolve).toBe(`shop.caplo.test=127.0.0.1:${port}`);
      expect(demo.secrets).toEqual({ SHOP_API_KEY: "demo-shop-key", SHOP_API_URL: "http://shop.caplo.test" });
      expect(demo.packageDirs.map((dir) => dir.split("/").pop())).toContain("orders");
      const products = await fetch(`${demo.shop.url}/products?category=shoes`, { headers: auth }).then((response) => response.json() as Promise<{ products: { imageUrl: string }[] }>);
      expect(products.products[0]!.imageUrl).toBe(`${demo.shop.url}/images/P-SNK-WHT.svg`);
      expect((await fetch(products.products[0]!.imageUrl)).status).toBe(200);
    } finally {
      await demo.shop.close();
    }
  });
});
