// @vitest-environment happy-dom
import { describe, expect, test } from "vitest";
import { markdownToHtml } from "./markdown.ts";

const dom = (html: string) => {
  const div = document.createElement("div");
  div.innerHTML = html;
  return div;
};

describe("agent text markdown subset", () => {
  test("bold, italic, code, lists and paragraphs become their tags", () => {
    // happy-dom's parser drops the first element's own tag inside DOMPurify, so this checks the parts
    // (the exact markup is seen in Chromium by the end-to-end test).
    const html = markdownToHtml("**Order** is *on its way*: `SO-1002`\n\n- one\n- two\n\n1. first\n2. second\n\nlast\nline");
    expect(html).toContain("<strong>Order</strong> is <em>on its way</em>: <code>SO-1002</code>");
    expect(html).toContain("<ul><li>one</li><li>two</li></ul><ol><li>first</li><li>second</li></ol><p>last<br>line</p>");
  });

  test("markup in the text is escaped, never parsed", () => {
    const div = dom(markdownToHtml('<img src=x onerror="alert(1)"><script>alert(1)</script><b>x</b>'));
    expect(div.querySelector("img, script, b")).toBeNull();
    expect(div.textContent).toBe('<img src=x onerror="alert(1)"><script>alert(1)</script><b>x</b>');
  });

  test("https links open in a new tab without the opener", () => {
    const a = dom(markdownToHtml("See [the policy](https://shop.example/returns) or https://shop.example/faq.")).querySelectorAll("a");
    expect([...a].map((x) => [x.getAttribute("href"), x.textContent, x.getAttribute("target"), x.getAttribute("rel")])).toEqual([
      ["https://shop.example/returns", "the policy", "_blank", "noopener noreferrer nofollow"],
      ["https://shop.example/faq", "https://shop.example/faq", "_blank", "noopener noreferrer nofollow"],
    ]);
  });

  test("javascript:, data:, vbscript: and non-local http links stay plain text", () => {
    for (const href of ["javascript:alert(1)", "JAVASCRIPT:alert(1)", "data:text/html,<b>x</b>", "vbscript:x", "http://evil.example/", "//evil.example/x"]) {
      const div = dom(markdownToHtml(`[click](${href})`));
      expect(div.querySelector("a[href]"), href).toBeNull();
    }
  });

  test("a quote inside a link cannot break out of the href attribute", () => {
    const div = dom(markdownToHtml('[x](https://a.example/"onmouseover="alert(1))'));
    const a = div.querySelector("a");
    expect(a?.getAttribute("onmouseover") ?? null).toBeNull();
  });
});
