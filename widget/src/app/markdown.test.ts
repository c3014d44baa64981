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

  test("a link whose label names another host shows where it goes; a lookalike host in another script is shown as xn--", () => {
    const links = (text: string) => [...dom(markdownToHtml(text)).querySelectorAll("a")].map((a) => [a.getAttribute("href"), a.textContent]);
    // An injected model dresses a link to its own site as the shop's.
    expect(links("[https://bank.example/login](https://evil.example/login)")).toEqual([["https://evil.example/login", "https://evil.example/login"]]);
    expect(links("[help@bank.example](https://evil.example/)")).toEqual([["https://evil.example/", "https://evil.example/"]]);
    expect(links("[`bank.example`](https://evil.example/)")).toEqual([["https://evil.example/", "https://evil.example/"]]);
    expect(links("[log in at https://bank.example](https://evil.example/)")).toEqual([["https://evil.example/", "https://evil.example/"]]);
    // Cyrillic "а" in place of the Latin one: the label and the autolink show the host the browser will open.
    expect(links("[apple.example](https://\u0430pple.example/)")).toEqual([["https://xn--pple-43d.example/", "https://xn--pple-43d.example/"]]);
    expect(links("see https://\u0430pple.example/login now")).toEqual([["https://xn--pple-43d.example/login", "https://xn--pple-43d.example/login"]]);
    // Labels that name the link's own host (or a parent of it), or no host at all, stay as written.
    expect(links("[shop.example returns](https://www.shop.example/returns) [e.g. v1.2 notes](https://shop.example/notes)")).toEqual([
      ["https://www.shop.example/returns", "shop.example returns"],
      ["https://shop.example/notes", "e.g. v1.2 notes"],
    ]);
  });

  test("a quote inside a link cannot break out of the href attribute", () => {
    const div = dom(markdownToHtml('[x](https://a.example/"onmouseover="alert(1))'));
    const a = div.querySelector("a");
    expect(a?.getAttribute("onmouseover") ?? null).toBeNull();
  });
});
