// The seeds' patterns and limits at their edges, where tests/manifest/limits.test.ts and the corpus stop
// (tests/attacks/README.md has the whole table): each pattern at the characters it allows and refuses, in
// the zod schema (a precise {code, path, message}) and the generated JSON Schema alike, counted in
// characters as the seeds count them (an emoji is one); the runner's mapping of operationRef and
// maxAuthAgeSeconds at their bounds; and the engine's cut of each layout's items at its count.
import { describe, expect, it } from "vitest";
import { EFFECT_META_KEY, LAYOUT_ITEMS_MAX, LAYOUTS, MAX_AUTH_AGE_SECONDS_MAX, OPERATION_REF_MAX, STEP_UP_META_KEY, stepUpSchema, validateManifest } from "@caplo/shared";
import { mapWriteResult } from "../../server/src/runner/outcomeMapping.ts";
import { projectResult } from "../../server/src/engine/presentation.ts";
import type { EngineTool } from "../../server/src/engine/release.ts";
import { validateWithAjv } from "../manifest/jsonSchemaValidator.ts";

type Json = Record<string, unknown>;
const fn = (extra: Json = {}): Json => ({ apiVersion: "v1", kind: "ToolPackage", name: "order-lookup", type: "function", entry: "src/tool.ts", runtime: "node24", effect: "read", timeoutSeconds: 5, ...extra });
const presentation = (extra: Json = {}): Json => ({ schemaVersion: 1, title: "Order", fields: [{ path: "/f", label: "Field", display: "plain" }], ...extra });
const page = (origins: string[]): Json => fn({ presentation: presentation({ result: { layout: "page", title: "Article", columns: [{ path: "/url", label: "Link", display: "plain" }], page: { label: "Open", display: "tab", origins } } }) });

/** Accepted by zod and by the JSON Schema an editor uses. */
function accepted(manifest: Json): void {
  const zod = validateManifest(manifest);
  expect(zod.ok ? [] : zod.errors).toEqual([]);
  expect(validateWithAjv(manifest), JSON.stringify(validateWithAjv.errors)).toBe(true);
}
/** Refused by both, by zod at `path` with a code and a sentence. */
function refused(manifest: Json, path: string): void {
  const zod = validateManifest(manifest);
  expect(zod.ok).toBe(false);
  if (!zod.ok) {
    const error = zod.errors.find((candidate) => candidate.path === path);
    expect(error, JSON.stringify(zod.errors)).toBeDefined();
    expect(error!.code).toMatch(/^[a-z_]+$/);
    expect(error!.message.length).toBeGreaterThan(10);
  }
  expect(validateWithAjv(manifest)).toBe(false);
}

const PACKAGE_EMOJI = "\u{1F4E6}"; // one character, two UTF-16 code units

describe("progress.label: 3 to 40 characters, no trailing punctuation, no links, never interpolated", () => {
  it("40 characters, emoji counted as one, are accepted; 41 are not", () => {
    accepted(fn({ progress: { label: `Packing ${PACKAGE_EMOJI.repeat(32)}` } }));
    refused(fn({ progress: { label: `Packing ${PACKAGE_EMOJI.repeat(33)}` } }), "progress.label");
    accepted(fn({ progress: { label: `${PACKAGE_EMOJI}${PACKAGE_EMOJI}${PACKAGE_EMOJI}` } }));
    refused(fn({ progress: { label: `${PACKAGE_EMOJI}${PACKAGE_EMOJI}` } }), "progress.label");
  });
  it.each([".", "!", "?", ":", ";", ",", "\u2026", " "])("a label ending in %j is refused", (end) => {
    refused(fn({ progress: { label: `Checking your order${end}` } }), "progress.label");
  });
  it.each([
    ["a leading space", " Checking your order"],
    ["a link", "See https://shop.example now"],
    ["a link without a scheme", "Checking www.shop.example"],
    ["an http: anywhere", "Checking http:now"],
    ["a placeholder", "Checking order {orderId}"],
    ["markup", "Checking <b>your</b> order"],
    ["a control character", "Checking\u0007 your order"],
    ["a newline", "Checking\nyour order"],
  ])("a label with %s is refused", (_what, label) => {
    refused(fn({ progress: { label } }), "progress.label");
  });
});

