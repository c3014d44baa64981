// Static files the gateway serves: the widget's build (widget/dist: `/widget.js` and `/widget/<path>`)
// and the published JSON Schemas (`/schemas/<name>.json`). Paths are resolved inside their folder only.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { ServerResponse } from "node:http";
import { extname, resolve, sep } from "node:path";

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

/** Serve one file if it exists; false when there is no such file (the caller answers 404). */
export async function serveFile(res: ServerResponse, root: string, relative: string, cacheControl: string, head = false, headers: Record<string, string> = {}): Promise<boolean> {
  const full = insideRoot(root, relative);
  if (!full) return false;
  const info = await stat(full).catch(() => undefined);
  if (!info?.isFile()) return false;
  res.writeHead(200, {
    "content-type": TYPES[extname(full)] ?? "application/octet-stream",
    "content-length": String(info.size),
    "cache-control": cacheControl,
    "x-content-type-options": "nosniff",
    ...headers,
  });
  if (head) {
    res.end();
    return true;
  }
  await new Promise<void>((done) => {
    const stream = createReadStream(full);
    stream.on("error", () => {
      res.destroy();
      done();
    });
    stream.on("end", () => done());
    stream.pipe(res);
  });
  return true;
}

/** How long a widget file may be cached: hashed assets for a year, the loader briefly, the app page never. */
export function widgetCacheControl(relative: string): string {
  if (relative.startsWith("assets/")) return "public, max-age=31536000, immutable";
  if (relative === "widget.js") return "public, max-age=300";
  return "no-cache";
}
