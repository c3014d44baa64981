// The build's join and presentation rules, checked without spawning a package: a manifest (parsed by
// the real schema) against the tools a server lists.
import { describe, expect, it } from "vitest";
import { EFFECT_OUTCOME_CAPABILITY, OPERATION_STATUS_CAPABILITY, validateManifest, type Manifest } from "@caplo/shared";
import { checkPackage, type ListedTool } from "./packageCheck.ts";

type Json = Record<string, unknown>;
function manifest(value: Json): Manifest {
  const parsed = validateManifest({ apiVersion: "v1", kind: "ToolPackage", runtime: "node24", ...value });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.manifest;
}
const fn = (policy: Json = {}, name = "order-lookup") => manifest({ name, type: "function", entry: "src/tool.ts", effect: "read", timeoutSeconds: 5, ...policy });
const mcp = (tools: Json[], name = "orders") => manifest({ name, type: "mcp", entry: "src/server.ts", tools });
const listing = (tools: ListedTool[], experimental: Json = { ...EFFECT_OUTCOME_CAPABILITY }) => ({ tools, experimental });

const orderInput = { type: "object", properties: { orderId: { type: "string" }, note: { type: "string" }, qty: { type: "integer" }, reason: { type: "string", enum: ["damaged", "wrong"] }, customerRef: { type: "string" } }, required: ["orderId"] };
const orderOutput = {
  type: "object",
  properties: {
    orderId: { type: "string" },
    status: { type: "string" },
    total: { type: "number" },
    detail: { type: "object", properties: { city: { type: "string" } } },
    items: {
      type: "array",
      items: {
        type: "object",
        properties: {
          name: { type: "string" },
          price: { type: "number" },
          currency: { type: "string" },
          photo: { type: "string", format: "uri" },
          url: { type: "string", format: "uri" },
          plain: { type: "string" },
          at: { type: "string", format: "date-time" },
          state: { type: "string", enum: ["packed", "shipped", "delivered"] },
          lat: { type: "number" },
          lng: { type: "number" },
          tags: { type: "array", items: { type: "string" } },
          count: { type: "integer" },
        },
      },
    },
  },
};
const getOrder = (extra: Partial<ListedTool> = {}): ListedTool => ({ name: "get_order", description: "Get an order.", inputSchema: orderInput, outputSchema: orderOutput, ...extra });
const field = (path: string, extra: Json = {}) => ({ path, label: "Label", display: "plain", ...extra });
const column = (path: string, extra: Json = {}) => ({ path, label: "Label", display: "plain", ...extra });
const presentation = (extra: Json = {}) => ({ schemaVersion: 1, title: "Order", fields: [field("/orderId")], ...extra });
const withResult = (result: Json, effect: "read" | "write" = "read") => fn({ effect, presentation: presentation({ result }) });
const errorsOf = (m: Manifest, tools: ListedTool[] = [getOrder()], experimental?: Json) => checkPackage(m, listing(tools, experimental)).errors;

