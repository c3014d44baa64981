// Static files the gateway serves: the widget's build (widget/dist: `/widget.js` and `/widget/<path>`)
// and the published JSON Schemas (`/schemas/<name>.json`). Paths are resolved inside their folder only.
import { createHash } from "node:crypto";
import { createReadStream, type Stats } from "node:fs";
import { readFile, realpath, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, resolve, sep } from "node:path";
import { inlineStyles, styleHash, widgetAppPolicy } from "@caplo/shared/widgetPage";
import { chooseEncoding, ENCODINGS } from "./contentEncoding.ts";
import { sendError } from "./http.ts";

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".map": "application/json; charset=utf-8",
};

/** The absolute path of `relative` inside `root`, or undefined when it would leave it (or is hidden). */
export function insideRoot(root: string, relative: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(relative);
  } catch {
    return undefined;
  }
  if (decoded.includes("\0") || decoded.split("/").some((segment) => segment.startsWith("."))) return undefined;
  const base = resolve(root);
  const full = resolve(base, `.${sep}${decoded}`);
  return full.startsWith(base + sep) ? full : undefined;
}

/**
 * A value computed from a file's bytes, kept per path while its size and modification time stay the same:
 * read once per version of the file.
 */
function perVersion<T>(compute: (bytes: Buffer) => T): (full: string, info: Stats) => Promise<T> {
  const known = new Map<string, { size: number; mtimeMs: number; value: T }>();
  return async (full, info) => {
    const hit = known.get(full);
    if (hit && hit.size === info.size && hit.mtimeMs === info.mtimeMs) return hit.value;
    const value = compute(await readFile(full));
    if (known.size > 2000) known.clear();
    known.set(full, { size: info.size, mtimeMs: info.mtimeMs, value });
    return value;
  };
}

/** A hash of the bytes sent, so every node of a cluster gives the same file the same tag. */
const etagOf = perVersion((bytes) => `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 22)}"`);

/** The CSP hashes of a page's inline style elements. */
const styleHashesOf = perVersion((bytes) => inlineStyles(bytes.toString("utf8")).map(styleHash));

/**
 * The widget app page's headers: its Content-Security-Policy allowing exactly the inline styles the page
 * holds (by their hashes, computed from the file served), scripts and connections from this host only, and
 * framing by `frameAncestors` only. Undefined when the page is not there.
 */
export async function widgetAppPageHeaders(root: string, frameAncestors: string): Promise<Record<string, string> | undefined> {
  const full = insideRoot(root, "app.html");
  const info = full ? await fileInfo(full) : undefined;
  if (!full || !info) return undefined;
  return { "content-security-policy": widgetAppPolicy(await styleHashesOf(full, info), frameAncestors) };
}

/**
 * Whether `relative` names an HTML page of `root` however the request spells it (`app%2Ehtml`, `/app.html`,
 * `app.html/`, `%61pp.html` all reach app.html): such a page is served only with the app page's headers, so
 * no spelling of its path serves it without its `frame-ancestors`.
 */
export function isHtmlPage(root: string, relative: string): boolean {
  return extname(insideRoot(root, relative) ?? "") === ".html";
}

/** Whether If-None-Match names `etag` (weak comparison, RFC 9110 §13.1.2) or is `*`. */
export function noneMatch(header: string, etag: string): boolean {
  if (header.trim() === "*") return true;
  const strip = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => strip(tag) === strip(etag));
}

const fileInfo = (path: string) => stat(path).then((info) => (info.isFile() ? info : undefined), () => undefined);

/**
 * Whether paths inside `root` by name are inside it on disk too: a symbolic link in a served folder (a build
 * step's, a package's copied in) that points outside it serves nothing, as a `..` would. The folder's own
 * path is resolved once per request, each file's once.
 */
async function onDiskInside(root: string): Promise<(full: string) => Promise<boolean>> {
  const realRoot = await realpath(root).catch(() => undefined);
  return async (full) => realRoot !== undefined && (await realpath(full).then((real) => real.startsWith(realRoot + sep), () => false));
}

/**
 * Serve one file if it exists; false when there is no such file (the caller answers 404). A brotli or gzip
 * copy built beside it (`name.br`, `name.gz`) is sent instead when the request's Accept-Encoding takes it,
 * with `Vary: Accept-Encoding` on every variant and an ETag per encoding; If-None-Match (or, without it,
 * If-Modified-Since) that still holds answers 304. The copies are never served under their own names.
 */
export async function serveFile(req: IncomingMessage, res: ServerResponse, root: string, relative: string, cacheControl: string, headers: Record<string, string> = {}): Promise<boolean> {
  const full = insideRoot(root, relative);
  if (!full || ENCODINGS.some((e) => full.endsWith(e.suffix))) return false;
  const info = await fileInfo(full);
  if (!info) return false;
  const inside = await onDiskInside(root);
  if (!(await inside(full))) return false;
  const copies = await Promise.all(ENCODINGS.map(async (e) => ({ ...e, info: (await inside(full + e.suffix)) ? await fileInfo(full + e.suffix) : undefined })));
  const available = copies.filter((c) => c.info).map((c) => c.name);
  const choice = chooseEncoding(header(req, "accept-encoding"), available);
  const vary: Record<string, string> = available.length > 0 ? { vary: "Accept-Encoding" } : {};
  if (choice === null) {
    sendError(res, 406, { code: "not_acceptable", path: "accept-encoding", message: `this file is sent as ${["identity", ...available].join(", ")}; the request's Accept-Encoding refuses each of them` }, vary);
    return true;
  }
  const copy = copies.find((c) => c.name === choice);
  const sent = copy?.info ? { path: full + copy.suffix, info: copy.info } : { path: full, info };
  const etag = await etagOf(sent.path, sent.info);
  const modified = new Date(Math.floor(info.mtimeMs / 1000) * 1000);
  const common = {
    "cache-control": cacheControl,
    etag,
    "last-modified": modified.toUTCString(),
    ...vary,
    ...headers,
  };
  const ifNoneMatch = header(req, "if-none-match");
  const ifModifiedSince = header(req, "if-modified-since");
  const since = ifModifiedSince === undefined ? NaN : Date.parse(ifModifiedSince);
  if (ifNoneMatch !== undefined ? noneMatch(ifNoneMatch, etag) : !Number.isNaN(since) && modified.getTime() <= since) {
    res.writeHead(304, common);
    res.end();
    return true;
  }
  res.writeHead(200, {
    "content-type": TYPES[extname(full)] ?? "application/octet-stream",
    "content-length": String(sent.info.size),
    ...(copy ? { "content-encoding": copy.name } : {}),
    "x-content-type-options": "nosniff",
    ...common,
  });
  if (req.method === "HEAD") {
    res.end();
    return true;
  }
  await new Promise<void>((done) => {
    const stream = createReadStream(sent.path);
    stream.on("error", () => {
      res.destroy();
      done();
    });
    stream.on("end", () => done());
    stream.pipe(res);
  });
  return true;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/**
 * How long a widget file may be cached: hashed assets for a year without asking again; the loader for five
 * minutes, then revalidated by its ETag; the app page kept but revalidated on every use (a 304 when unchanged),
 * so a new build's page and its new asset names reach visitors at once.
 */
export function widgetCacheControl(relative: string): string {
  if (relative.startsWith("assets/")) return "public, max-age=31536000, immutable";
  if (relative === "widget.js") return "public, max-age=300";
  return "no-cache";
}
