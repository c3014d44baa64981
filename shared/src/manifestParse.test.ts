import { describe, expect, it } from "vitest";
import { formatPath, parseManifest } from "./manifestParse.ts";

const head = "apiVersion: v1\nkind: ToolPackage\nname: orders\nentry: src/server.ts\nruntime: node24\n";

describe("parseManifest", () => {
  it("names line and column of a YAML syntax error", () => {
    const result = parseManifest(`${head}type: mcp\ntools: [a, b}\nsecrets: []\n`);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors[0]).toMatchObject({ code: "manifest_invalid", path: "" });
    expect(result.errors[0]!.message).toMatch(/^YAML syntax error at line 7, column 13: /);
  });

  it("refuses a key written twice, naming its line", () => {
    const result = parseManifest(`${head}type: mcp\ntype: function\n`);
    expect(result.ok ? [] : result.errors.map((error) => error.message)).toEqual([expect.stringMatching(/line 7, column 1: Map keys must be unique/)]);
  });

  it("reports every schema error with its JSON path, not only the first", () => {
    const result = parseManifest(
      `${head}type: mcp\ntools:\n  - { name: get_order, effect: read, timeoutSeconds: 31 }\n  - { name: Cancel, effect: write, timeoutSeconds: 0 }\n`,
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual([
      { code: "manifest_invalid", path: "tools[0].timeoutSeconds", message: expect.any(String) },
      { code: "tool_name_invalid", path: "tools[1].name", message: expect.stringContaining('"Cancel"') },
      { code: "manifest_invalid", path: "tools[1].timeoutSeconds", message: expect.any(String) },
    ]);
  });

  it("chooses the variant by type and effect, so a wrong field is named, not an invalid union", () => {
    const result = parseManifest(`${head.replace("src/server.ts", "src/tool.ts")}type: function\neffect: read\ntimeoutSeconds: 5\nconfirmation: none\n`);
    expect(result).toEqual({
      ok: false,
      errors: [{ code: "manifest_invalid", path: "confirmation", message: '"confirmation" is for write tools only (effect: write)' }],
    });
  });

  it("says a function-only field belongs in each tools entry of an MCP package", () => {
    const result = parseManifest(`${head}type: mcp\ntimeoutSeconds: 5\ntools:\n  - { name: a, effect: read, timeoutSeconds: 5 }\n`);
    expect(result.ok ? [] : result.errors).toEqual([
      { code: "manifest_invalid", path: "timeoutSeconds", message: expect.stringContaining("function packages only") },
    ]);
  });

  it("refuses two policies for the same tool", () => {
    const result = parseManifest(`${head}type: mcp\ntools:\n  - { name: a, effect: read, timeoutSeconds: 5 }\n  - { name: a, effect: write, timeoutSeconds: 5 }\n`);
    expect(result.ok ? [] : result.errors).toEqual([{ code: "manifest_invalid", path: "tools[1].name", message: 'tool "a" has more than one policy entry' }]);
  });

  it("refuses an empty file and a file that is not a mapping", () => {
    expect(parseManifest("")).toMatchObject({ ok: false, errors: [{ code: "manifest_invalid", path: "" }] });
    expect(parseManifest("- a\n")).toMatchObject({ ok: false, errors: [{ code: "manifest_invalid", path: "" }] });
  });

  it("fills the defaults: confirmation required on writes, tests tests/*.json", () => {
    const result = parseManifest(`${head}type: mcp\ntools:\n  - { name: a, effect: write, timeoutSeconds: 5 }\n`);
    expect(result).toMatchObject({ ok: true, manifest: { tests: "tests/*.json", tools: [{ confirmation: "required" }] } });
  });

  it("refuses a file over 1,000,000 characters and alias bombs without expanding them", () => {
    expect(parseManifest(`# ${"x".repeat(1_000_000)}\n`)).toMatchObject({ ok: false, errors: [{ code: "manifest_invalid", path: "" }] });
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]", ...Array.from({ length: 8 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10).fill(`*${String.fromCharCode(97 + i)}`).join(", ")}]`)].join("\n");
    expect(parseManifest(bomb)).toEqual({ ok: false, errors: [{ code: "manifest_invalid", path: "", message: expect.stringContaining("alias") }] });
  });

  it("formats paths as name[index].name", () => {
    expect(formatPath(["tools", 1, "presentation", "fields", 0, "path"])).toBe("tools[1].presentation.fields[0].path");
    expect(formatPath([])).toBe("");
  });
});
