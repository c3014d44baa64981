// A small shop as a real MCP SDK server for engine and gateway tests: reads with presentation, a write
// with every outcome (chosen by the order number), status checks answered from the backend's record of
// idempotency keys, a subject-aware read, an elicitation read and a confirmation-none write; and the
// real runner serving it in memory (shopRunner).
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { createHash } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import {
  CALL_META_KEY,
  EFFECT_META_KEY,
  EFFECT_OUTCOME_CAPABILITY,
  OPERATION_STATUS_CAPABILITY,
  STATUS_METHOD,
  STEP_UP_META_KEY,
  modelToolName,
  type CallMeta,
  type PackageVersion,
  type ToolPolicy,
} from "@caplo/shared";
import { CaploToolRunner, MemoryTargets, memoryVersion, type MemoryRequest } from "../../../server/src/runner/index.ts";

/** Order numbers that choose the cancel outcome. */
export const ORDERS = {
  applied: "SO-1001",
  rejected: "SO-2001",
  pendingThenApplied: "SO-3001",
  pendingForever: "SO-3002",
  throwsAfterApplying: "SO-4001",
  throwsWithoutApplying: "SO-4002",
  /** Applies, then throws; its status check throws too (the provider cannot tell), every time. */
  unknownForever: "SO-4003",
  stepUp: "SO-5001",
  /** Applies, records it, then never answers (the kill test stops the server meanwhile). */
  hangsAfterApplying: "SO-6001",
  /** get_order never answers for it (the turn crash test kills the server while the read is held). */
  readHangs: "SO-7001",
} as const;

type Application = { key: string; args: Record<string, unknown>; times: number; operationRef?: string; checks: number };

/** The shop's own system: which cancellations happened, by idempotency key. Optionally kept in a file. */
export class ShopBackend {
  private readonly file: string | undefined;
  applications: Application[] = [];
  /** Every handler invocation, including repeats with a key already applied. */
  invocations: { tool: string; args: Record<string, unknown>; key?: string; subject?: string }[] = [];
  /** While set, status checks wait for it before answering: a test keeps a write unresolved until it has seen what it needs. */
  private statusHold: Promise<void> | undefined;

  /** Status checks wait from now until the returned function is called. */
  holdStatusChecks(): () => void {
    let release!: () => void;
    this.statusHold = new Promise((resolve) => (release = resolve));
    return () => {
      this.statusHold = undefined;
      release();
    };
  }

  /** Resolves once status checks may answer. */
  async statusChecksAllowed(): Promise<void> {
    while (this.statusHold) await this.statusHold;
  }

  constructor(file?: string) {
    this.file = file;
    if (file && existsSync(file)) this.applications = (JSON.parse(readFileSync(file, "utf8")) as { applications: Application[] }).applications;
  }

  private save(): void {
    if (this.file) writeFileSync(this.file, JSON.stringify({ applications: this.applications }));
  }

  /** The cancel_order invocations for `orderId`: each time a cancel of that order reached the shop. */
  cancels(orderId: string): ShopBackend["invocations"] {
    return this.invocations.filter((call) => call.tool === "cancel_order" && call.args.orderId === orderId);
  }

  /** Apply once per key: a repeated key does not apply again. */
  apply(key: string, args: Record<string, unknown>, operationRef?: string): Application {
    const existing = this.applications.find((application) => application.key === key);
    if (existing) return existing;
    const application: Application = { key, args, times: 1, checks: 0, ...(operationRef && { operationRef }) };
    this.applications.push(application);
    this.save();
    return application;
  }

  find(key: string): Application | undefined {
    return this.applications.find((application) => application.key === key);
  }

  countCheck(key: string): number {
    const application = this.find(key);
    if (!application) return 0;
    application.checks += 1;
    this.save();
    return application.checks;
  }
}

/** The stores find_stores answers with (the demo shop's, in Slovenia): name, address, latitude, longitude. */
export const STORES: [string, string, number, number][] = [
  ["Caplo Shop Center", "Čopova ulica 5, 1000 Ljubljana", 46.0514, 14.5034],
  ["Caplo Shop BTC", "Šmartinska cesta 152, 1000 Ljubljana", 46.0664, 14.5454],
  ["Caplo Shop Maribor", "Gosposka ulica 10, 2000 Maribor", 46.5580, 15.6467],
  ["Caplo Shop Kranj", "Prešernova ulica 3, 4000 Kranj", 46.2389, 14.3556],
  ["Caplo Shop Koper", "Pristaniška ulica 2, 6000 Koper", 45.5469, 13.7294],
];

