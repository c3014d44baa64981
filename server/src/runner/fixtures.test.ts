import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ToolCallResult } from "./api.ts";
import { checkExpectations, checkStatusExpectations, fixtureSchema, loadFixtures, matchPartial, parseSecretsFile, secretValues } from "./fixtures.ts";

const result = (over: Partial<ToolCallResult>): ToolCallResult => ({ invocationId: "i", modelText: "", isError: false, files: [], logs: [], durationMs: 1, ...over });
let dir: string | undefined;
afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

describe("partial matching", () => {
  it("ignores keys the fixture does not list and locates mismatches by pointer", () => {
    expect(matchPartial({ a: 1 }, { a: 1, b: 2 })).toEqual([]);
    expect(matchPartial({ a: { b: "x" } }, { a: { b: "y" } })).toEqual(['/a/b: expected "x", got "y"']);
  });
  it("arrays must have the same length and match item by item", () => {
    expect(matchPartial([{ id: 1 }], [{ id: 1, name: "n" }])).toEqual([]);
    expect(matchPartial([{ id: 1 }], [{ id: 1 }, { id: 2 }])).toEqual(["/: expected 1 items, got 2"]);
  });
  it("$match and $any", () => {
    expect(matchPartial({ id: { $match: "^SO-[0-9]{4}$" } }, { id: "SO-1002" })).toEqual([]);
    expect(matchPartial({ id: { $match: "^SO-" } }, { id: "X" })).toHaveLength(1);
    expect(matchPartial({ at: { $any: true } }, {})).toEqual(["/at: expected a value, got nothing"]);
  });
});

describe("expectations", () => {
  it("passes a matching write outcome and fails a different one with the reason", () => {
    const applied = result({ outcome: { outcome: "applied", text: "ok", structuredContent: { status: "cancelled" } }, structuredContent: { status: "cancelled" } });
    expect(checkExpectations({ outcome: "applied", result: { status: "cancelled" } }, applied)).toEqual([]);
    const unknown = result({ isError: true, modelText: "boom", outcome: { outcome: "unknown", reason: "boom" } });
    expect(checkExpectations({ outcome: "applied" }, unknown)).toEqual(["expected success, got an error: boom", "expected outcome applied, got unknown (boom)"]);
    expect(checkExpectations({ outcome: "unknown" }, unknown)).toEqual([]);
  });
  it("an error result fails a fixture that expects nothing in particular", () => {
    expect(checkExpectations({}, result({ isError: true, modelText: "bad" }))).toEqual(["expected success, got an error: bad"]);
  });
  it("log lines must appear", () => {
    const withLogs = result({ logs: [{ level: "info", message: "order found", at: "" }] });
    expect(checkExpectations({ logs: [{ message: "order found" }] }, withLogs)).toEqual([]);
    expect(checkExpectations({ logs: [{ level: "error" }] }, withLogs)).toHaveLength(1);
  });
});

describe("loading", () => {
  it("loads single fixtures and arrays, and reports a bad one with its path instead of skipping it", async () => {
    dir = mkdtempSync(join(tmpdir(), "caplo-fixtures-"));
    mkdirSync(join(dir, "tests"));
    writeFileSync(join(dir, "tests", "a.json"), JSON.stringify({ name: "one", tool: "get_order", input: { orderId: "SO-1002" } }));
    writeFileSync(join(dir, "tests", "b.json"), JSON.stringify([{ tool: "x" }, { tool: "y", surprise: true }]));
    writeFileSync(join(dir, "tests", "c.json"), "{ not json");
    const loaded = await loadFixtures(dir, "tests/*.json");
    expect(loaded.map((entry) => [entry.label, entry.error?.code])).toEqual([
      ["tests/a.json › one", undefined],
      ["tests/b.json[0]", undefined],
      ["tests/b.json[1]", "fixture_invalid"],
      ["tests/c.json", "fixture_json_invalid"],
    ]);
    expect(loaded[2]!.error!.path).toBe("/1/surprise");
  });
});

