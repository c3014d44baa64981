// The widget app page's Content-Security-Policy, written once: the build puts it in app.html's meta tag
// (so the page protects itself on any static host) and the gateway sends it as the page's header with
// frame-ancestors added (which a meta tag cannot carry). For Node (the build and the gateway), not the
// browser: imported as @caplo/shared/widgetPage, not from the package's index.
import { createHash } from "node:crypto";

/**
 * The policy for the app page. `styleHashes` are the CSP source expressions of the page's inline
 * `<style>` elements ('sha256-…'): the only styles the page may apply (no style file, no 'unsafe-inline').
 * `frameAncestors` is the source list of the sites that may frame the page; omitted in the meta tag.
 */
export function widgetAppPolicy(styleHashes: readonly string[], frameAncestors?: string): string {
  const directives = [
    "default-src 'none'",
    "script-src 'self'",
    `style-src ${styleHashes.length > 0 ? styleHashes.join(" ") : "'none'"}`,
    "connect-src 'self'",
    // Map tiles come from the owner's tile source (https), and loopback during development.
    "img-src 'self' https: http://localhost:* http://127.0.0.1:*",
    "frame-src https: http://localhost:* http://127.0.0.1:*",
    "base-uri 'none'",
    "form-action 'none'",
  ];
  if (frameAncestors !== undefined) directives.push(`frame-ancestors ${frameAncestors}`);
  return directives.join("; ");
}

/** The CSP source expression that allows one inline style element with exactly this text. */
export function styleHash(text: string): string {
  return `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;
}

/** The inline `<style>` elements' texts of a page, in order (the build writes them as plain `<style>`). */
export function inlineStyles(html: string): string[] {
  return [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((match) => match[1]!);
}
