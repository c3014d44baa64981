// The gateway's static files against requests that spell a path another way (tests/attacks/README.md): the
// widget app page reached by an encoded, doubled or trailing-slash path must carry the same
// Content-Security-Policy (its frame-ancestors is what keeps the agent on its own sites), and no spelling of a
// path under /widget, /console, /schemas or /docs reaches a file beside those folders. Real gateway on a
// loopback port (the composition root's test stack), raw HTTP so the path is sent exactly as written.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ORIGIN, startStack, type Stack } from "../gateway/support/stack.ts";

const SECRET = "the-secret-beside-the-served-folders";
let stack: Stack;
let root: string;

beforeAll(async () => {
  // The served folders side by side, with a file beside them no request may reach.
  root = mkdtempSync(join(tmpdir(), "caplo-static-attack-"));
  const widgetDir = join(root, "widget");
  const consoleDir = join(root, "console");
  const schemasDir = join(root, "schemas");
  const docsDir = join(root, "docs");
  for (const dir of [widgetDir, consoleDir, schemasDir, docsDir]) mkdirSync(join(dir, "assets"), { recursive: true });
  writeFileSync(join(root, "secret.json"), JSON.stringify({ secret: SECRET }));
  writeFileSync(join(root, "secret.html"), `<p>${SECRET}</p>`);
  writeFileSync(join(widgetDir, "app.html"), "<!doctype html><title>app</title><style>body{margin:0}</style>");
  writeFileSync(join(widgetDir, "widget.js"), "console.log('loader')");
  writeFileSync(join(widgetDir, ".env"), SECRET);
  writeFileSync(join(consoleDir, "index.html"), "<!doctype html><title>console</title>");
  writeFileSync(join(consoleDir, "assets", "app-1.js"), "export {}");
  writeFileSync(join(schemasDir, "caplo.schema.json"), "{}");
  writeFileSync(join(docsDir, "index.html"), "<!doctype html><title>docs</title>");
  stack = await startStack({ gateway: { widgetDir, consoleDir, schemasDir, docsDir } });
});
afterAll(async () => {
  await stack?.close();
  rmSync(root, { recursive: true, force: true });
});

/** A GET with the path exactly as written (fetch and URL would normalize it first). */
function get(path: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const { hostname, port } = new URL(stack.base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, method: "GET" }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the widget app page under another spelling of its path", () => {
  it("every spelling that serves app.html serves it with the agent's frame-ancestors, as /widget/app.html does", async () => {
    const canonical = await get("/widget/app.html?agent=shop-agent");
    expect(canonical.status).toBe(200);
    const policy = canonical.headers["content-security-policy"];
    expect(policy).toMatch(new RegExp(`frame-ancestors ${ORIGIN}$`));
    const spellings = [
      "/widget/app%2Ehtml", // an encoded dot
      "/widget/app%2ehtml",
      "/widget/%61pp.html", // an encoded letter
      "/widget//app.html", // a doubled slash
      "/widget/app.html/", // a trailing slash
      "/widget/app.html//",
      "/widget/./app.html",
      "/widget/assets/../app.html",
      "/widget/assets/%2E%2E/app.html",
      "/widget/assets%2F..%2Fapp.html",
    ];
    for (const spelling of spellings) {
      const answer = await get(`${spelling}?agent=shop-agent`);
      // Served, then with the very same policy; or not served at all.
      if (answer.status === 200) expect(answer.headers["content-security-policy"], spelling).toBe(policy);
      else expect(answer.status, spelling).toBe(404);
    }
    // An agent that is not served: no site may frame the page, whatever the spelling.
    expect((await get("/widget/app%2Ehtml?agent=nobody")).headers["content-security-policy"]).toMatch(/frame-ancestors 'none'$/);
  });
});

describe("paths out of the served folders", () => {
  it("encoded dots and slashes, absolute paths, backslashes, NUL and hidden files under /widget, /console, /schemas and /docs reach nothing outside", async () => {
    const attempts = [
      "/widget/..%2Fsecret.json",
      "/widget/%2E%2E%2Fsecret.json",
      "/widget/%2e%2e/secret.json",
      "/widget/assets/..%2F..%2Fsecret.json",
      "/widget/..%5Csecret.json",
      "/widget/%2F..%2Fsecret.json",
      `/widget/${encodeURIComponent(join(root, "secret.json"))}`,
      "/widget/secret.json%00.js",
      "/widget/.env",
      "/widget/%2Eenv",
      "/widget/..%2Fsecret.html",
      "/console/assets/..%2F..%2Fsecret.json",
      "/console/assets/%2e%2e/%2e%2e/secret.json",
      `/console/assets/${encodeURIComponent(join(root, "secret.json"))}`,
      "/schemas/..%2Fsecret.json",
      "/schemas/%2E%2E%2Fsecret.json",
      "/docs/..%2Fsecret.html",
      "/docs/%2e%2e/secret.html",
      "/docs/..%2Fsecret.json",
    ];
    for (const path of attempts) {
      const answer = await get(path);
      expect(answer.body, path).not.toContain(SECRET);
      // The console answers its one page for any path that is not an asset: never the file asked for.
      if (path.startsWith("/console/") && answer.status === 200) expect(answer.body, path).toContain("<title>console</title>");
      else expect([400, 404], path).toContain(answer.status);
    }
  });
});

describe("the console's pages", () => {
  it("the page and its assets may not be framed, run only their own script and are not sniffed, under any path", async () => {
    for (const path of ["/console", "/console/", "/console/conversations/x", "/console/%2e%2e/console/x", "/console/assets/app-1.js"]) {
      const answer = await get(path);
      expect(answer.status, path).toBe(200);
      expect(answer.headers["content-security-policy"], path).toMatch(/frame-ancestors 'none'/);
      expect(answer.headers["content-security-policy"], path).toMatch(/script-src 'self';/);
      expect(answer.headers["x-frame-options"], path).toBe("DENY");
      expect(answer.headers["x-content-type-options"], path).toBe("nosniff");
    }
  });
});
