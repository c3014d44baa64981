// Schema patterns: tested on the server's thread only when their backtracking is bounded small for the
// text, else in the worker (whose budget tests/runner/remoteHostile.test.ts holds a backtracking pattern to).
import { describe, expect, it } from "vitest";
import { patternChecks, patternRepetitions, validateAgainst } from "./schemaValidator.ts";

const schemaOf = (pattern: string) => ({ type: "object", properties: { value: { type: "string", pattern } }, required: ["value"] });
/** Validates and says where the pattern was tested. */
function check(pattern: string, value: string): { valid: boolean; where: "inline" | "worker" | "both" | "none" } {
  const before = { ...patternChecks };
  const valid = validateAgainst(schemaOf(pattern), { value }).length === 0;
  const inline = patternChecks.inline > before.inline;
  const worker = patternChecks.worker > before.worker;
  return { valid, where: inline && worker ? "both" : inline ? "inline" : worker ? "worker" : "none" };
}

describe("patternRepetitions", () => {
  it("counts the variable repetitions of a pattern that repeats no group and refers back to none", () => {
    expect(patternRepetitions("^SO-[0-9]{4}$")).toBe(0);
    expect(patternRepetitions("^[a-z0-9_]+$")).toBe(1);
    expect(patternRepetitions("^a{2,}b{1,3}c{3}d{2,2}$")).toBe(2);
    expect(patternRepetitions("^\\p{L}+ \\u{1F600}?$")).toBe(2);
    expect(patternRepetitions("^a+?b??c*?$")).toBe(3);
    expect(patternRepetitions("[*+?{(]\\*\\{")).toBe(0);
    expect(patternRepetitions("^(?:ab|cd)x+(?=y)$")).toBe(1);
    expect(patternRepetitions("^(?=.*\\d)(?=.*[a-z]).{8,}$")).toBe(3);
  });

  it("gives none for a repeated group, a backreference or what it cannot read", () => {
    expect(patternRepetitions("^([a-z0-9]+-?)+$")).toBeUndefined();
    expect(patternRepetitions("^(?:a|aa)*$")).toBeUndefined();
    expect(patternRepetitions("^(ab){2}$")).toBeUndefined();
    expect(patternRepetitions("^(a)?$")).toBeUndefined();
    expect(patternRepetitions("(a)\\1")).toBeUndefined();
    expect(patternRepetitions("(?<x>a)\\k<x>")).toBeUndefined();
    expect(patternRepetitions("[abc")).toBeUndefined();
    expect(patternRepetitions("a{x}")).toBeUndefined();
    expect(patternRepetitions("a\\")).toBeUndefined();
  });
});

describe("where a pattern is tested", () => {
  it("checks each schema's own pattern, whatever was compiled before", () => {
    // ajv keys compiled patterns by their spelling: all of these share one instance.
    expect(check("^SO-[0-9]{4}$", "SO-1234").valid).toBe(true);
    expect(check("^[a-z]+$", "abc").valid).toBe(true);
    expect(check("^[a-z]+$", "SO-1234").valid).toBe(false);
    expect(check("^([a-z0-9]+-?)+$", "SO-1234").valid).toBe(false);
    expect(check("^([a-z0-9]+-?)+$", "ab-12").valid).toBe(true);
    expect(check("^SO-[0-9]{4}$", "abc").valid).toBe(false);
  });

  it("tests a fixed pattern on the server's thread, at any ordinary length", () => {
    expect(check("^SO-[0-9]{4}$", "SO-1234")).toEqual({ valid: true, where: "inline" });
    expect(check("^SO-[0-9]{4}$", "SO-12345")).toEqual({ valid: false, where: "inline" });
    expect(check("^SO-[0-9]{4}$", "x".repeat(50_000))).toEqual({ valid: false, where: "inline" });
  });

  it("sends a text too long for the pattern's repetitions to the worker, with the same answer", () => {
    expect(check("^[a-z]+$", "a".repeat(315))).toEqual({ valid: true, where: "inline" });
    expect(check("^[a-z]+$", "a".repeat(316))).toEqual({ valid: true, where: "worker" });
    expect(check("^[a-z]+$", `${"a".repeat(400)}!`)).toEqual({ valid: false, where: "worker" });
  });

  it("always sends a pattern that may backtrack exponentially to the worker, however short the text", () => {
    expect(check("^([a-z0-9]+-?)+$", "ab-cd")).toEqual({ valid: true, where: "worker" });
    expect(check("^([a-z0-9]+-?)+$", "ab!")).toEqual({ valid: false, where: "worker" });
    expect(check("^(a)\\1$", "aa")).toEqual({ valid: true, where: "worker" });
  });

  it("reads patterns with the u flag in both places", () => {
    expect(check("^\\p{Lu}\\p{Ll}+$", "Ädam")).toEqual({ valid: true, where: "inline" });
    expect(check("^\\p{Lu}\\p{Ll}+$", `Ä${"d".repeat(400)}`)).toEqual({ valid: true, where: "worker" });
    expect(check("^.$", "😀")).toEqual({ valid: true, where: "inline" });
  });
});
