// Secret values are replaced wherever they appear in what the runner hands on: strings, keys, arrays,
// and values nested deeper than the walk goes.
import { describe, expect, it } from "vitest";
import { makeRedactor, redactorFor } from "./secretRedaction.ts";

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

describe("the secret as code spells it by accident", () => {
  const secret = 'sk_live/Ab+cd=ef"gh 42xyZé';
  const redact = makeRedactor({ SHOP_API_KEY: secret });
  const basic = (user: string) => Buffer.from(`${user}:${secret}`).toString("base64");

  it.each([
    ["in a query string (encodeURIComponent)", `https://api.example/x?key=${encodeURIComponent(secret)}&page=1`],
    ["in a form (URLSearchParams: a space as +)", `body ${new URLSearchParams({ key: secret })}`],
    ["percent-encoded in lower case", `?key=${encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase())}`],
    ["in JSON text", `sent ${JSON.stringify({ apiKey: secret })}`],
    ["in JSON text with every character escaped as \\u", `"${[...secret].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}"`],
    ["as base64", `token ${Buffer.from(secret).toString("base64")}`],
    ["as base64url", `token ${Buffer.from(secret).toString("base64url")}`],
    ["in a Basic header after a user name of 1 byte", `Basic ${basic("u")}`],
    ["in a Basic header after a user name of 2 bytes", `Basic ${basic("us")}`],
    ["in a Basic header after a user name of 3 bytes", `Basic ${basic("usr")}`],
    ["after a prefix, in base64url", `state=${Buffer.from(`v1.${secret}`).toString("base64url")}`],
  ])("%s: replaced, and nothing the secret's bytes decide is left", (_what, text) => {
    const out = redact(text);
    expect(out).toContain("[secret:SHOP_API_KEY]");
    for (const piece of ["sk_live", "42xyZ", "c2tfbGl2", "NDJ4eV"]) expect(out).not.toContain(piece);
  });

  it("ordinary text, other base64 and a value that only looks alike are left as they are", () => {
    const text = `sk_live/Ab+cd=ef"gh 42xyz is another key; ${Buffer.from("another value entirely").toString("base64")}`;
    expect(redact(text)).toBe(text);
  });
});

describe("where a long text may be cut", () => {
  const redact = makeRedactor({ API_KEY: "sk-live-1234" });
  it("before a spelling of a secret the cut would split, else where asked", () => {
    const text = `${"a".repeat(95)}sk-live-1234 then ${"b".repeat(50)}`;
    expect(redact.cutPoint(text, 100)).toBe(95);
    expect(redact.cutPoint(text, 95)).toBe(95);
    expect(redact.cutPoint(text, 106)).toBe(95);
    expect(redact.cutPoint(text, 107)).toBe(107);
    const encoded = `${"a".repeat(90)}${encodeURIComponent("sk-live-1234").replace("-", "%2D")}${"b".repeat(50)}`;
    expect(redact.cutPoint(encoded, 100)).toBe(90);
    expect(makeRedactor({}).cutPoint(text, 100)).toBe(100);
  });
});

describe("a set of secrets' redactor, made once", () => {
  it("is the same redactor for the same names and values, in any order; a changed value (a rotated secret) gets its own", () => {
    const first = redactorFor({ API_KEY: "sk-live-1234", OTHER: "other-value" });
    expect(redactorFor({ OTHER: "other-value", API_KEY: "sk-live-1234" })).toBe(first);
    const rotated = redactorFor({ API_KEY: "sk-live-5678", OTHER: "other-value" });
    expect(rotated).not.toBe(first);
    // Each redacts its own values, whichever was made last.
    expect(first("sk-live-1234 sk-live-5678")).toBe("[secret:API_KEY] sk-live-5678");
    expect(rotated("sk-live-1234 sk-live-5678")).toBe("sk-live-1234 [secret:API_KEY]");
    // A value that is another secret's name stands for itself: names and values are not mixed up in the key.
    expect(redactorFor({ A: "BBBB", BBBB: "cccc" })("BBBB cccc")).toBe("[secret:A] [secret:BBBB]");
    expect(redactorFor({ A: "BBBB,cccc" })("BBBB cccc")).toBe("BBBB cccc");
  });

  it("is used again as often as asked: its pattern holds no state from one use to the next", () => {
    const redact = redactorFor({ API_KEY: "sk-live-1234" });
    for (let i = 0; i < 3; i++) expect(redact({ a: "sk-live-1234", b: ["x sk-live-1234 y"] })).toEqual({ a: "[secret:API_KEY]", b: ["x [secret:API_KEY] y"] });
  });

  it("keeps at most 256 sets: the least recently used is made anew", () => {
    const kept = redactorFor({ KEPT: "kept-value" });
    const dropped = redactorFor({ DROPPED: "dropped-value" });
    for (let i = 0; i < 255; i++) {
      redactorFor({ FILL: `fill-value-${i}` });
      if (i % 50 === 0) expect(redactorFor({ KEPT: "kept-value" })).toBe(kept); // used: kept
    }
    expect(redactorFor({ KEPT: "kept-value" })).toBe(kept);
    const again = redactorFor({ DROPPED: "dropped-value" });
    expect(again).not.toBe(dropped);
    expect(again("dropped-value")).toBe("[secret:DROPPED]");
  });
});