const orderId = z.string().regex(/^SO-[0-9]{4}$/).describe("Order number");

function callMeta(extra: { _meta?: Record<string, unknown> }): CallMeta | undefined {
  return extra._meta?.[CALL_META_KEY] as CallMeta | undefined;
}

const outcome = (value: "applied" | "not_applied" | "pending", operationRef?: string) => ({
  [EFFECT_META_KEY]: { version: 1, outcome: value, ...(operationRef && { operationRef }) },
});

export function createShopServer(backend: ShopBackend): McpServer {
  const server = new McpServer(
    { name: "shop", version: "1.0.0" },
    { capabilities: { tools: {}, logging: {}, experimental: { ...EFFECT_OUTCOME_CAPABILITY, ...OPERATION_STATUS_CAPABILITY } } },
  );

  server.registerTool("get_order", { description: "Look up an order", inputSchema: { orderId } }, async ({ orderId: id }, extra) => {
    backend.invocations.push({ tool: "get_order", args: { orderId: id }, ...(callMeta(extra)?.idempotencyKey && { key: callMeta(extra)!.idempotencyKey! }) });
    if (id === ORDERS.stepUp) return { content: [{ type: "text", text: "sign in again" }], _meta: { [STEP_UP_META_KEY]: { level: "high" } } };
    if (id === ORDERS.readHangs) return new Promise<never>(() => undefined);
    const order = { orderId: id, status: "shipped", total: 42.5, currency: "EUR", card: "4111111111114242", internalNote: "VIP margin 31%" };
    return { content: [{ type: "text", text: JSON.stringify(order) }], structuredContent: order };
  });

  server.registerTool("list_orders", { description: "List orders", inputSchema: {} }, async () => {
    const orders = Array.from({ length: 25 }, (_, index) => ({
      id: `SO-${String(1000 + index).padStart(4, "0")}`,
      total: 10 + index,
      currency: "EUR",
      card: `4000000000000${String(100 + index)}`,
      secret: `internal-${index}`,
      nested: { no: "objects" },
    }));
    return { content: [{ type: "text", text: `${orders.length} orders` }], structuredContent: { orders } };
  });

  server.registerTool(
    "cancel_order",
    {
      description: "Cancel an order",
      inputSchema: { orderId, reason: z.string().min(3).max(40), speed: z.enum(["standard", "express"]), card: z.string().min(4) },
    },
    async (args, extra) => {
      const key = callMeta(extra)?.idempotencyKey;
      backend.invocations.push({ tool: "cancel_order", args, ...(key && { key }) });
      if (!key) throw new Error("no idempotency key");
      switch (args.orderId) {
        case ORDERS.rejected:
          return { content: [{ type: "text", text: "This order has already shipped." }], isError: true, _meta: outcome("not_applied") };
        case ORDERS.pendingThenApplied:
        case ORDERS.pendingForever: {
          const ref = `op_${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;
          backend.apply(key, args, ref);
          return { content: [{ type: "text", text: "The cancellation is being processed." }], _meta: outcome("pending", ref) };
        }
        case ORDERS.throwsAfterApplying:
        case ORDERS.unknownForever:
          backend.apply(key, args);
          throw new Error("upstream timed out");
        case ORDERS.throwsWithoutApplying:
          throw new Error("upstream refused the connection");
        case ORDERS.stepUp: {
          const subject = callMeta(extra)?.subject;
          if (!subject || subject.level !== "high") {
            return { content: [{ type: "text", text: "step up" }], _meta: { [STEP_UP_META_KEY]: { level: "high", maxAuthAgeSeconds: 300 } } };
          }
          backend.apply(key, args);
          const result = { orderId: args.orderId, status: "cancelled" };
          return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result, _meta: outcome("applied") };
        }
        case ORDERS.hangsAfterApplying:
          backend.apply(key, args);
          return new Promise<never>(() => undefined);
        default: {
          backend.apply(key, args);
          const result = { orderId: args.orderId, status: "cancelled", refund: "4111111111119876" };
          return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result, _meta: outcome("applied") };
        }
      }
    },
  );

  server.registerTool("close_account", { description: "Close the verified customer's account", inputSchema: { reason: z.string() } }, async (args, extra) => {
    const meta = callMeta(extra);
    backend.invocations.push({ tool: "close_account", args, ...(meta?.idempotencyKey && { key: meta.idempotencyKey }), ...(meta?.subject && { subject: meta.subject.id }) });
    if (!meta?.subject || meta.subject.level !== "high") {
      return { content: [{ type: "text", text: "step up" }], _meta: { [STEP_UP_META_KEY]: { level: "high", maxAuthAgeSeconds: 300 } } };
    }
    backend.apply(meta.idempotencyKey ?? "", args);
    return { content: [{ type: "text", text: "closed" }], structuredContent: { closed: true }, _meta: outcome("applied") };
  });

  server.registerTool("contact", { description: "Ask how to reach the customer", inputSchema: {} }, async (_args, extra) => {
    if (!callMeta(extra)?.canElicit) return { content: [{ type: "text", text: "no form: will email the address on file" }] };
    const answer = await server.server.elicitInput({
      message: "How should we reach you?",
      requestedSchema: { type: "object", properties: { email: { type: "string", format: "email", title: "Email" }, days: { type: "integer", minimum: 1, maximum: 5 } }, required: ["email"] },
    });
    return { content: [{ type: "text", text: answer.action === "accept" ? `reach ${String(answer.content?.email)} in ${String(answer.content?.days ?? 1)} days` : `no answer (${answer.action})` }] };
  });

  server.registerTool("invoice", { description: "The order's invoice as a PDF", inputSchema: { orderId } }, async ({ orderId: id }) => ({
    content: [
      { type: "text", text: `Invoice for ${id}` },
      // SO-6666's invoice is a PDF that would run JavaScript when opened (the built-in checks refuse it).
      { type: "resource", resource: { uri: `file:///invoices/${id}.pdf`, mimeType: "application/pdf", blob: Buffer.from(id === "SO-6666" ? `%PDF-1.4\n<< /OpenAction << /S /JavaScript /JS (app.alert(1)) >> >>\n%%EOF\n` : `%PDF-1.4\n% invoice ${id}\n%%EOF\n`).toString("base64") } },
    ],
  }));

  server.registerTool("add_note", { description: "Add a note to the ticket", inputSchema: { text: z.string().min(1).max(200) } }, async (args, extra) => {
    const key = callMeta(extra)?.idempotencyKey;
    backend.invocations.push({ tool: "add_note", args, ...(key && { key }) });
    if (key) backend.apply(key, args);
    return { content: [{ type: "text", text: "noted" }], _meta: outcome("applied") };
  });

  server.registerTool("send_gift", { description: "A write without a status check", inputSchema: { to: z.string() } }, async (args, extra) => {
    backend.invocations.push({ tool: "send_gift", args, ...(callMeta(extra)?.idempotencyKey && { key: callMeta(extra)!.idempotencyKey! }) });
    throw new Error("gift service timed out");
  });

  server.registerTool(
    "my_orders",
    { description: "The verified customer's orders", inputSchema: { customerRef: z.string().optional(), limit: z.number().int().optional() } },
    async (args, extra) => {
      const subject = callMeta(extra)?.subject;
      backend.invocations.push({ tool: "my_orders", args, ...(subject && { subject: subject.id }) });
      const result = { customerRef: String(args.customerRef ?? ""), subjectId: subject?.id ?? "" };
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
    },
  );

  server.registerTool("find_stores", { description: "The shop's stores on a map", inputSchema: {} }, async () => {
    const stores = STORES.map(([name, address, latitude, longitude]) => ({ name, address, latitude, longitude, opens: "Mon-Sat 9:00-20:00" }));
    return { content: [{ type: "text", text: `${stores.length} stores` }], structuredContent: { stores } };
  });

  server.registerTool("pick_size", { description: "Find a size", inputSchema: {} }, async (_args, extra) => {
    if (!callMeta(extra)?.canElicit) return { content: [{ type: "text", text: "no way to ask: used the default size M" }] };
    const answer = await server.server.elicitInput({
      message: "Which size?",
      requestedSchema: { type: "object", properties: { size: { type: "string", enum: ["S", "M", "L"] } }, required: ["size"] },
    });
    return { content: [{ type: "text", text: answer.action === "accept" ? `size ${String(answer.content?.size)}` : `no size (${answer.action})` }] };
  });

  server.server.setRequestHandler(
    z.object({ method: z.literal(STATUS_METHOD), params: z.object({ name: z.string(), operationRef: z.string().optional(), _meta: z.record(z.string(), z.unknown()).optional() }) }),
    async (request) => {
      const key = (request.params._meta?.[CALL_META_KEY] as CallMeta | undefined)?.idempotencyKey ?? "";
      await backend.statusChecksAllowed();
      const application = backend.find(key);
      if (!application) return { content: [{ type: "text", text: "The order was not cancelled." }], isError: true, _meta: outcome("not_applied") };
      const checks = backend.countCheck(key);
      if (application.args.orderId === ORDERS.unknownForever) throw new Error("status lookup failed with 503");
      if (application.args.orderId === ORDERS.pendingForever) return { content: [{ type: "text", text: "still processing" }], _meta: outcome("pending", application.operationRef) };
      if (application.args.orderId === ORDERS.pendingThenApplied && checks < 2) return { content: [{ type: "text", text: "still processing" }], _meta: outcome("pending", application.operationRef) };
      const result = { orderId: application.args.orderId, status: "cancelled" };
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result, _meta: outcome("applied") };
    },
  );
  return server;
}

