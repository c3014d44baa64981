import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ToolCallResult } from "./api.ts";
import { checkExpectations, loadFixtures, matchPartial, parseSecretsFile, secretValues } from "./fixtures.ts";

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
    expect(secretValues(["SHOP_API_KEY", "MISSING"], { SHOP_API_KEY: "from-env" }, file)).toEqual({ values: { SHOP_API_KEY: "from-env" }, missing: ["MISSING"] });
    expect(secretValues(["SHOP_API_KEY"], {}, file).values).toEqual({ SHOP_API_KEY: "from-file" });
  });
});
