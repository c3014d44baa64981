// The small Markdown subset agent text may use (paragraphs, line breaks, **bold**, *italic*, `code`,
// "- " and "1. " lists, [text](https://…) links and bare https links), turned into HTML from escaped
// text and then sanitized by DOMPurify so that only these tags and https links can ever reach the page.
import DOMPurify from "dompurify";
import { safeUrl } from "./format.ts";

const ALLOWED_TAGS = ["p", "br", "strong", "em", "code", "ul", "ol", "li", "a"];
const ALLOWED_ATTR = ["href", "target", "rel"];

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Inline markup of one escaped line. Links are checked with safeUrl; an unsafe one stays plain text. */
function inline(escaped: string): string {
  const codes: string[] = [];
  // Code spans first, so nothing inside them is treated as markup.
  let out = escaped.replace(/`([^`]+)`/g, (_, code: string) => {
    codes.push(code);
    return `\u0000${codes.length - 1}\u0000`;
  });
  out = out.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (whole, label: string, href: string) => {
    const url = safeUrl(unescapeAttr(href));
    return url ? link(url, honestLabel(url, label, label.replace(/\u0000(\d+)\u0000/g, (_, i: string) => codes[Number(i)] ?? ""))) : whole;
  });
  out = out.replace(/(^|[\s(])(https:\/\/[^\s<)]+[^\s<).,;:!?'"])/g, (whole, lead: string, href: string) => {
    const url = safeUrl(unescapeAttr(href));
    // A host in another script (a Cyrillic "а" in "аpple.com") is shown as the browser will go to it: xn--….
    return url ? `${lead}${link(url, new URL(url).hostname.split(".").some((part) => part.startsWith("xn--")) ? escapeHtml(url) : href)}` : whole;
  });
  out = out.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>");
  out = out.replace(/(^|[^*\w])\*([^*\s][^*]*?)\*(?!\w)/g, "$1<em>$2</em>");
  return out.replace(/\u0000(\d+)\u0000/g, (_, i: string) => `<code>${codes[Number(i)] ?? ""}</code>`);
}

/** Host names a link's label may name: "bank.example", "https://bank.example/x", "help@bank.example". */
const NAMED_HOST = /(?<![\p{L}\p{N}.-])((?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+\p{L}[\p{L}\p{N}-]*[\p{L}\p{N}])(?![\p{L}\p{N}-])/gu;

/**
 * A link's label, unless it names another host than the link goes to ("[https://bank.example](https://evil…)",
 * a lookalike in another script): then the link's own URL is its label, so the customer sees where it goes.
 */
function honestLabel(url: string, label: string, labelText: string): string {
  const host = new URL(url).hostname.replace(/^www\./, "");
  for (const [, named] of unescapeAttr(labelText).matchAll(NAMED_HOST)) {
    let shown: string;
    try {
      shown = new URL(`https://${named}`).hostname.replace(/^www\./, "");
    } catch {
      return escapeHtml(url);
    }
    if (shown !== host && !host.endsWith(`.${shown}`)) return escapeHtml(url);
  }
  return label;
}

function unescapeAttr(text: string): string {
  return text.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));
}

function link(url: string, label: string): string {
  return `<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer nofollow">${label}</a>`;
}

/** Agent text as HTML of the subset. The input is treated as text: any markup in it is escaped. */
export function markdownToHtml(text: string): string {
  const blocks = text.replace(/\r\n?/g, "\n").split(/\n{2,}/);
  const html = blocks.map((block) => {
    const lines = block.split("\n").filter((line) => line.trim() !== "");
    if (lines.length === 0) return "";
    if (lines.every((line) => /^\s*[-*] /.test(line))) {
      return `<ul>${lines.map((l) => `<li>${inline(escapeHtml(l.replace(/^\s*[-*] /, "")))}</li>`).join("")}</ul>`;
    }
    if (lines.every((line) => /^\s*\d{1,3}[.)] /.test(line))) {
      return `<ol>${lines.map((l) => `<li>${inline(escapeHtml(l.replace(/^\s*\d{1,3}[.)] /, "")))}</li>`).join("")}</ol>`;
    }
    return `<p>${lines.map((l) => inline(escapeHtml(l))).join("<br>")}</p>`;
  });
  return sanitize(html.join(""));
}

let hooked = false;

/** DOMPurify with only the subset's tags, and only https (or loopback http) hrefs. */
export function sanitize(html: string): string {
  if (!hooked) {
    DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.nodeName === "A") {
        if (!safeUrl(node.getAttribute("href"))) node.removeAttribute("href");
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer nofollow");
      }
    });
    hooked = true;
  }
  return DOMPurify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, ALLOW_DATA_ATTR: false, ALLOW_ARIA_ATTR: false });
}
