// The demo tool packages: every caplo.yaml is valid, together they use every feature of the seeds, and
// each package works against the real demo shop API, called through the MCP SDK's Client as the runner
// calls it (call context in _meta), with outcomes, status checks, elicitation, files and step-up.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COLUMN_ROLES, EFFECT_META_KEY, EFFECT_OUTCOME_CAPABILITY, LAYOUTS, OPERATION_STATUS_CAPABILITY, STEP_UP_META_KEY, parseManifest, toolPolicies, type Manifest } from "@caplo/shared";
import { startShopApi, type ShopApi } from "../../examples/shop-api/src/index.ts";
import { DEMO_DIR, PACKAGES, manifestText, openSession, type Session } from "./harness.ts";

const SCHEMA_LINE = "# yaml-language-server: $schema=https://docs.caplo.si/schemas/caplo.schema.json";

function manifest(name: string): Manifest {
  const parsed = parseManifest(manifestText(name));
  if (!parsed.ok) throw new Error(`${name}/caplo.yaml: ${JSON.stringify(parsed.errors)}`);
  return parsed.manifest;
}

describe("demo package manifests", () => {
  it("there are eleven demo packages", () => {
    expect(PACKAGES).toEqual(["account", "appointments", "booking", "help", "invoices", "orders", "plans", "products", "returns", "stores", "tracking"]);
  });

  for (const name of PACKAGES) {
    it(`${name}: caplo.yaml opens with the schema line, parses, and names its folder, entry, stdio and fixtures`, () => {
      expect(manifestText(name).split("\n")[0]).toBe(SCHEMA_LINE);
      const parsed = parseManifest(manifestText(name));
      expect(parsed.ok ? [] : parsed.errors).toEqual([]);
      const m = manifest(name);
      expect(m.name).toBe(name);
      expect(existsSync(join(DEMO_DIR, name, m.entry))).toBe(true);
      expect(m.entry).toBe(m.type === "mcp" ? "src/server.ts" : "src/tool.ts");
      expect(existsSync(join(DEMO_DIR, name, "src", "stdio.ts"))).toBe(true);
      expect(JSON.parse(readFileSync(join(DEMO_DIR, name, "package.json"), "utf8")).name).toBe(name);
      expect(m.egress).toEqual(["shop.caplo.test"]);
      expect(readdirSync(join(DEMO_DIR, name, "tests")).filter((file) => file.endsWith(".json")).length).toBeGreaterThan(0);
    });
  }

  it("together use every layout, column role, display, input, confirmation, elicitation style, action kind and currency form", () => {
    const manifests = PACKAGES.map(manifest);
    const policies = manifests.flatMap((m) => toolPolicies(m));
    const presentations = policies.flatMap((policy) => (policy.presentation ? [policy.presentation] : []));
    const results = presentations.flatMap((p) => (p.result ? [p.result] : []));
    const columns = results.flatMap((result) => result.columns);
    const displays = [...presentations.flatMap((p) => p.fields.map((f) => f.display)), ...presentations.flatMap((p) => p.receipt?.fields.map((f) => f.display) ?? []), ...columns.map((c) => c.display)];

    expect(new Set(manifests.map((m) => m.type))).toEqual(new Set(["function", "mcp"]));
    expect(new Set(PACKAGES.map((name) => /^apiVersion: (\S+)/m.exec(manifestText(name))![1]))).toEqual(new Set(["v1", "v1.0", "v1.0.0"]));
    expect(new Set(results.map((result) => result.layout))).toEqual(new Set(LAYOUTS));
    expect(new Set(columns.flatMap((column) => (column.role ? [column.role] : [])))).toEqual(new Set(COLUMN_ROLES));
    expect(new Set(displays)).toEqual(new Set(["plain", "last4"]));
    const fields = presentations.flatMap((p) => p.fields);
    expect(fields.some((field) => field.editable && field.input === "select" && (field.options?.length ?? 0) >= 2)).toBe(true);
    expect(fields.some((field) => field.editable && field.input === "text")).toBe(true);
    expect(presentations.some((p) => p.receipt)).toBe(true);
    expect(new Set(policies.flatMap((policy) => (policy.effect === "write" ? [policy.confirmation] : [])))).toEqual(new Set(["required", "none"]));
    expect(new Set(policies.flatMap((policy) => (policy.effect === "read" && policy.elicitation ? [policy.elicitation.style] : [])))).toEqual(new Set(["form", "questions"]));
    expect(new Set(results.flatMap((result) => result.actions?.map((action) => action.kind) ?? []))).toEqual(new Set(["reply", "link"]));
    expect(columns.some((column) => column.currency?.path) && columns.some((column) => column.currency?.code)).toBe(true);
    expect(columns.some((column) => column.role === "status" && column.statuses)).toBe(true);
    expect(results.some((result) => result.layout === "page" && "page" in result && result.page?.display === "panel")).toBe(true);
    expect(results.some((result) => result.layout === "detail" && result.path) && results.some((result) => result.layout === "detail" && !result.path)).toBe(true);
    expect(presentations.some((p) => "files" in p && p.files?.accept.includes("application/pdf"))).toBe(true);
    expect(policies.some((policy) => policy.subject?.policy === "verified_required" && policy.subject.selector)).toBe(true);
    expect(policies.some((policy) => policy.progress?.spoken) && policies.some((policy) => policy.progress && !policy.progress.spoken)).toBe(true);
    expect(manifests.every((m) => m.secrets?.includes("SHOP_API_KEY"))).toBe(true);
  });

  it("together use every export of @caplo/tools that the seeds document", () => {
    const sources = PACKAGES.flatMap((name) => ["src/tool.ts", "src/server.ts", "src/stdio.ts"].map((file) => join(DEMO_DIR, name, file)))
      .filter((file) => existsSync(file))
      .map((file) => readFileSync(file, "utf8"))
      .join("\n");
    for (const name of ["defineTool", "file", "withFiles", "applied", "rejected", "pending", "stepUpRequired", "stepUpFromChallenge", "context", "serveStdio", "EFFECT_META_KEY", "EFFECT_OUTCOME_CAPABILITY", "OPERATION_STATUS_CAPABILITY", "STATUS_METHOD"]) {
      expect(sources, name).toMatch(new RegExp(`import \\{[^}]*\\b${name}\\b[^}]*\\} from "@caplo/tools"`));
    }
    for (const property of ["secrets", "signal", "log", "idempotencyKey", "requireSubject", "canElicit", "elicit"]) expect(sources, property).toContain(property);
  });
});