describe("joining listed tools with caplo.yaml", () => {
  it("builds a function package's one tool with the top-level policy and its model name", () => {
    const checked = checkPackage(fn({ effect: "write" }), listing([getOrder()], { ...EFFECT_OUTCOME_CAPABILITY, ...OPERATION_STATUS_CAPABILITY }));
    expect(checked.errors).toEqual([]);
    expect(checked.effectOutcomes).toBe(true);
    expect(checked.tools).toEqual([
      expect.objectContaining({ name: "get_order", modelName: "order_lookup__get_order", policy: { name: "get_order", effect: "write", timeoutSeconds: 5, confirmation: "required" }, hasStatus: true }),
    ]);
  });

  it("fails with status_invalid at effect when a read tool defines status (status checks are for writes)", () => {
    const checked = checkPackage(fn(), listing([getOrder()], { ...EFFECT_OUTCOME_CAPABILITY, ...OPERATION_STATUS_CAPABILITY }));
    expect(checked.errors).toEqual([{ code: "status_invalid", path: "effect", message: expect.stringContaining("status checks are for write tools") }]);
    // An MCP server advertises status for all its tools: only its writes are marked as having it.
    const both = checkPackage(
      mcp([{ name: "get_order", effect: "read", timeoutSeconds: 5 }, { name: "cancel_order", effect: "write", timeoutSeconds: 5 }]),
      listing([getOrder(), getOrder({ name: "cancel_order" })], { ...EFFECT_OUTCOME_CAPABILITY, ...OPERATION_STATUS_CAPABILITY }),
    );
    expect(both.errors).toEqual([]);
    expect(both.tools.map((tool) => [tool.name, tool.hasStatus])).toEqual([["get_order", false], ["cancel_order", true]]);
  });

  it("warns (pending_needs_structured_content) when an MCP write with an outputSchema runs on the package's own MCP SDK", () => {
    const m = mcp([{ name: "get_order", effect: "read", timeoutSeconds: 5 }, { name: "cancel_order", effect: "write", timeoutSeconds: 5 }]);
    const tools = [getOrder(), getOrder({ name: "cancel_order" })];
    expect(checkPackage(m, { ...listing(tools), ownsMcpSdk: true }).warnings).toEqual([
      { code: "pending_needs_structured_content", path: "tools[1].name", message: expect.stringContaining("drop outputSchema") },
    ]);
    // On Caplo's own copy of the SDK the host lets a pending result through: nothing to warn about.
    expect(checkPackage(m, listing(tools)).warnings).toEqual([]);
  });

  it("fails with policy_missing for a listed tool caplo.yaml has no policy for", () => {
    const errors = errorsOf(mcp([{ name: "get_order", effect: "read", timeoutSeconds: 5 }]), [getOrder(), getOrder({ name: "cancel_order" })]);
    expect(errors).toEqual([{ code: "policy_missing", path: "tools", message: expect.stringContaining('"cancel_order"') }]);
  });

  it("fails with policy_unknown for a policy of a tool the code does not list", () => {
    const errors = errorsOf(mcp([{ name: "get_order", effect: "read", timeoutSeconds: 5 }, { name: "refund", effect: "write", timeoutSeconds: 5 }]));
    expect(errors).toEqual([{ code: "policy_unknown", path: "tools[1].name", message: expect.stringContaining('"refund"') }]);
  });

  it("reports every join error, not only the first", () => {
    const errors = errorsOf(mcp([{ name: "a_tool", effect: "read", timeoutSeconds: 5 }, { name: "b_tool", effect: "read", timeoutSeconds: 5 }]), [getOrder(), getOrder({ name: "cancel_order" })]);
    expect(errors.map((error) => error.code)).toEqual(["policy_missing", "policy_missing", "policy_unknown", "policy_unknown"]);
  });

  it("fails with tool_name_invalid for a listed name off its pattern", () => {
    expect(errorsOf(mcp([{ name: "get_order", effect: "read", timeoutSeconds: 5 }]), [getOrder(), getOrder({ name: "Get-Order" })])).toEqual([
      { code: "tool_name_invalid", path: "tools", message: expect.stringContaining('"Get-Order"') },
    ]);
    expect(errorsOf(fn(), [getOrder({ name: "getOrder" })])).toEqual([{ code: "tool_name_invalid", path: "entry", message: expect.stringContaining('"getOrder"') }]);
  });

  it("allows <package>__<tool> of 64 characters and fails 65 with tool_name_invalid", () => {
    const pkg = "order-manage-v2"; // 15 characters: with "__" and a tool of 47 the model name is 64
    const tool64 = "t".repeat(47);
    expect(errorsOf(mcp([{ name: tool64, effect: "read", timeoutSeconds: 5 }], pkg), [getOrder({ name: tool64 })])).toEqual([]);
    const tool65 = "t".repeat(48);
    expect(errorsOf(mcp([{ name: tool65, effect: "read", timeoutSeconds: 5 }], pkg), [getOrder({ name: tool65 })])).toEqual([
      { code: "tool_name_invalid", path: "tools[0].name", message: expect.stringContaining("65 characters") },
    ]);
  });

  it("turns dashes of the package name into underscores when counting a function tool's model name", () => {
    const name = `a-${"b".repeat(38)}`; // 40 characters
    const ok = errorsOf(fn({}, name), [getOrder({ name: "t".repeat(64 - 42) })]);
    expect(ok).toEqual([]);
    expect(errorsOf(fn({}, name), [getOrder({ name: "t".repeat(65 - 42) })])).toEqual([{ code: "tool_name_invalid", path: "name", message: expect.any(String) }]);
  });

  it("needs exactly one tool from a function package's server", () => {
    expect(errorsOf(fn(), [getOrder(), getOrder({ name: "other" })])).toEqual([{ code: "entry_invalid", path: "entry", message: expect.stringContaining("exactly one tool") }]);
  });

  it("records whether an MCP server advertised effect outcomes and status checks", () => {
    const checked = checkPackage(mcp([{ name: "get_order", effect: "read", timeoutSeconds: 5 }]), listing([getOrder()], {}));
    expect(checked.effectOutcomes).toBe(false);
    expect(checked.tools[0]!.hasStatus).toBe(false);
  });

  it("names the subject selector an optional input property", () => {
    expect(errorsOf(fn({ subject: { policy: "verified_required", selector: "customerRef" } }))).toEqual([]);
    expect(errorsOf(fn({ subject: { policy: "verified_required", selector: "orderId" } }))).toEqual([{ code: "manifest_invalid", path: "subject.selector", message: expect.stringContaining("optional") }]);
    expect(errorsOf(fn({ subject: { policy: "verified_required", selector: "missing" } }))).toEqual([{ code: "manifest_invalid", path: "subject.selector", message: expect.any(String) }]);
  });
});

