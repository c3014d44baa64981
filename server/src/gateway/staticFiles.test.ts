// serveFile over real HTTP on loopback: the precompressed copies chosen by Accept-Encoding decode to the
// file's own bytes, every variant says Vary and its own ETag and length, and validators answer 304; the app
// page's CSP allows exactly the inline styles of the page served.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveFile, widgetAppPageHeaders, widgetCacheControl } from "./staticFiles.ts";

const body = Buffer.from(`console.log(${JSON.stringify("the app ".repeat(400))});`);
let dir: string;
let server: Server;
let base: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "caplo-static-"));
  mkdirSync(join(dir, "assets"));
  for (const name of ["app.js", "assets/app-1.js"]) {
    writeFileSync(join(dir, name), body);
    writeFileSync(join(dir, `${name}.br`), brotliCompressSync(body));
    writeFileSync(join(dir, `${name}.gz`), gzipSync(body));
  }
  writeFileSync(join(dir, "plain.json"), "{}");
  utimesSync(join(dir, "app.js"), new Date("2026-01-02T03:04:05.678Z"), new Date("2026-01-02T03:04:05.678Z"));
  server = createServer((req, res) => {
    const relative = new URL(req.url!, "http://x").pathname.slice(1);
    void serveFile(req, res, dir, relative, widgetCacheControl(relative), { "x-extra": "1" }).then((found) => {
      if (!found) res.writeHead(404).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((done) => server.close(done));
  rmSync(dir, { recursive: true, force: true });
});

/** A raw request (no decoding): status, headers and the bytes as sent. */
function get(path: string, headers: Record<string, string> = {}, method = "GET") {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; bytes: Buffer }>((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("serveFile", () => {
  it("sends the brotli, gzip or plain copy by Accept-Encoding, each decoding to the same bytes with its own length and ETag", async () => {
    const br = await get("/app.js", { "accept-encoding": "gzip, deflate, br" });
    const gz = await get("/app.js", { "accept-encoding": "gzip" });
    const plain = await get("/app.js", { "accept-encoding": "br;q=0, gzip;q=0" });
    const none = await get("/app.js");
    expect([br.headers["content-encoding"], gz.headers["content-encoding"], plain.headers["content-encoding"], none.headers["content-encoding"]]).toEqual(["br", "gzip", undefined, undefined]);
    expect(brotliDecompressSync(br.bytes).equals(body)).toBe(true);
    expect(gunzipSync(gz.bytes).equals(body)).toBe(true);
    expect(plain.bytes.equals(body) && none.bytes.equals(body)).toBe(true);
    for (const r of [br, gz, plain]) {
      expect(r.headers["content-length"]).toBe(String(r.bytes.length));
      expect(r.headers.vary).toBe("Accept-Encoding");
      expect(r.headers["content-type"]).toBe("text/javascript; charset=utf-8");
      expect(r.headers["last-modified"]).toBe("Fri, 02 Jan 2026 03:04:05 GMT");
      expect(r.headers["x-extra"]).toBe("1");
    }
    expect(br.bytes.length).toBeLessThan(gz.bytes.length);
    expect(new Set([br.headers.etag, gz.headers.etag, plain.headers.etag]).size).toBe(3);
    expect(none.headers.etag).toBe(plain.headers.etag);
  });

  it("answers 304 with the validators when If-None-Match names this encoding's ETag, 200 for another encoding's", async () => {
    const first = await get("/app.js", { "accept-encoding": "br" });
    const again = await get("/app.js", { "accept-encoding": "br", "if-none-match": `"other", ${first.headers.etag}` });
    expect(again.status).toBe(304);
    expect(again.bytes.length).toBe(0);
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(again.headers.vary).toBe("Accept-Encoding");
    expect(again.headers["cache-control"]).toBe("no-cache");
    expect((await get("/app.js", { "accept-encoding": "br", "if-none-match": `W/${first.headers.etag}` })).status).toBe(304);
    const otherEncoding = await get("/app.js", { "accept-encoding": "gzip", "if-none-match": String(first.headers.etag) });
    expect(otherEncoding.status).toBe(200);
    expect(gunzipSync(otherEncoding.bytes).equals(body)).toBe(true);
  });

  it("answers 304 to If-Modified-Since at or after the file's time, only without If-None-Match", async () => {
    expect((await get("/app.js", { "if-modified-since": "Fri, 02 Jan 2026 03:04:05 GMT" })).status).toBe(304);
    expect((await get("/app.js", { "if-modified-since": "Fri, 02 Jan 2026 03:04:04 GMT" })).status).toBe(200);
    expect((await get("/app.js", { "if-modified-since": "not a date" })).status).toBe(200);
    expect((await get("/app.js", { "if-modified-since": "Fri, 02 Jan 2026 03:04:05 GMT", "if-none-match": '"stale"' })).status).toBe(200);
  });

  it("HEAD gives the encoded length and no body", async () => {
    const head = await get("/app.js", { "accept-encoding": "br" }, "HEAD");
    const full = await get("/app.js", { "accept-encoding": "br" });
    expect(head.status).toBe(200);
    expect(head.bytes.length).toBe(0);
    expect(head.headers["content-length"]).toBe(String(full.bytes.length));
  });

  it("caches hashed assets for a year, immutable; the loader briefly; the app page with revalidation", async () => {
    expect((await get("/assets/app-1.js", { "accept-encoding": "br" })).headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(widgetCacheControl("widget.js")).toBe("public, max-age=300");
    expect(widgetCacheControl("app.html")).toBe("no-cache");
  });

  it("never serves a precompressed copy under its own name, nor outside the folder", async () => {
    expect((await get("/app.js.br")).status).toBe(404);
    expect((await get("/app.js.gz")).status).toBe(404);
    expect((await get("/..%2fapp.js")).status).toBe(404);
  });

  it("a symbolic link in the folder to a file or folder outside it serves nothing; one to a file inside serves it", async () => {
    const outside = mkdtempSync(join(tmpdir(), "caplo-static-outside-"));
    try {
      writeFileSync(join(outside, "secret.json"), '{"secret":"outside the served folder"}');
      symlinkSync(join(outside, "secret.json"), join(dir, "linked.json"));
      symlinkSync(outside, join(dir, "linked-folder"));
      // A precompressed copy that is a link out is not sent either: the plain file is.
      symlinkSync(join(outside, "secret.json"), join(dir, "plain.json.gz"));
      symlinkSync(join(dir, "plain.json"), join(dir, "alias.json"));
      expect((await get("/linked.json")).status).toBe(404);
      expect((await get("/linked-folder/secret.json")).status).toBe(404);
      const plain = await get("/plain.json", { "accept-encoding": "gzip" });
      expect([plain.status, plain.headers["content-encoding"], plain.bytes.toString()]).toEqual([200, undefined, "{}"]);
      expect((await get("/alias.json")).bytes.toString()).toBe("{}");
    } finally {
      for (const name of ["linked.json", "linked-folder", "plain.json.gz", "alias.json"]) rmSync(join(dir, name), { force: true });
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("a file without copies has no Vary; a request refusing every coding it has gets 406 with the reason", async () => {
    const plain = await get("/plain.json", { "accept-encoding": "br" });
    expect(plain.status).toBe(200);
    expect(plain.headers.vary).toBeUndefined();
    const refused = await get("/app.js", { "accept-encoding": "identity;q=0, deflate" });
    expect(refused.status).toBe(406);
    expect(refused.headers.vary).toBe("Accept-Encoding");
    expect(JSON.parse(refused.bytes.toString()).error).toMatchObject({ code: "not_acceptable", path: "accept-encoding" });
  });
});

describe("widgetAppPageHeaders", () => {
  const sha = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
  const policy = (styleSrc: string, ancestors: string) =>
    `default-src 'none'; script-src 'self'; style-src ${styleSrc}; connect-src 'self'; img-src 'self' https: http://localhost:* http://127.0.0.1:*; frame-src https: http://localhost:* http://127.0.0.1:*; base-uri 'none'; form-action 'none'; frame-ancestors ${ancestors}`;

  it("allows exactly the page's own inline styles by hash (no style file, no unsafe-inline) and frames by the given sites only", async () => {
    const pageDir = mkdtempSync(join(tmpdir(), "caplo-page-"));
    try {
      const first = "body{margin:0}\n";
      const second = ".x{color:red}";
      writeFileSync(join(pageDir, "app.html"), `<!doctype html><head><style>${first}</style><style>${second}</style></head><body></body>`);
      const headers = await widgetAppPageHeaders(pageDir, "https://shop.example https://www.shop.example");
      expect(headers).toEqual({ "content-security-policy": policy(`${sha(first)} ${sha(second)}`, "https://shop.example https://www.shop.example") });
      // A new build of the page (another size and time) gets the new page's hash, not the cached one.
      writeFileSync(join(pageDir, "app.html"), `<!doctype html><head><style>body{margin:1px}</style></head>`);
      utimesSync(join(pageDir, "app.html"), new Date("2026-02-01T00:00:00Z"), new Date("2026-02-01T00:00:00Z"));
      expect((await widgetAppPageHeaders(pageDir, "'none'"))!["content-security-policy"]).toBe(policy(sha("body{margin:1px}"), "'none'"));
      // No inline style: no style at all.
      writeFileSync(join(pageDir, "app.html"), "<!doctype html><title>app</title>");
      utimesSync(join(pageDir, "app.html"), new Date("2026-03-01T00:00:00Z"), new Date("2026-03-01T00:00:00Z"));
      expect((await widgetAppPageHeaders(pageDir, "'none'"))!["content-security-policy"]).toBe(policy("'none'", "'none'"));
    } finally {
      rmSync(pageDir, { recursive: true, force: true });
    }
  });

  it("is undefined when the folder has no app page", async () => {
    expect(await widgetAppPageHeaders(dir, "'none'")).toBeUndefined();
  });
});
