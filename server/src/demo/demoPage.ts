// The demo shop's web page server: the page with the widget's script tag, its assets, and the demo-only
// sign-in endpoint that signs an identity token for the demo customer (as a shop's own backend would).
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { mintIdentityToken } from "../identity/index.ts";
import { DEMO_CUSTOMER } from "./demoScript.ts";

export const DEMO_SITE_DIR = join(import.meta.dirname, "..", "..", "..", "examples", "demo-site");

export type DemoPageConfig = { gatewayUrl: string; agent: string; identitySecret: string; issuer: string; audience: string; offline: boolean };

const TYPES: Record<string, string> = { ".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".js": "text/javascript; charset=utf-8", ".png": "image/png" };

/** A listening page server; `configure` is called once the gateway runs (until then the page says it is starting). */
export type DemoPage = { server: Server; url: string; configure: (config: DemoPageConfig) => void; close: () => Promise<void> };

const escapeAttr = (value: string) => value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

export async function listenDemoPage(port: number): Promise<DemoPage> {
  let config: DemoPageConfig | undefined;
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://demo.invalid");
    const security = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };
    if (!config) return void response.writeHead(503, { "content-type": "text/plain; charset=utf-8", "retry-after": "2", ...security }).end("The Caplo demo is still starting. Reload in a moment.");
    if (url.pathname === "/demo/sign-in") {
      // Only the demo page itself may ask (a browser sends Origin on POST): no other site gets a token.
      const origin = request.headers.origin;
      const own = `http://${request.headers.host ?? ""}`;
      if (request.method !== "POST") return void response.writeHead(405, { allow: "POST", ...security }).end();
      if (origin !== own) return void response.writeHead(403, { "content-type": "application/json", ...security }).end(JSON.stringify({ code: "origin_refused", path: "origin", message: "only the demo page may sign in" }));
      // The shop's ordinary sign-in is level standard; a step-up asks for a fresh strong sign-in (high).
      const level = url.searchParams.get("level") === "high" ? "high" : "standard";
      const token = mintIdentityToken({
        algorithm: "HS256",
        secret: config.identitySecret,
        ttlSeconds: 600,
        claims: { sub: DEMO_CUSTOMER.id, ref: DEMO_CUSTOMER.id, level, auth_time: Math.floor(Date.now() / 1000), iss: config.issuer, aud: config.audience, name: DEMO_CUSTOMER.name, email: DEMO_CUSTOMER.email, jti: randomBytes(8).toString("hex") },
      });
      response.writeHead(200, { "content-type": "application/json", "cache-control": "no-store", ...security });
      return void response.end(JSON.stringify({ token, level, customer: DEMO_CUSTOMER }));
    }
    if (request.method !== "GET" && request.method !== "HEAD") return void response.writeHead(405, { allow: "GET, HEAD", ...security }).end();
    const name = url.pathname === "/" ? "index.html" : normalize(decodeURIComponent(url.pathname)).replace(/^[/\\]+/, "");
    if (name.startsWith("..") || name.includes("\0") || !TYPES[extname(name)]) return void response.writeHead(404, security).end("Not found");
    let body: Buffer | string;
    try {
      body = await readFile(join(DEMO_SITE_DIR, name));
    } catch {
      return void response.writeHead(404, security).end("Not found");
    }
    if (name === "index.html") {
      body = body
        .toString("utf8")
        .replaceAll("{{WIDGET_SRC}}", escapeAttr(`${config.gatewayUrl}/widget.js`))
        .replaceAll("{{AGENT}}", escapeAttr(config.agent))
        .replaceAll("{{MODE}}", config.offline ? "offline demo model" : "real model");
    }
    response.writeHead(200, { "content-type": TYPES[extname(name)]!, "cache-control": "no-cache", ...security });
    response.end(request.method === "HEAD" ? undefined : body);
  };
  const server = createServer((request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500).end("Internal error");
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${address.port}`,
    configure: (next) => (config = next),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
