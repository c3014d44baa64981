// Secret values are replaced wherever they appear in what the runner hands on: strings, keys, arrays,
// and values nested deeper than the walk goes.
import { describe, expect, it } from "vitest";
import { makeRedactor } from "./secretRedaction.ts";

describe("secret redaction", () => {
  const redact = makeRedactor({ API_KEY: "sk-live-1234", QUOTED: 'pa"ss\\word', SHORT: "abc" });

  it("replaces values in strings, object keys and arrays by [secret:NAME]; values under 4 characters are left", () => {
    expect(redact({ text: "key sk-live-1234 here", "sk-live-1234": ["x sk-live-1234"], short: "abc" })).toEqual({
      text: "key [secret:API_KEY] here",
      "[secret:API_KEY]": ["x [secret:API_KEY]"],
      short: "abc",
    });
  });

  it("keeps bytes as they are", () => {
    const bytes = new Uint8Array([1, 2, 3]);
    expect(redact({ bytes }).bytes).toBe(bytes);
  });

  it("redacts values nested far deeper than the walk goes, keys and escaped characters included", () => {
    let deep: unknown = { token: "sk-live-1234", 'pa"ss\\word': 'say pa"ss\\word' };
    for (let i = 0; i < 200; i++) deep = { next: deep };
    const out = JSON.stringify(redact(deep));
    expect(out).not.toContain("sk-live-1234");
    expect(out).not.toContain("pa\\\"ss");
    expect(out).toContain('"token":"[secret:API_KEY]"');
    expect(out).toContain('"[secret:QUOTED]":"say [secret:QUOTED]"');
    expect(out.split('{"next":').length - 1).toBe(200);
  });

  it("withholds a deep part whose redacted text would not parse, rather than return the secret", () => {
    // "4,56" appears only in the JSON text's structure ([1234,5678]): replacing it there breaks the text.
    const structural = makeRedactor({ ODD: "4,56" });
    let deep: unknown = [1234, 5678];
    for (let i = 0; i < 70; i++) deep = [deep];
    const out = JSON.stringify(structural(deep));
    expect(out).toContain("withheld");
  });
});