type PolicyWithoutName = ToolPolicy extends infer P ? (P extends unknown ? Omit<P, "name"> : never) : never;
type ToolSpec = { name: string; policy: PolicyWithoutName; inputSchema: Record<string, unknown>; hasStatus?: boolean };

const ORDER_ID_SCHEMA = { type: "string", pattern: "^SO-[0-9]{4}$" };
const NO_ARGUMENTS = { type: "object", properties: {}, additionalProperties: false };

/** A read without arguments whose result is shown as `presentation` says. */
const presentedRead = (name: string, presentation: NonNullable<Extract<PolicyWithoutName, { effect: "read" }>["presentation"]>): ToolSpec => ({
  name,
  inputSchema: NO_ARGUMENTS,
  policy: { effect: "read", timeoutSeconds: 5, presentation },
});

export const SHOP_TOOLS: ToolSpec[] = [
  {
    name: "get_order",
    inputSchema: { type: "object", properties: { orderId: ORDER_ID_SCHEMA }, required: ["orderId"], additionalProperties: false },
    policy: {
      effect: "read",
      timeoutSeconds: 5,
      progress: { label: "Looking up your order", spoken: "Let me find that order." },
      presentation: {
        schemaVersion: 1,
        title: "Order",
        fields: [{ path: "/orderId", label: "Order", display: "plain" }],
        result: {
          layout: "detail",
          title: "Your order",
          columns: [
            { path: "/orderId", label: "Order", display: "plain" },
            { path: "/status", label: "Status", display: "plain" },
            { path: "/total", label: "Total", display: "plain", role: "money", currency: { path: "/currency" } },
            { path: "/card", label: "Card", display: "last4" },
          ],
        },
      },
    },
  },
  presentedRead("list_orders", {
    schemaVersion: 1,
    title: "Orders",
    fields: [{ path: "/orders", label: "Orders", display: "plain" }],
    result: {
      layout: "table",
      path: "/orders",
      title: "Your orders",
      columns: [
        { path: "/id", label: "Order", display: "plain" },
        { path: "/total", label: "Total", display: "plain" },
        { path: "/card", label: "Card", display: "last4" },
        { path: "/nested", label: "Nested", display: "plain" },
      ],
    },
  }),
  {
    name: "cancel_order",
    hasStatus: true,
    inputSchema: {
      type: "object",
      properties: {
        orderId: ORDER_ID_SCHEMA,
        reason: { type: "string", minLength: 3, maxLength: 40 },
        speed: { type: "string", enum: ["standard", "express"] },
        card: { type: "string", minLength: 4 },
      },
      required: ["orderId", "reason", "speed", "card"],
      additionalProperties: false,
    },
    policy: {
      effect: "write",
      timeoutSeconds: 15,
      confirmation: "required",
      progress: { label: "Cancelling your order" },
      presentation: {
        schemaVersion: 1,
        title: "Cancel order",
        fields: [
          { path: "/orderId", label: "Order", display: "plain" },
          { path: "/card", label: "Refund to card", display: "last4" },
          { path: "/reason", label: "Reason", display: "plain", editable: true, input: "text" },
          {
            path: "/speed",
            label: "Refund speed",
            display: "plain",
            editable: true,
            input: "select",
            options: [
              { value: "standard", label: "Standard" },
              { value: "express", label: "Express" },
            ],
          },
        ],
        receipt: {
          fields: [
            { path: "/orderId", label: "Order", display: "plain" },
            { path: "/status", label: "Status", display: "plain" },
            { path: "/refund", label: "Refund card", display: "last4" },
          ],
        },
      },
    },
  },
  {
    name: "contact",
    inputSchema: NO_ARGUMENTS,
    policy: { effect: "read", timeoutSeconds: 10, elicitation: { style: "form", fields: [{ name: "email" }, { name: "days" }] } },
  },
  {
    name: "invoice",
    inputSchema: { type: "object", properties: { orderId: ORDER_ID_SCHEMA }, required: ["orderId"], additionalProperties: false },
    policy: {
      effect: "read",
      timeoutSeconds: 5,
      presentation: { schemaVersion: 1, title: "Invoice", fields: [{ path: "/orderId", label: "Order", display: "plain" }], files: { accept: ["application/pdf"], maxBytes: 1024 } },
    },
  },
  {
    name: "close_account",
    hasStatus: true,
    inputSchema: { type: "object", properties: { reason: { type: "string" } }, required: ["reason"], additionalProperties: false },
    policy: { effect: "write", timeoutSeconds: 5, confirmation: "required", subject: { policy: "verified_required" } },
  },
  {
    name: "add_note",
    inputSchema: { type: "object", properties: { text: { type: "string", minLength: 1, maxLength: 200 } }, required: ["text"], additionalProperties: false },
    policy: { effect: "write", timeoutSeconds: 5, confirmation: "none" },
  },
  {
    name: "send_gift",
    inputSchema: { type: "object", properties: { to: { type: "string" } }, required: ["to"], additionalProperties: false },
    policy: { effect: "write", timeoutSeconds: 5, confirmation: "required" },
  },
  {
    name: "my_orders",
    inputSchema: {
      type: "object",
      properties: { customerRef: { type: "string" }, limit: { type: "integer" } },
      required: ["customerRef"],
      additionalProperties: false,
    },
    policy: { effect: "read", timeoutSeconds: 5, subject: { policy: "verified_required", selector: "customerRef" } },
  },
  presentedRead("find_stores", {
    schemaVersion: 1,
    title: "Stores",
    fields: [],
    result: {
      layout: "map",
      path: "/stores",
      title: "Our stores",
      columns: [
        { path: "/name", label: "Store", display: "plain", role: "title" },
        { path: "/address", label: "Address", display: "plain", role: "address" },
        { path: "/latitude", label: "Latitude", display: "plain", role: "latitude" },
        { path: "/longitude", label: "Longitude", display: "plain", role: "longitude" },
        { path: "/opens", label: "Opening hours", display: "plain", role: "subtitle" },
      ],
      actions: [{ kind: "reply", label: "Book here", template: "I want an appointment at {name}" }],
    },
  }),
  {
    name: "pick_size",
    inputSchema: NO_ARGUMENTS,
    policy: { effect: "read", timeoutSeconds: 10, elicitation: { style: "questions", fields: [{ name: "size" }] } },
  },
];

/** The shop as a built package version (what an agent release pins). */
export function shopVersion(): PackageVersion {
  return memoryVersion(
    "shop",
    SHOP_TOOLS.map((tool) => ({
      name: tool.name,
      modelName: modelToolName("shop", tool.name),
      description: tool.name.replaceAll("_", " "),
      inputSchema: tool.inputSchema,
      policy: { name: tool.name, ...tool.policy } as ToolPolicy,
      hasStatus: tool.hasStatus ?? false,
    })),
  );
}

/**
 * The real runner serving the shop's MCP server in this process (runner/memoryTarget.ts): calls take the
 * runner's own path (validation, subject, limits, outcomes); `requests` is what reached the shop's server.
 */
export function shopRunner(backend: ShopBackend): { runner: CaploToolRunner; requests: MemoryRequest[] } {
  const targets = new MemoryTargets({ shop: () => createShopServer(backend) });
  return { runner: new CaploToolRunner({ targetKinds: [targets] }), requests: targets.requests };
}