describe("secrets", () => {
  it("come from the environment first, then the secrets file; missing names are listed", () => {
    dir = mkdtempSync(join(tmpdir(), "caplo-secrets-"));
    const file = join(dir, "secrets.env");
    writeFileSync(file, "# local\nSHOP_API_KEY='from-file'\nOTHER=x\n");
    expect(parseSecretsFile("A=1\nexport B=\"two\"\n#C=3")).toEqual({ A: "1", B: "two" });
    expect(secretValues(["SHOP_API_KEY", "MISSING"], { SHOP_API_KEY: "from-env" }, file)).toEqual({ values: { SHOP_API_KEY: "from-env" }, missing: ["MISSING"], sources: [{ name: "SHOP_API_KEY", from: "environment" }] });
    expect(secretValues(["SHOP_API_KEY"], {}, file)).toMatchObject({ values: { SHOP_API_KEY: "from-file" }, sources: [{ name: "SHOP_API_KEY", from: "file" }] });
    // Hosted runs pass no environment: only the file is read.
    expect(secretValues(["SHOP_API_KEY"], undefined, file).values).toEqual({ SHOP_API_KEY: "from-file" });
  });
});

describe("status fixtures", () => {
  const issues = (fixture: unknown) => {
    const parsed = fixtureSchema.safeParse(fixture);
    return parsed.success ? [] : parsed.error.issues.map((issue) => `/${issue.path.join("/")}: ${issue.message}`);
  };

  it("name the write they check and the outcome they expect, and take no input", () => {
    expect(issues({ tool: "cancel_order", status: {}, context: { idempotencyKey: "k" }, expect: { outcome: "pending" } })).toEqual([]);
    expect(issues({ tool: "cancel_order", status: { operationRef: "op_1" }, expect: { outcome: "applied" } })).toEqual([]);
    expect(issues({ status: {}, expect: { outcome: "applied" } })).toEqual(["/status: a status fixture names the write it checks: status.operationRef, context.idempotencyKey, or both"]);
    expect(issues({ status: { operationRef: "op_1" }, input: {}, expect: { outcome: "applied" } })[0]).toMatch(/^\/input: a status fixture has no input/);
    expect(issues({ status: { operationRef: "op_1" } })[0]).toMatch(/^\/expect\/outcome: a status fixture names the outcome/);
    expect(issues({ status: { operationRef: "op_1" }, expect: { outcome: "applied", files: [] } })[0]).toMatch(/^\/expect\/files: expect.files is not available/);
    expect(issues({ status: { operationRef: "op_1", extra: 1 }, expect: { outcome: "applied" } })).toHaveLength(1);
  });

  it("match the mapped outcome, its result, text and operationRef, and the status check's log lines", () => {
    const applied = { outcome: "applied" as const, text: "Order SO-1002 is cancelled.", structuredContent: { orderId: "SO-1002", status: "cancelled" } };
    expect(checkStatusExpectations({ outcome: "applied", result: { orderId: "SO-1002" }, text: "cancelled" }, applied, [])).toEqual([]);
    expect(checkStatusExpectations({ outcome: "applied", result: { status: "open" } }, applied, [])).toEqual(['/result/status: expected "open", got "cancelled"']);
    expect(checkStatusExpectations({ outcome: "pending" }, { outcome: "unknown", reason: "status lookup failed with 404" }, [])).toEqual([
      "expected outcome pending, got unknown (status lookup failed with 404)",
    ]);
    const pending = { outcome: "pending" as const, operationRef: "op_7", message: "still being processed" };
    expect(checkStatusExpectations({ outcome: "pending", operationRef: { $match: "^op_" }, text: "still" }, pending, [])).toEqual([]);
    expect(checkStatusExpectations({ outcome: "pending", operationRef: "op_8" }, pending, [])).toEqual(['/operationRef: expected "op_8", got "op_7"']);
    expect(checkStatusExpectations({ outcome: "not_applied", text: "packed" }, { outcome: "not_applied", message: "The warehouse had already packed this order." }, [])).toEqual([]);
    const lines = [{ level: "info" as const, message: "status looked up", at: "" }];
    expect(checkStatusExpectations({ outcome: "pending", logs: [{ message: "status looked up" }] }, pending, lines)).toEqual([]);
    expect(checkStatusExpectations({ outcome: "pending", logs: [{ level: "error" }] }, pending, lines)).toHaveLength(1);
  });
});

