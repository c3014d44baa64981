import { describe, expect, it } from "vitest";
import { applied, outcomeOf, pending, rejected, stepUpRequired } from "./outcome.ts";

describe("write outcomes", () => {
  it("accepts an operationRef of 1 and of 256 printable ASCII characters", () => {
    expect(pending("a").operationRef).toBe("a");
    expect(pending("~".repeat(256)).operationRef).toHaveLength(256);
    expect(pending(" !op_123~", "Processing.").message).toBe("Processing.");
  });

  it("refuses an operationRef that is empty, 257 characters, non-ASCII or has a control character", () => {
    for (const ref of ["", "x".repeat(257), "opé", "op\n1", "op\u0000", undefined as unknown as string, 42 as unknown as string]) {
      expect(() => pending(ref), JSON.stringify(ref)).toThrow(/1 to 256 printable ASCII/);
    }
  });

  it("needs a message to reject", () => {
    expect(rejected("The slot was taken.").message).toBe("The slot was taken.");
    expect(() => rejected("  ")).toThrow(TypeError);
  });

  it("checks stepUpRequired's level and maxAuthAgeSeconds at 0 and 86400", () => {
    expect(outcomeOf(stepUpRequired({ level: "low", maxAuthAgeSeconds: 0 }))).toMatchObject({ stepUp: { level: "low", maxAuthAgeSeconds: 0 } });
    expect(outcomeOf(stepUpRequired({ level: "high", maxAuthAgeSeconds: 86_400 }))).toMatchObject({ stepUp: { maxAuthAgeSeconds: 86_400 } });
    expect(() => stepUpRequired({ level: "high", maxAuthAgeSeconds: 86_401 })).toThrow(TypeError);
    expect(() => stepUpRequired({ level: "high", maxAuthAgeSeconds: -1 })).toThrow(TypeError);
    expect(() => stepUpRequired({ level: "max" as "high" })).toThrow(TypeError);
  });

  it("tells outcomes from plain values", () => {
    expect(outcomeOf(applied({ a: 1 }))).toMatchObject({ result: { a: 1 } });
    expect(outcomeOf({ result: 1 })).toBeUndefined();
    expect(outcomeOf("text")).toBeUndefined();
  });
});
