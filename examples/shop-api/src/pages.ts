// The shop's public pages: help articles as small HTML documents and product images as SVG, both
// built from seed data with every value escaped.
import { HELP_ARTICLES, type HelpArticle, type Product } from "./data.ts";

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

const STYLE =
  "body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:24px;color:#1d2433;background:#fff}" +
  "h1{font-size:22px;margin:0 0 12px}a{color:#b4532a}p{max-width:640px}footer{margin-top:24px;color:#6b7280;font-size:13px}" +
  // The articles' links as a bar of their own above the article, so they do not run into its title.
  "nav{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:14px;padding-bottom:12px;margin-bottom:16px;border-bottom:1px solid #e5e7eb}";

function document(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

export function helpPage(article: HelpArticle): string {
  const nav = HELP_ARTICLES.map((entry) => `<a href="/help/${escapeHtml(entry.topic)}">${escapeHtml(entry.title)}</a>`).join("");
  const paragraphs = article.body.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`).join("");
  return document(`${article.title} - Caplo demo shop`, `<nav>${nav}</nav><main><h1>${escapeHtml(article.title)}</h1>${paragraphs}</main><footer>Caplo demo shop help centre</footer>`);
}

export function helpIndex(): string {
  const items = HELP_ARTICLES.map((entry) => `<li><a href="/help/${escapeHtml(entry.topic)}">${escapeHtml(entry.title)}</a>: ${escapeHtml(entry.summary)}</li>`).join("");
  return document("Help - Caplo demo shop", `<main><h1>Help centre</h1><ul>${items}</ul></main>`);
}

/** A flat product illustration: the product's colour and initials on a square. */
export function productImage(product: Product): string {
  const initials = product.name
    .split(/\s+/)
    .map((word) => word[0] ?? "")
    .join("")
    .slice(0, 3)
    .toUpperCase();
  const light = /^#(?:[c-f][0-9a-f]){3}$/i.test(product.colour);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="320" viewBox="0 0 320 320"><rect width="320" height="320" fill="${product.colour}"/><text x="160" y="180" font-family="sans-serif" font-size="72" text-anchor="middle" fill="${light ? "#222" : "#fff"}">${escapeHtml(initials)}</text></svg>`;
}