describe("demo packages against the shop API", () => {
  let shop: ShopApi;
  let clock = Date.UTC(2026, 11, 2, 12, 0, 0);
  const sessions: Session[] = [];
  const open = async (name: string, answer?: Parameters<typeof openSession>[2]) => {
    const session = await openSession(name, shop.url, answer);
    sessions.push(session);
    return session;
  };
  const effect = (result: { _meta?: Record<string, unknown> }) => result._meta?.[EFFECT_META_KEY] as { outcome: string; operationRef?: string } | undefined;
  const text = (result: { content?: unknown }) => ((result.content as { type: string; text?: string }[])[0]?.text ?? "");

  beforeAll(async () => {
    shop = await startShopApi({ port: 0, pendingMs: 2000, now: () => clock });
  });
  afterAll(async () => {
    for (const session of sessions) await session.close();
    await shop.close();
  });

  it("every write tool can be status-checked: a status handler, or caplo/status advertised by the MCP server", async () => {
    for (const name of PACKAGES) {
      const writes = toolPolicies(manifest(name)).filter((policy) => policy.effect === "write");
      if (writes.length === 0) continue;
      const session = await open(name);
      const experimental = session.client.getServerCapabilities()?.experimental ?? {};
      expect(experimental, name).toMatchObject({ ...EFFECT_OUTCOME_CAPABILITY, ...OPERATION_STATUS_CAPABILITY });
    }
  });

  it("orders: get_order and list_orders return structured results for their layouts", async () => {
    const orders = await open("orders");
    const listed = (await orders.client.listTools()).tools.map((tool) => tool.name).sort();
    expect(listed).toEqual(toolPolicies(manifest("orders")).map((policy) => policy.name).sort());
    const one = await orders.call("get_order", { orderId: "SO-1004" });
    expect(one.structuredContent).toEqual({ orderId: "SO-1004", status: "delivered", total: 53, currency: "EUR", placedAt: "2026-11-10T12:00:00Z", itemCount: 2, paymentCard: "**** **** **** 4242" });
    const missing = await orders.call("get_order", { orderId: "SO-9999" });
    expect(missing.isError).toBe(true);
    const all = await orders.call("list_orders", { email: "marko.kranjc@example.com" });
    expect((all.structuredContent as { orders: { orderId: string }[] }).orders.map((order) => order.orderId)).toEqual(["SO-1005", "SO-1006", "SO-1007"]);
  });

  it("orders: cancel_order reports applied, not applied and pending in _meta, and a status check resolves the pending one", async () => {
    const orders = await open("orders");
    const done = await orders.call("cancel_order", { orderId: "SO-1001", reason: "Ordered twice" }, { idempotencyKey: "demo-c1" });
    expect(effect(done)).toEqual({ version: 1, outcome: "applied" });
    expect(done.structuredContent).toMatchObject({ orderId: "SO-1001", status: "cancelled", refundCard: "**** **** **** 4242" });
    const refused = await orders.call("cancel_order", { orderId: "SO-1003" }, { idempotencyKey: "demo-c2" });
    expect(refused.isError).toBe(true);
    expect(effect(refused)?.outcome).toBe("not_applied");
    expect(text(refused)).toMatch(/shipped/);
    const slow = await orders.call("cancel_order", { orderId: "SO-1002" }, { idempotencyKey: "demo-c3" });
    expect(effect(slow)).toMatchObject({ outcome: "pending", operationRef: expect.stringMatching(/^op_/) });
    const stillPending = await orders.status("cancel_order", effect(slow)!.operationRef, { idempotencyKey: "demo-c3" });
    expect(effect(stillPending)?.outcome).toBe("pending");
    clock += 2000;
    const finished = await orders.status("cancel_order", effect(slow)!.operationRef, { idempotencyKey: "demo-c3" });
    expect(effect(finished)?.outcome).toBe("applied");
    expect(finished.structuredContent).toMatchObject({ orderId: "SO-1002", status: "cancelled" });
  });

  it("orders: a 500 or a hang is unknown (no outcome metadata), and the status check finds it applied", async () => {
    const orders = await open("orders");
    const failed = await orders.call("cancel_order", { orderId: "SO-1009" }, { idempotencyKey: "demo-c4" });
    expect(failed.isError).toBe(true);
    expect(effect(failed)).toBeUndefined();
    expect(effect(await orders.status("cancel_order", undefined, { idempotencyKey: "demo-c4" }))?.outcome).toBe("applied");
    const hung = await orders.call("cancel_order", { orderId: "SO-1010" }, { idempotencyKey: "demo-c5", deadline: new Date(Date.now() + 300).toISOString() });
    expect(hung.isError).toBe(true);
    expect(effect(hung)).toBeUndefined();
    expect(effect(await orders.status("cancel_order", undefined, { idempotencyKey: "demo-c5" }))?.outcome).toBe("applied");
    // A status check for a key the shop never saw cannot tell: it throws, and the write stays unknown.
    const unknown = await orders.status("cancel_order", undefined, { idempotencyKey: "never-sent" });
    expect(unknown.isError).toBe(true);
  });

  it("orders: add_order_note applies once per idempotency key", async () => {
    const orders = await open("orders");
    const first = await orders.call("add_order_note", { orderId: "SO-1008", text: "Ring twice" }, { idempotencyKey: "demo-n1" });
    const again = await orders.call("add_order_note", { orderId: "SO-1008", text: "Ring twice" }, { idempotencyKey: "demo-n1" });
    expect(effect(first)?.outcome).toBe("applied");
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(first.structuredContent).toEqual({ orderId: "SO-1008", noteCount: 1, note: "Ring twice" });
  });

  it("appointments: find_slots asks one tapped question per missing detail and searches with the answers", async () => {
    const asked: unknown[] = [];
    const appointments = await open("appointments", (_message, schema) => {
      asked.push(schema);
      const property = Object.keys((schema as { properties: object }).properties)[0]!;
      return { action: "accept", content: { [property]: property === "service" ? "tailoring" : "ST-MB1" } };
    });
    const result = await appointments.call("find_slots", {});
    expect(asked).toHaveLength(2);
    for (const schema of asked as { properties: Record<string, { oneOf: { title: string }[] }>; required: string[] }[]) {
      const [name, property] = Object.entries(schema.properties)[0]!;
      expect(schema.required).toEqual([name]);
      expect(property.oneOf.length).toBeGreaterThanOrEqual(2);
      expect(property.oneOf.every((option) => option.title.length <= 20)).toBe(true);
    }
    const slots = (result.structuredContent as { slots: { slotId: string; storeName: string; service: string }[] }).slots;
    expect(slots.length).toBeGreaterThan(0);
    expect(slots.length).toBeLessThanOrEqual(10);
    expect(slots.every((slot) => slot.storeName === "Caplo Shop Maribor" && slot.service === "tailoring")).toBe(true);
  });

  it("appointments: find_slots works without elicitation, searching every service and store", async () => {
    const appointments = await open("appointments");
    const result = await appointments.call("find_slots", {});
    const slots = (result.structuredContent as { slots: { service: string }[] }).slots;
    expect(slots).toHaveLength(10);
  });

  it("booking: book_slot applies once per key, is rejected for a taken slot, and its status check agrees", async () => {
    const appointments = await open("appointments");
    const booking = await open("booking");
    const slots = (await appointments.call("find_slots", { service: "styling", storeId: "ST-LJ2" })).structuredContent as { slots: { slotId: string }[] };
    const slotId = slots.slots[0]!.slotId;
    const booked = await booking.call("book_slot", { slotId, customerName: "Ana Novak", reminder: "sms" }, { idempotencyKey: "demo-b1" });
    expect(effect(booked)?.outcome).toBe("applied");
    expect(booked.structuredContent).toMatchObject({ slotId, reminder: "sms", status: "booked", storeName: "Caplo Shop BTC" });
    const again = await booking.call("book_slot", { slotId, customerName: "Ana Novak", reminder: "sms" }, { idempotencyKey: "demo-b1" });
    expect(again.structuredContent).toEqual(booked.structuredContent);
    const taken = await booking.call("book_slot", { slotId, customerName: "Marko" }, { idempotencyKey: "demo-b2" });
    expect(effect(taken)?.outcome).toBe("not_applied");
    const checked = await booking.status("book_slot", undefined, { idempotencyKey: "demo-b1" });
    expect(effect(checked)?.outcome).toBe("applied");
    expect(checked.structuredContent).toEqual(booked.structuredContent);
    expect(effect(await booking.status("book_slot", undefined, { idempotencyKey: "demo-b2" }))?.outcome).toBe("not_applied");
  });

  it("stores, plans, products and returns give the items their layouts show", async () => {
    const stores = (await (await open("stores")).call("find_stores", { city: "Ljubljana" })).structuredContent as { stores: { name: string; latitude: number; url: string }[] };
    expect(stores.stores.map((store) => store.name)).toEqual(["Caplo Shop Ljubljana Center", "Caplo Shop BTC"]);
    expect(stores.stores.every((store) => typeof store.latitude === "number" && store.url.startsWith("https://"))).toBe(true);
    const plans = (await (await open("plans")).call("compare_plans", { focus: "returns" })).structuredContent as { plans: { name: string }[] };
    expect(plans.plans.map((plan) => plan.name)).toEqual(["Premium", "Plus", "Basic"]);
    const products = (await (await open("products")).call("search_products", { query: "wool" })).structuredContent as { products: { imageUrl: string; price: number; currency: string }[] };
    expect(products.products).toHaveLength(3);
    expect(products.products.every((product) => product.imageUrl.startsWith("https://") && product.currency === "EUR")).toBe(true);
    const returns = (await (await open("returns")).call("list_returns", { orderId: "SO-1004" })).structuredContent as { returns: { returnId: string; status: string }[] };
    expect(returns.returns[0]).toMatchObject({ returnId: "RT-2001", status: "refunded" });
  });

  it("tracking: asks for a missing order number in a form, and says what it needs where it cannot ask", async () => {
    const tracking = await open("tracking", () => ({ action: "accept", content: { orderId: "so-1003" } }));
    const result = await tracking.call("track_order", {});
    const steps = (result.structuredContent as { steps: { label: string; status: string; at?: string }[] }).steps;
    expect(steps.map((step) => step.status)).toEqual(["completed", "completed", "completed", "in_progress", "pending"]);
    expect(steps[4]!.at).toBeUndefined();
    const silent = await open("tracking");
    const refused = await silent.call("track_order", {});
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/ask the customer/);
  });

  it("help: finds the article and returns the page link for the page layout", async () => {
    const help = await open("help");
    const result = await help.call("help_article", { question: "how do I get a refund" });
    expect(result.structuredContent).toEqual({
      found: true,
      article: { topic: "returns", title: "Returns and refunds", summary: expect.any(String), url: "https://shop.caplo.test/help/returns" },
    });
    expect((await help.call("help_article", { question: "zzz" })).structuredContent).toEqual({ found: false });
  });

  it("invoices: the function tool's withFiles(file(...)) sends the summary and the PDF as an embedded resource with a blob", async () => {
    const invoices = await open("invoices");
    const result = await invoices.call("get_invoice", { orderId: "SO-1004" });
    expect(result.structuredContent).toMatchObject({ invoice: { invoiceId: "INV-1004", total: 53, currency: "EUR" } });
    const file = (result.content as { type: string; resource?: { uri: string; mimeType: string; blob: string } }[]).find((item) => item.type === "resource")!;
    expect(file.resource!.mimeType).toBe("application/pdf");
    expect(file.resource!.uri).toBe("file:///INV-1004.pdf");
    const bytes = Buffer.from(file.resource!.blob, "base64");
    expect(bytes.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    expect(bytes.length).toBeGreaterThan(1024);
    expect(bytes.length).toBeLessThanOrEqual(1_048_576);
    const missing = await invoices.call("get_invoice", { orderId: "SO-9999" });
    expect(missing).toMatchObject({ isError: true, content: [{ type: "text", text: "There is no invoice for order SO-9999." }] });
  });

  it("account: needs a verified customer, turns the shop's RFC 9470 challenge into a step-up, and applies after a fresh strong sign-in", async () => {
    const account = await open("account");
    const args = { customerId: "CUS-1002", street: "Slovenska cesta 1", postalCode: "1000", city: "Ljubljana" };
    const nobody = await account.call("update_address", args, { idempotencyKey: "demo-a0" });
    expect(nobody.isError).toBe(true);
    expect(effect(nobody)).toBeUndefined();
    const standard = { id: "CUS-1002", ref: "CUS-1002", level: "standard" as const, authTime: new Date(clock - 60_000).toISOString() };
    const challenged = await account.call("update_address", args, { idempotencyKey: "demo-a1", subject: standard });
    expect(challenged._meta?.[STEP_UP_META_KEY]).toEqual({ level: "high", maxAuthAgeSeconds: 300 });
    const low = await account.call("update_address", args, { idempotencyKey: "demo-a2", subject: { ...standard, level: "low" } });
    expect(low._meta?.[STEP_UP_META_KEY]).toEqual({ level: "high", maxAuthAgeSeconds: 300 });
    const staleHigh = await account.call("update_address", args, { idempotencyKey: "demo-a3", subject: { ...standard, level: "high", authTime: new Date(clock - 600_000).toISOString() } });
    expect(staleHigh._meta?.[STEP_UP_META_KEY]).toEqual({ level: "high", maxAuthAgeSeconds: 300 });
    const fresh = await account.call("update_address", args, { idempotencyKey: "demo-a4", subject: { ...standard, level: "high", authTime: new Date(clock - 10_000).toISOString() } });
    expect(effect(fresh)?.outcome).toBe("applied");
    expect(fresh.structuredContent).toMatchObject({ customerId: "CUS-1002", street: "Slovenska cesta 1", city: "Ljubljana" });
    const checked = await account.status("update_address", undefined, { idempotencyKey: "demo-a4" });
    expect(checked.structuredContent).toEqual(fresh.structuredContent);
  });
});