describe("presentation against the tool's schemas", () => {
  const invalid = (path: string) => ({ code: "presentation_invalid", path, message: expect.any(String) });

  it("accepts fields that are direct input properties and refuses others", () => {
    expect(errorsOf(fn({ presentation: presentation({ fields: [field("/orderId"), field("/note", { editable: true })] }) }))).toEqual([]);
    expect(errorsOf(fn({ presentation: presentation({ fields: [field("/total")] }) }))).toEqual([invalid("presentation.fields[0].path")]);
  });

  it("checks an MCP tool's presentation at its tools entry path", () => {
    const errors = errorsOf(mcp([{ name: "get_order", effect: "read", timeoutSeconds: 5, presentation: presentation({ fields: [field("/nope")] }) }]));
    expect(errors).toEqual([invalid("tools[0].presentation.fields[0].path")]);
  });

  it("allows editable only on a string input", () => {
    expect(errorsOf(fn({ presentation: presentation({ fields: [field("/qty", { editable: true })] }) }))).toEqual([invalid("presentation.fields[0].editable")]);
  });

  it("needs options with input select, offered only with select, and within the property's enum", () => {
    expect(errorsOf(fn({ presentation: presentation({ fields: [field("/reason", { input: "select" })] }) }))).toEqual([invalid("presentation.fields[0].options")]);
    expect(errorsOf(fn({ presentation: presentation({ fields: [field("/note", { options: [{ value: "a", label: "A" }] })] }) }))).toEqual([invalid("presentation.fields[0].input")]);
    expect(errorsOf(fn({ presentation: presentation({ fields: [field("/reason", { input: "select", options: [{ value: "damaged", label: "Damaged" }, { value: "lost", label: "Lost" }] })] }) }))).toEqual([invalid("presentation.fields[0].options[1].value")]);
  });

  it("checks receipt paths against the outputSchema, and needs one", () => {
    expect(errorsOf(fn({ effect: "write", presentation: presentation({ receipt: { fields: [field("/status"), field("/orderId")] } }) }))).toEqual([]);
    expect(errorsOf(fn({ effect: "write", presentation: presentation({ receipt: { fields: [field("/note")] } }) }))).toEqual([invalid("presentation.receipt.fields[0].path")]);
    expect(errorsOf(fn({ effect: "write", presentation: presentation({ receipt: { fields: [field("/status")] } }) }), [getOrder({ outputSchema: undefined })])).toEqual([invalid("presentation.receipt")]);
  });

  it("needs an outputSchema for presentation.result", () => {
    const m = withResult({ path: "/items", layout: "list", title: "Items", columns: [column("/name")] });
    expect(errorsOf(m)).toEqual([]);
    expect(errorsOf(m, [getOrder({ outputSchema: undefined })])).toEqual([invalid("presentation.result")]);
  });

  it("needs an array-of-objects path for item layouts and an object (or the output) for detail and page", () => {
    expect(errorsOf(withResult({ layout: "table", title: "Items", columns: [column("/name")] }))).toEqual([invalid("presentation.result.path")]);
    expect(errorsOf(withResult({ path: "/total", layout: "table", title: "Items", columns: [column("/name")] }))).toEqual([invalid("presentation.result.path")]);
    expect(errorsOf(withResult({ path: "/nope", layout: "cards", title: "Items", columns: [column("/name")] }))).toEqual([invalid("presentation.result.path")]);
    expect(errorsOf(withResult({ layout: "detail", title: "Order", columns: [column("/orderId"), column("/total")] }))).toEqual([]);
    expect(errorsOf(withResult({ path: "/detail", layout: "detail", title: "Order", columns: [column("/city")] }))).toEqual([]);
    expect(errorsOf(withResult({ path: "/items", layout: "detail", title: "Order", columns: [column("/name")] }))).toEqual([invalid("presentation.result.path")]);
  });

  it("refuses columns that are not direct primitive properties of an item", () => {
    expect(errorsOf(withResult({ path: "/items", layout: "list", title: "Items", columns: [column("/tags")] }))).toEqual([invalid("presentation.result.columns[0].path")]);
    expect(errorsOf(withResult({ path: "/items", layout: "list", title: "Items", columns: [column("/orderId")] }))).toEqual([invalid("presentation.result.columns[0].path")]);
  });

  it("allows 6 columns on a list and refuses 7; allows 12 on a detail, comparison or map", () => {
    const cols = (n: number) => ["/name", "/price", "/currency", "/photo", "/url", "/plain", "/at", "/count", "/lat", "/lng", "/name", "/plain"].slice(0, n).map((path) => column(path));
    expect(errorsOf(withResult({ path: "/items", layout: "list", title: "Items", columns: cols(6) }))).toEqual([]);
    expect(errorsOf(withResult({ path: "/items", layout: "table", title: "Items", columns: cols(7) }))).toEqual([invalid("presentation.result.columns")]);
    expect(errorsOf(withResult({ path: "/items", layout: "comparison", title: "Items", columns: cols(12) }))).toEqual([]);
  });

  it("needs a currency for money: a sibling string property or a code, and a number property", () => {
    const money = (extra: Json) => withResult({ path: "/items", layout: "list", title: "Items", columns: [column("/price", { role: "money", ...extra })] });
    expect(errorsOf(money({ currency: { path: "/currency" } }))).toEqual([]);
    expect(errorsOf(money({ currency: { code: "EUR" } }))).toEqual([]);
    expect(errorsOf(money({}))).toEqual([invalid("presentation.result.columns[0].currency")]);
    expect(errorsOf(money({ currency: { path: "/currency", code: "EUR" } }))).toEqual([invalid("presentation.result.columns[0].currency")]);
    expect(errorsOf(money({ currency: { path: "/count" } }))).toEqual([invalid("presentation.result.columns[0].currency.path")]);
    expect(errorsOf(withResult({ path: "/items", layout: "list", title: "Items", columns: [column("/name", { role: "money", currency: { code: "EUR" } })] }))).toEqual([invalid("presentation.result.columns[0].role")]);
    expect(errorsOf(withResult({ path: "/items", layout: "list", title: "Items", columns: [column("/name", { currency: { code: "EUR" } })] }))).toEqual([invalid("presentation.result.columns[0].currency")]);
  });

  it("needs a state for every enum value of a status column, and no other", () => {
    const status = (statuses?: Json, path = "/state") => withResult({ path: "/items", layout: "timeline", title: "Delivery", columns: [column(path, { role: "status", ...(statuses && { statuses }) })] });
    expect(errorsOf(status({ packed: "done", shipped: "current", delivered: "upcoming" }))).toEqual([]);
    expect(errorsOf(status({ packed: "done", shipped: "current" }))).toEqual([invalid("presentation.result.columns[0].statuses")]);
    expect(errorsOf(status({ packed: "done", shipped: "current", delivered: "upcoming", lost: "failed" }))).toEqual([invalid("presentation.result.columns[0].statuses.lost")]);
    expect(errorsOf(status({ a: "done" }, "/plain"))).toEqual([invalid("presentation.result.columns[0].role")]);
    expect(errorsOf(withResult({ path: "/items", layout: "timeline", title: "Delivery", columns: [column("/plain", { statuses: { a: "done" } })] }))).toEqual([invalid("presentation.result.columns[0].statuses")]);
  });

  it("needs numbers for latitude and longitude, and both on a map", () => {
    const map = (columns: Json[]) => withResult({ path: "/items", layout: "map", title: "Stores", columns });
    expect(errorsOf(map([column("/lat", { role: "latitude" }), column("/lng", { role: "longitude" })]))).toEqual([]);
    expect(errorsOf(map([column("/name", { role: "latitude" }), column("/lng", { role: "longitude" })]))).toEqual([invalid("presentation.result.columns[0].role")]);
    expect(errorsOf(map([column("/lat", { role: "latitude" })]))).toEqual([invalid("presentation.result.columns")]);
  });

  it("needs a date or date-time string for time, and a URL string for image and link", () => {
    const one = (path: string, role: string) => withResult({ path: "/items", layout: "cards", title: "Items", columns: [column(path, { role })] });
    expect(errorsOf(one("/at", "time"))).toEqual([]);
    expect(errorsOf(one("/plain", "time"))).toEqual([invalid("presentation.result.columns[0].role")]);
    expect(errorsOf(one("/photo", "image"))).toEqual([]);
    expect(errorsOf(one("/plain", "image"))).toEqual([invalid("presentation.result.columns[0].role")]);
    expect(errorsOf(one("/url", "link"))).toEqual([]);
    expect(errorsOf(one("/price", "link"))).toEqual([invalid("presentation.result.columns[0].role")]);
  });

  it("allows two actions on cards, none on a list, table, timeline or page", () => {
    const actions = [{ kind: "reply", label: "Buy", template: "Buy {name}" }, { kind: "link", label: "Open", path: "/url" }];
    expect(errorsOf(withResult({ path: "/items", layout: "cards", title: "Items", columns: [column("/name")], actions }))).toEqual([]);
    for (const layout of ["list", "table", "timeline"]) {
      expect(errorsOf(withResult({ path: "/items", layout, title: "Items", columns: [column("/name")], actions: [actions[0]] }))).toEqual([invalid("presentation.result.actions")]);
    }
  });

  it("needs exactly one reply action on choices", () => {
    const choices = (actions?: Json[]) => withResult({ path: "/items", layout: "choices", title: "Pick", columns: [column("/name")], ...(actions && { actions }) });
    expect(errorsOf(choices([{ kind: "reply", label: "Pick", template: "I pick {name}" }]))).toEqual([]);
    expect(errorsOf(choices())).toEqual([invalid("presentation.result.actions")]);
    expect(errorsOf(choices([{ kind: "link", label: "Open", path: "/url" }]))).toEqual([invalid("presentation.result.actions")]);
    expect(errorsOf(choices([{ kind: "reply", label: "A", template: "a" }, { kind: "reply", label: "B", template: "b" }]))).toEqual([invalid("presentation.result.actions")]);
  });

  it("checks action templates name listed columns and link paths are URL properties of an item", () => {
    const cards = (action: Json) => withResult({ path: "/items", layout: "cards", title: "Items", columns: [column("/name")], actions: [action] });
    expect(errorsOf(cards({ kind: "reply", label: "Buy", template: "Buy {price}" }))).toEqual([invalid("presentation.result.actions[0].template")]);
    expect(errorsOf(cards({ kind: "reply", label: "Buy" }))).toEqual([invalid("presentation.result.actions[0].template")]);
    expect(errorsOf(cards({ kind: "link", label: "Open" }))).toEqual([invalid("presentation.result.actions[0].path")]);
    expect(errorsOf(cards({ kind: "link", label: "Open", path: "/plain" }))).toEqual([invalid("presentation.result.actions[0].path")]);
  });

  it("needs page on a page layout and refuses it on any other", () => {
    const page = { label: "Open portal", display: "panel", origins: ["https://portal.shop.example"] };
    const urlOutput = { type: "object", properties: { url: { type: "string", format: "uri" } } };
    expect(errorsOf(withResult({ layout: "page", title: "Portal", columns: [column("/url", { role: "link" })], page }), [getOrder({ outputSchema: urlOutput })])).toEqual([]);
    expect(errorsOf(withResult({ layout: "page", title: "Portal", columns: [column("/url", { role: "link" })] }), [getOrder({ outputSchema: urlOutput })])).toEqual([invalid("presentation.result")]);
    expect(errorsOf(withResult({ layout: "detail", title: "Portal", columns: [column("/url")], page }), [getOrder({ outputSchema: urlOutput })])).toEqual([invalid("presentation.result.page")]);
  });

  it("follows local $refs and nullable unions in tool schemas", () => {
    const output = {
      type: "object",
      $defs: { Item: { type: "object", properties: { price: { anyOf: [{ type: "number" }, { type: "null" }] }, currency: { type: "string" } } } },
      properties: { items: { type: "array", items: { $ref: "#/$defs/Item" } } },
    };
    const m = withResult({ path: "/items", layout: "table", title: "Items", columns: [column("/price", { role: "money", currency: { path: "/currency" } })] });
    expect(errorsOf(m, [getOrder({ outputSchema: output })])).toEqual([]);
  });

  it("reports every presentation error of every tool", () => {
    const m = mcp([
      { name: "get_order", effect: "read", timeoutSeconds: 5, presentation: presentation({ fields: [field("/x")], receipt: { fields: [field("/y")] } }) },
      { name: "list_orders", effect: "read", timeoutSeconds: 5, presentation: presentation({ result: { path: "/items", layout: "choices", title: "Pick", columns: [column("/tags")] } }) },
    ]);
    const errors = errorsOf(m, [getOrder(), getOrder({ name: "list_orders" })]);
    expect(errors.map((error) => error.path)).toEqual([
      "tools[0].presentation.fields[0].path",
      "tools[0].presentation.receipt.fields[0].path",
      "tools[1].presentation.result.columns[0].path",
      "tools[1].presentation.result.actions",
    ]);
  });
});