describe("progress.spoken: one sentence of 3 to 90 characters ending with a full stop", () => {
  it("90 characters with emoji are accepted; 91 are not; it must end with a full stop", () => {
    accepted(fn({ progress: { label: "Looking", spoken: `${PACKAGE_EMOJI.repeat(89)}.` } }));
    refused(fn({ progress: { label: "Looking", spoken: `${PACKAGE_EMOJI.repeat(90)}.` } }), "progress.spoken");
    refused(fn({ progress: { label: "Looking", spoken: "Let me look!" } }), "progress.spoken");
    refused(fn({ progress: { label: "Looking", spoken: "See www.shop.example." } }), "progress.spoken");
  });
});

describe("plain text (titles, labels): no markup, control characters or surrounding whitespace", () => {
  it.each([
    ["one character", "A"],
    ["inner spaces and punctuation", "Order #1 - total: 10 EUR (incl. VAT)"],
    ["80 emoji", PACKAGE_EMOJI.repeat(80)],
  ])("%s is accepted", (_what, title) => accepted(fn({ presentation: presentation({ title }) })));
  it.each([
    ["a trailing space", "Order "],
    ["a leading tab", "\tOrder"],
    ["a trailing newline", "Order\n"],
    ["<", "Order <1>"],
    ["DEL", "Order\u007F"],
    ["NUL", "Or\u0000der"],
    ["81 emoji", PACKAGE_EMOJI.repeat(81)],
    ["empty", ""],
  ])("%s is refused", (_what, title) => refused(fn({ presentation: presentation({ title }) }), "presentation.title"));
});

describe("the page's origins: 1 to 5, https (or http on loopback), origin only", () => {
  it.each([["https://help.example"], ["https://help.example:8443"], ["http://localhost:3000"], ["http://127.0.0.1"], ["http://[::1]:8080"]])("%s is accepted", (origin) => accepted(page([origin])));
  it.each([
    ["http://help.example"],
    ["https://help.example/"],
    ["https://help.example/articles"],
    ["https://user@help.example"],
    ["https://help.example?x=1"],
    ["javascript:alert(1)"],
    ["http://localhost.evil.example"],
  ])("%s is refused", (origin) => refused(page([origin]), "presentation.result.page.origins[0]"));
});

describe("egress hosts: exact names or *.suffix, lowercase DNS names, no IP literals", () => {
  const label63 = "a".repeat(63);
  it.each([["api.shop.example"], ["*.shop.example"], [`${label63}.example`], [`${Array.from({ length: 4 }, () => label63).join(".").slice(0, 245)}.example`]])("%s is accepted", (host) => {
    expect(host.length).toBeLessThanOrEqual(253);
    accepted(fn({ egress: [host] }));
  });
  it.each([
    ["a label of 64 characters", `${"a".repeat(64)}.example`],
    ["254 characters", `${Array.from({ length: 4 }, () => label63).join(".").slice(0, 246)}.example`],
    ["an IPv4 literal", "10.0.0.1"],
    ["an IPv6 literal", "[::1]"],
    ["localhost", "localhost"],
    ["a URL", "https://api.shop.example"],
    ["a port", "api.shop.example:443"],
    ["capitals", "API.shop.example"],
    ["a trailing dot", "api.shop.example."],
    ["a wildcard of a top-level domain", "*.com"],
    ["a wildcard inside", "api.*.example"],
    ["an underscore", "api_v2.shop.example"],
  ])("%s is refused", (_what, host) => refused(fn({ egress: [host] }), "egress[0]"));
});

describe("names: secrets, tools, selectors, elicitation fields, entry and apiVersion", () => {
  it("a secret name of 128 characters is accepted, 129 not; one starting with a digit not", () => {
    accepted(fn({ secrets: [`K${"E".repeat(127)}`] }));
    refused(fn({ secrets: [`K${"E".repeat(128)}`] }), "secrets[0]");
    refused(fn({ secrets: ["1KEY"] }), "secrets[0]");
  });
  it("apiVersion v1, v1.0 and v1.0.0 are accepted; V1, v1.0.0.0 and v1.1 are not", () => {
    for (const apiVersion of ["v1", "v1.0", "v1.0.0"]) accepted(fn({ apiVersion }));
    for (const apiVersion of ["V1", "v1.0.0.0", "v1.1", "v1."]) refused(fn({ apiVersion }), "apiVersion");
  });
  it("entry: a relative module file; a name with two dots inside is one, a .. segment anywhere is not", () => {
    for (const entry of ["src/tool.ts", "tool.mjs", "src/a..b.js", "lib/v1.0/server.mts"]) accepted(fn({ entry }));
    for (const entry of ["/src/tool.ts", "../tool.ts", "src/../tool.ts", "src/..", "src/tool.json", "src/tool.ts/", "src\\tool.ts", "src/to ol.ts"]) refused(fn({ entry }), "entry");
  });
  it("a subject selector may start with an underscore; an elicitation field name may not", () => {
    accepted(fn({ subject: { policy: "verified_required", selector: "_account" } }));
    refused(fn({ subject: { policy: "verified_required", selector: "1account" } }), "subject.selector");
    refused(fn({ elicitation: { fields: [{ name: "_day" }] } }), "elicitation.fields[0].name");
  });
  it("a currency code is three capital letters", () => {
    const money = (code: string) => fn({ presentation: presentation({ result: { path: "/items", layout: "cards", title: "Items", columns: [{ path: "/price", label: "Price", display: "plain", role: "money", currency: { code } }] } }) });
    accepted(money("EUR"));
    for (const code of ["EURO", "EU", "eur", "E1R"]) refused(money(code), "presentation.result.columns[0].currency.code");
  });
});

