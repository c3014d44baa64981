import { describe, expect, it } from "vitest";
import { RESULT_BYTES_MAX } from "@caplo/shared";
import { resultBytes } from "./resultSize.ts";

const object = (bytes: number) => ({ data: "x".repeat(bytes) });

describe("a result's size is counted once", () => {
  it("counts a structured object and the text that repeats it as the object alone", () => {
    const structured = object(137 * 1024);
    const alone = resultBytes([], structured);
    expect(resultBytes([{ type: "text", text: JSON.stringify(structured) }], structured)).toBe(alone);
    expect(resultBytes([{ type: "text", text: JSON.stringify(structured, null, 2) }], structured)).toBe(alone);
    expect(alone).toBeLessThan(RESULT_BYTES_MAX);
  });

  it("counts a text that says something else, and a second copy, in full", () => {
    const structured = object(100);
    const copy = { type: "text", text: JSON.stringify(structured) };
    expect(resultBytes([copy, copy], structured)).toBe(resultBytes([copy], structured) + Buffer.byteLength(JSON.stringify(copy)));
    const other = { type: "text", text: JSON.stringify({ data: "y".repeat(100) }) };
    expect(resultBytes([other], structured)).toBeGreaterThan(resultBytes([], structured));
  });

  it("counts a text-only result as its content's JSON, as before", () => {
    const content = [{ type: "text", text: "x".repeat(10) }];
    expect(resultBytes(content, undefined)).toBe(Buffer.byteLength(JSON.stringify({ content })));
  });
});
