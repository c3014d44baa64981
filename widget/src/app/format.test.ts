import { describe, expect, test } from "vitest";
import { clampText, cutText, fillTemplate, formatMoney, formatSize, formatTime, last4, safeUrl } from "./format.ts";

describe("safeUrl", () => {
  test("accepts https, and http on loopback only while developing on loopback", () => {
    expect(safeUrl("https://shop.example/a?b=1")).toBe("https://shop.example/a?b=1");
    expect(safeUrl("http://localhost:5173/x", undefined, true)).toBe("http://localhost:5173/x");
    expect(safeUrl("http://127.0.0.1:8080/", undefined, true)).toBe("http://127.0.0.1:8080/");
    expect(safeUrl("http://localhost:5173/x", undefined, false)).toBeNull();
    expect(safeUrl("http://shop.example/", undefined, true)).toBeNull();
    for (const bad of ["http://shop.example/", "javascript:alert(1)", "data:text/html,x", "blob:https://a/b", "file:///etc/passwd", "ftp://a/", "java\tscript:alert(1)", " https://a.example", "https://user:pw@a.example/", "/relative", ""]) {
      expect(safeUrl(bad), bad).toBeNull();
    }
    expect(safeUrl(42)).toBeNull();
  });

  test("a relative path counts only when resolved against a base", () => {
    expect(safeUrl("/v1/files/abc", "https://gw.example/widget/app.html")).toBe("https://gw.example/v1/files/abc");
    expect(safeUrl("javascript:alert(1)", "https://gw.example/")).toBeNull();
  });
});

describe("formatting", () => {
  test("money uses the ISO 4217 currency and the locale", () => {
    expect(formatMoney(49.9, "EUR", "sl-SI").replace(/\s/g, " ")).toBe("49,90 €");
    expect(formatMoney(49.9, "USD", "en-US")).toBe("$49.90");
    expect(formatMoney(49.9, undefined, "en-US")).toBe("49.9");
    expect(formatMoney(49.9, "eur", "en-US")).toBe("49.9");
    expect(formatMoney("n/a", "EUR", "en-US")).toBe("n/a");
  });

  test("dates and date-times are formatted for the locale; other strings are left alone", () => {
    expect(formatTime("2026-03-04", "en-US")).toBe("Mar 4, 2026");
    expect(formatTime("next week", "en-US")).toBe("next week");
  });

  test("sizes read as B, KB and MB", () => {
    expect(formatSize(512, "en")).toBe("512 B");
    expect(formatSize(2048, "en")).toBe("2 KB");
    expect(formatSize(10_485_760, "en")).toBe("10 MB");
  });

  test("last4 keeps only the final four characters", () => {
    expect(last4("4111111111111111")).toBe("1111");
    expect(last4("12")).toBe("12");
  });

  test("a reply template fills {name} from the item and leaves unknown names as written", () => {
    expect(fillTemplate("Book {slot} at {place} {missing}", { slot: "10:00", place: "Ljubljana" })).toBe("Book 10:00 at Ljubljana {missing}");
    expect(fillTemplate("{a}", { a: "x".repeat(5000) })).toHaveLength(4000);
  });

  test("overlong text is cut with an ellipsis", () => {
    expect(clampText("abcdef", 4)).toBe("abc…");
    expect(clampText("abc", 4)).toBe("abc");
  });

  test("a cut never splits an emoji in two (a lone surrogate half)", () => {
    const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    // 3999 units then an emoji: a cut at 4000 would keep its first half only.
    const message = `${"x".repeat(3999)}😀 and more`;
    expect(cutText(message, 4000)).toBe("x".repeat(3999));
    expect(cutText(`${"x".repeat(3998)}😀`, 4000)).toBe(`${"x".repeat(3998)}😀`);
    expect(fillTemplate("{a}", { a: message })).toBe("x".repeat(3999));
    expect(lone.test(fillTemplate("{a}", { a: message }))).toBe(false);
    expect(clampText("ab😀cd", 4)).toBe("ab…");
    expect(clampText("abc😀d", 4)).toBe("abc…");
    for (let max = 1; max < 12; max++) expect(lone.test(clampText("😀".repeat(6), max))).toBe(false);
  });
});