describe("what a package answers, at the runner's bounds", () => {
  const pending = (operationRef: unknown) => mapWriteResult({ text: "", meta: { [EFFECT_META_KEY]: { version: 1, outcome: "pending", operationRef } } }, true);
  it(`operationRef: 1 and ${OPERATION_REF_MAX} printable ASCII characters (space and ~ included) stay pending; empty, ${OPERATION_REF_MAX + 1}, DEL, a tab or non-ASCII make the write unknown`, () => {
    for (const ref of ["x", " ", "~", "x".repeat(OPERATION_REF_MAX), ` ${"!".repeat(OPERATION_REF_MAX - 2)}~`]) expect(pending(ref), JSON.stringify(ref).slice(0, 20)).toEqual({ outcome: "pending", operationRef: ref });
    for (const ref of ["", "x".repeat(OPERATION_REF_MAX + 1), "op\u007F", "op\t1", "op\u00e9", 42]) expect(pending(ref).outcome, JSON.stringify(ref).slice(0, 20)).toBe("unknown");
  });
  const stepUp = (maxAuthAgeSeconds: unknown) => mapWriteResult({ text: "", meta: { [STEP_UP_META_KEY]: { level: "high", maxAuthAgeSeconds } } }, true);
  it(`maxAuthAgeSeconds: 0 and ${MAX_AUTH_AGE_SECONDS_MAX} ask for a step-up (nothing applied); -1, ${MAX_AUTH_AGE_SECONDS_MAX + 1}, 1.5 and a string make the write unknown`, () => {
    for (const age of [0, 1, MAX_AUTH_AGE_SECONDS_MAX]) expect(stepUp(age)).toEqual({ outcome: "step_up_required", stepUp: { level: "high", maxAuthAgeSeconds: age } });
    for (const age of [-1, MAX_AUTH_AGE_SECONDS_MAX + 1, 1.5, "300"]) expect(stepUp(age)).toEqual({ outcome: "unknown", reason: "invalid step-up metadata" });
    expect(stepUpSchema.safeParse({ level: "highest" }).success).toBe(false);
  });
});

describe("each layout shows at most its count of items: the count passes whole, one more is cut to it", () => {
  const tool = (layout: (typeof LAYOUTS)[number]): EngineTool => ({
    ref: "shop/list",
    package: "shop",
    tool: "list",
    modelName: "shop__list",
    packageVersionId: "shop@sha256:0",
    description: "",
    inputSchema: { type: "object" },
    policy: {
      name: "list",
      effect: "read",
      timeoutSeconds: 5,
      presentation: {
        schemaVersion: 1,
        title: "Items",
        fields: [{ path: "/q", label: "Query", display: "plain" }],
        result: { layout, title: "Items", columns: [{ path: "/id", label: "Item", display: "plain" }], ...(layout === "detail" || layout === "page" ? {} : { path: "/items" }) },
      },
    } as EngineTool["policy"],
    hasStatus: false,
  });
  const items = (count: number) => Array.from({ length: count }, (_, i) => ({ id: `item-${i}` }));
  it.each(LAYOUTS.filter((layout) => layout !== "detail" && layout !== "page"))("%s", (layout) => {
    const max = LAYOUT_ITEMS_MAX[layout];
    expect(projectResult(tool(layout), { items: items(max) }, "m1", "c1")?.items).toEqual(items(max));
    expect(projectResult(tool(layout), { items: items(max + 1) }, "m1", "c1")?.items).toEqual(items(max));
  });
  it("detail and page show one object: the output itself", () => {
    for (const layout of ["detail", "page"] as const) expect(projectResult(tool(layout), { id: "only" }, "m1", "c1")?.items).toEqual([{ id: "only" }]);
  });
});
