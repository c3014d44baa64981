// The gateway: one Node HTTP server with `ws`. It serves the widget's WebSocket at /v1/ws (Origin checked
// against this server's own origins and the agents' allowed origins, per-address socket and conversation
// limits, frame size and rate limits, a hello timeout, heartbeats), the widget's static files,
// /schemas/*.json, /healthz and /readyz, the team's HTTP API, and any routes channels register.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { stat } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { WebSocketServer, type WebSocket } from "ws";
import { CLOSE, WS_PATH } from "@caplo/shared";
import { FILES_PATH, type Engine } from "../engine/engine.ts";
import { workspaceOf, type AgentRelease, type ReleaseSource } from "../engine/release.ts";
import { createIdentityVerifier } from "../identity/index.ts";
import { AddressCounter, DEFAULT_ADDRESS_LIMITS, type AddressLimits } from "./addressLimits.ts";
import { addressKey, clientAddress, trustedProxies, type TrustedProxies } from "./clientAddress.ts";
import { Connection } from "./connection.ts";
import { DEFAULT_LIMITS, type ConnectionLimits, type VerifyResult } from "./connectionDeps.ts";
import { ownOrigins } from "./origins.ts";
import { DEFAULT_HELLO_TIMEOUT_MS } from "./settings.ts";
import { RouteTable, sendError, sendJson, type RouteHandler } from "./http.ts";
import { isHtmlPage, serveFile, widgetAppPageHeaders, widgetCacheControl } from "./staticFiles.ts";
import { registerTeamApi } from "./teamApi.ts";
import type { EvalService } from "../eval/evalService.ts";
import type { TeamMember } from "./teamMembers.ts";
import { TeamDirectory } from "../members/index.ts";
import { registerConsoleApi } from "../console/consoleApi.ts";
import { ConsoleSessions } from "../console/sessions.ts";
import { registerRemoteReviewApi } from "../console/remoteReviewApi.ts";
import type { RemoteResolve } from "../remote/remoteFetch.ts";
import type { LogStore } from "../runner/logStore.ts";

export type GatewayOptions = {
  engine: Engine;
  releases: ReleaseSource;
  /** Folder of the widget's build; default widget/dist of this repository. */
  widgetDir?: string;
  /** Folder of the published JSON Schemas; default schemas/ of this repository. */
  schemasDir?: string;
  /** Folder of the built docs site, served at /docs/ (server/src/docs/site.ts); default dist/docs-site. */
  docsDir?: string;
  /**
   * The team API's members configured on this node, each with a token of their own (teamMembers.ts); members
   * managed in the store (`caplo member add`) are found there too. The API answers 503 without any.
   */
  teamMembers?: readonly TeamMember[];
  /** Evaluations on this server for the team API (eval/evalService.ts); without it the eval routes are absent. */
  evals?: EvalService;
  /** Folder of the team console's build, served at /console (console/vite.config.ts); default console/dist. */
  consoleDir?: string;
  /** The team console's session idle expiry (milliseconds); default 30 minutes (console/sessions.ts). */
  consoleIdleMs?: number;
  /** This node's invocation records, shown in the console's conversation view. */
  logStore?: LogStore;
  /** The model a release's turns use, as the console names it. */
  modelOf?: (release: AgentRelease) => string;
  /**
   * The console's remote MCP review (console/remoteReviewApi.ts): where a workspace's published remote versions
   * are kept, and whether private networks may be reached (CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK). Without it the
   * routes are absent. The authorization header's value is read through `secrets`. `resolve` replaces the
   * system resolver for the URL check and every connection (tests of the address rule).
   */
  remoteReview?: { versionsDir: (workspaceId: string) => string; allowPrivateNetwork: boolean; resolve?: RemoteResolve };
  /**
   * Workspace secrets (for HS256 identity keys), by name in the agent's workspace; read at each sign-in, so
   * a changed key is used without a restart.
   */
  secrets?: (name: string, workspaceId: string) => string | undefined | Promise<string | undefined>;
  /** Verify an identity token for an agent; default: the agent's `identity` settings. */
  verifyIdentity?: (release: AgentRelease, token: string) => VerifyResult | Promise<VerifyResult>;
  limits?: Partial<ConnectionLimits>;
  /** Ping every connection this often; one that missed the last ping is closed. Default 30 s. */
  heartbeatMs?: number;
  /** Frames larger than this close the socket (1009) before they are read; below it they get an error frame. */
  hardMaxPayloadBytes?: number;
  log?: (level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>) => void;
  /** The clock of the per-connection rate limit and the per-address conversation limit (milliseconds); default Date.now. */
  now?: () => number;
  /**
   * The origins browsers reach this server at (CAPLO_PUBLIC_URL): a socket from one of them is the widget app
   * in its iframe. The origin of the address `listen` binds is always one too; the Host header never is.
   */
  publicOrigins?: readonly string[];
  /**
   * The team console on a port of its own (CAPLO_CONSOLE_PORT, on the same address), a browser origin apart
   * from the widget app's: /console, console sign-in and session cookies answer only there, and the widget's
   * paths never do. `publicOrigins`: where browsers reach that port (CAPLO_CONSOLE_PUBLIC_URL), besides its
   * own address. Without it the console is served beside the widget as before.
   */
  console?: { port: number; publicOrigins?: readonly string[] };
  /** Proxies (addresses or CIDR ranges) whose X-Forwarded-For names the client (CAPLO_TRUSTED_PROXIES); default none. */
  trustedProxies?: readonly string[];
  /** Per-address limits on open sockets and new conversations per minute (addressLimits.ts). */
  addressLimits?: Partial<AddressLimits>;
  /** Close a socket that says no hello within this long; default 10 s. */
  helloTimeoutMs?: number;
};

const REPO_ROOT = join(import.meta.dirname, "..", "..", "..");

export class Gateway {
  readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly routes = new RouteTable();
  private readonly options: GatewayOptions;
  private readonly limits: ConnectionLimits;
  private readonly connections = new Set<Connection>();
  private readonly byConversation = new Map<string, Set<Connection>>();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly stopTyping: () => void;
  /** Verifiers by release id, each with the identity secret's value it was made with (rebuilt when it changes). */
  private readonly verifiers = new Map<string, { secret: string | undefined; verify: (token: string) => VerifyResult }>();
  private readonly addresses: AddressCounter;
  private readonly proxies: TrustedProxies;
  /** This server's own origins: the configured ones until `listen` adds its address's. */
  private ownOrigins: Set<string>;
  /** The console's own listener and the requests that reached it (GatewayOptions.console). */
  private readonly consoleServer?: Server;
  private readonly viaConsole = new WeakSet<IncomingMessage>();
  private consoleOrigins = new Set<string>();
  private consoleAddressInfo?: AddressInfo;

  constructor(options: GatewayOptions) {
    this.options = options;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.addresses = new AddressCounter({ ...DEFAULT_ADDRESS_LIMITS, ...options.addressLimits }, options.now ?? Date.now);
    this.proxies = trustedProxies(options.trustedProxies ?? []);
    this.ownOrigins = new Set(options.publicOrigins ?? []);
    this.server = createServer((req, res) => void this.request(req, res));
    if (options.console) {
      this.consoleOrigins = new Set(options.console.publicOrigins ?? []);
      this.consoleServer = createServer((req, res) => {
        this.viaConsole.add(req);
        void this.request(req, res);
      });
    }
    this.wss = new WebSocketServer({ noServer: true, maxPayload: options.hardMaxPayloadBytes ?? Math.max(1024 * 1024, this.limits.maxFrameBytes * 4) });
    this.server.on("upgrade", (req, socket, head) => this.upgrade(req, socket as import("node:net").Socket, head));
    this.heartbeat = setInterval(() => this.beat(), options.heartbeatMs ?? 30_000);
    this.heartbeat.unref();
    const stopTyping = options.engine.onTyping((conversationId, on) => {
      for (const connection of this.byConversation.get(conversationId) ?? []) connection.send({ t: "typing", on });
    });
    // The agent's reply streams to the widget as the model writes it (channels send only the stored, whole event).
    const stopDeltas = options.engine.onReplyDelta((conversationId, delta) => {
      for (const connection of this.byConversation.get(conversationId) ?? []) connection.delta(delta);
    });
    this.stopTyping = () => {
      stopTyping();
      stopDeltas();
    };
    this.routes.add("GET", "/healthz", (_req, res) => sendJson(res, 200, { ok: true }));
    this.routes.add("GET", "/readyz", async (_req, res) => {
      const store = await options.engine.storeReady();
      const bus = options.engine.bus.health();
      const ready = store && bus.state !== "closed";
      sendJson(res, ready ? 200 : 503, { ready, store: store ? "ok" : "unavailable", bus: bus.state });
    });
    const sessions = new ConsoleSessions(options.engine.consoleSessionStore, {
      ...(options.consoleIdleMs !== undefined && { idleMs: options.consoleIdleMs }),
      ...(options.now && { now: options.now }),
      ...(options.console && { servedHere: (req: IncomingMessage) => this.viaConsole.has(req) }),
    });
    // The console's pages: the console port's origins when it has one, else this server's own.
    const ownOriginSet = () => (options.console ? this.consoleOrigins : this.ownOrigins);
    // The members this node configures, then those managed in the store (every node sees a change at once).
    const directory = new TeamDirectory(options.teamMembers ?? [], options.engine.teamMemberStore);
    const team = registerTeamApi(this.routes, options.engine, directory, options.evals, { sessions, ownOrigins: ownOriginSet });
    registerConsoleApi(
      this.routes,
      {
        engine: options.engine,
        releases: options.releases,
        team: directory,
        sessions,
        ownOrigins: ownOriginSet,
        address: (req) => addressKey(clientAddress(req, this.proxies)),
        ...(options.logStore && { logStore: options.logStore }),
        ...(options.modelOf && { modelOf: options.modelOf }),
      },
      team.guarded,
      team.body,
    );
    if (options.remoteReview) {
      const secrets = options.secrets;
      registerRemoteReviewApi(this.routes, { engine: options.engine, ...options.remoteReview, secret: (name, workspaceId) => secrets?.(name, workspaceId) }, team.guarded, team.body);
    }
    this.routes.add("GET", `${FILES_PATH}/:id`, async (_req, res, params) => {
      const id = params.id ?? "";
      const file = /^f_[A-Za-z0-9_-]{32}$/.test(id) ? await options.engine.file(id) : undefined;
      if (!file) return sendError(res, 404, { code: "file_not_found", path: "id", message: "no such file" });
      // Past the retention period the bytes are gone but the conversation still shows the file: say so.
      if (file.purgedAt) return sendError(res, 410, { code: "file_expired", path: "id", message: "this file is no longer kept (files are removed after the retention period); ask the assistant for it again" });
      const safeName = file.name.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 100) || "file";
      res.writeHead(200, {
        "content-type": file.mimeType,
        "content-length": String(file.size),
        "content-disposition": `attachment; filename="${safeName}"`,
        "x-content-type-options": "nosniff",
        "content-security-policy": "sandbox; default-src 'none'",
        "cache-control": "private, max-age=3600",
      });
      res.end(Buffer.from(file.bytes));
    });
  }

  /** The key a request's client is counted by (its address, or its IPv6 /64; X-Forwarded-For only from trusted proxies). */
  clientKey(req: IncomingMessage): string {
    return addressKey(clientAddress(req, this.proxies));
  }

  /** Register a route (channel webhooks, for example): `:name` segments become params. */
  route(method: string, path: string, handler: RouteHandler): void {
    this.routes.add(method, path, handler);
  }

  async listen(port = 0, host = "127.0.0.1"): Promise<AddressInfo> {
    const address = await listenOn(this.server, port, host);
    this.ownOrigins = new Set(ownOrigins(this.options.publicOrigins ?? [], { host, port: address.port }));
    if (this.consoleServer && this.options.console) {
      try {
        this.consoleAddressInfo = await listenOn(this.consoleServer, this.options.console.port, host);
      } catch (error) {
        await new Promise<void>((resolve) => this.server.close(() => resolve()));
        throw error;
      }
      this.consoleOrigins = new Set(ownOrigins(this.options.console.publicOrigins ?? [], { host, port: this.consoleAddressInfo.port }));
    }
    return address;
  }

  /** The console's own listener's address (GatewayOptions.console), once listening. */
  get consoleAddress(): AddressInfo | undefined {
    return this.consoleAddressInfo;
  }

  /** The origins a socket is taken as the widget app's own from (configured, then the listening address's). */
  get origins(): string[] {
    return [...this.ownOrigins];
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    this.stopTyping();
    for (const connection of this.connections) connection.ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    if (this.consoleServer?.listening) await new Promise<void>((resolve) => this.consoleServer!.close(() => resolve()));
  }

  private log(level: "info" | "warn" | "error", message: string, data?: Record<string, unknown>): void {
    this.options.log?.(level, message, data);
  }

  private beat(): void {
    for (const connection of this.connections) {
      if (!connection.alive) {
        connection.ws.terminate();
        continue;
      }
      connection.alive = false;
      connection.ws.ping();
    }
  }

  private verifyIdentity(release: AgentRelease, token: string): VerifyResult | Promise<VerifyResult> {
    if (this.options.verifyIdentity) return this.options.verifyIdentity(release, token);
    const settings = release.config.identity;
    if (!settings) return { ok: false, error: { code: "identity_not_configured", path: "", message: "this agent does not verify customers" } };
    const lookup = this.options.secrets;
    if (settings.algorithm !== "HS256" || !lookup) return this.verifyWith(release, settings, undefined, token);
    // The HS256 key is the agent's workspace's secret, read now: a rotated key is used at the next sign-in.
    const value = lookup(settings.secret, workspaceOf(release));
    return value instanceof Promise ? value.then((secret) => this.verifyWith(release, settings, secret, token)) : this.verifyWith(release, settings, value, token);
  }

  private verifyWith(release: AgentRelease, settings: NonNullable<AgentRelease["config"]["identity"]>, secret: string | undefined, token: string): VerifyResult {
    let verifier = this.verifiers.get(release.id);
    if (!verifier || verifier.secret !== secret) {
      const created = createIdentityVerifier(settings, () => secret);
      if (!created.ok) return { ok: false, error: { code: "identity_not_configured", path: created.error.path, message: created.error.message } };
      verifier = { secret, verify: created.verify };
      this.verifiers.set(release.id, verifier);
    }
    return verifier.verify(token);
  }

  /** The CSP frame-ancestors source list for the app page of an agent: its allowed origins, else none. */
  private frameAncestors(agent: string | null): string {
    const release = agent ? this.options.releases.get(agent) : undefined;
    const origins = release?.config.origins ?? [];
    return origins.length > 0 ? origins.join(" ") : "'none'";
  }

  private upgrade(req: IncomingMessage, socket: import("node:net").Socket, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://gateway");
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    };
    if (url.pathname !== WS_PATH) return refuse(404, "Not Found");
    const origin = req.headers.origin;
    if (!origin) return refuse(403, "Forbidden");
    // The widget app runs in an iframe served by this gateway, so its socket comes from the gateway's own
    // origin; which sites may frame it for an agent is enforced by the app page's frame-ancestors.
    // Own means one of the configured public origins or the listening address's, never "equal to Host":
    // a DNS-rebinding page sends its own name as both. Any other origin (a page talking to the socket
    // directly) must be one of the agent's allowed origins.
    const ownOrigin = this.ownOrigins.has(origin);
    const agent = url.searchParams.get("agent");
    const releases = agent ? [this.options.releases.get(agent)].filter((release): release is AgentRelease => release !== undefined) : this.options.releases.list();
    if (!ownOrigin && !releases.some((release) => release.config.origins.includes(origin))) return refuse(403, "Forbidden");
    const address = addressKey(clientAddress(req, this.proxies));
    this.wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
      // Over the address's socket limit: told why (a browser sees no HTTP status of a refused upgrade), closed.
      if (!this.addresses.openSocket(address)) {
        ws.send(JSON.stringify({ t: "error", code: "too_many_connections", message: `at most ${this.addresses.limits.socketsPerAddress} connections from one address; close some and try again` }));
        ws.close(CLOSE.tryAgainLater, "too many connections from your address");
        return;
      }
      const connection = new Connection(ws, origin, {
        socket,
        ownOrigin,
        helloTimeoutMs: this.options.helloTimeoutMs ?? DEFAULT_HELLO_TIMEOUT_MS,
        startConversation: () => this.addresses.startConversation(address),
        rotated: (conversationId, by) => {
          for (const other of this.byConversation.get(conversationId) ?? []) if (other !== by) other.closeRotated();
        },
        engine: this.options.engine,
        releases: this.options.releases,
        limits: this.limits,
        now: this.options.now ?? Date.now,
        verifyIdentity: (release, token) => this.verifyIdentity(release, token),
        log: (level, message, data) => this.log(level, message, data),
        joined: (joined) => {
          const set = this.byConversation.get(joined.conversationId!) ?? new Set<Connection>();
          set.add(joined);
          this.byConversation.set(joined.conversationId!, set);
        },
        left: (left) => {
          if (this.connections.delete(left)) this.addresses.closeSocket(address);
          if (!left.conversationId) return;
          const set = this.byConversation.get(left.conversationId);
          set?.delete(left);
          if (set?.size === 0) this.byConversation.delete(left.conversationId);
        },
      });
      this.connections.add(connection);
    });
  }

  private async request(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? "/", "http://gateway");
      const method = req.method ?? "GET";
      if (this.consoleServer) {
        const refused = consolePortRefusal(url.pathname, this.viaConsole.has(req));
        if (refused) {
          req.resume();
          return sendError(res, 404, { code: "not_found", path: url.pathname, message: refused });
        }
      }
      const matched = this.routes.match(method, url.pathname);
      if ("handler" in matched) return await matched.handler(req, res, matched.params);
      const head = method === "HEAD";
      if (method === "GET" || head) {
        const widgetDir = this.options.widgetDir ?? join(REPO_ROOT, "widget", "dist");
        if (url.pathname === "/widget.js" && (await serveFile(req, res, widgetDir, "widget.js", widgetCacheControl("widget.js")))) return;
        if (url.pathname.startsWith("/widget/")) {
          const relative = url.pathname.slice("/widget/".length);
          // The app page may be framed only by the sites its agent is embedded on (frame-ancestors), which is
          // what lets its WebSocket, opened from the gateway's own origin, be trusted for that agent.
          // Its CSP also allows only the page's own inline style (by hash) and this host's script and socket.
          // Judged by the file the path reaches, not by how it is spelled (isHtmlPage).
          const headers = isHtmlPage(widgetDir, relative) ? await widgetAppPageHeaders(widgetDir, this.frameAncestors(url.searchParams.get("agent"))) : {};
          if (headers && (await serveFile(req, res, widgetDir, relative, widgetCacheControl(relative), headers))) return;
        }
        if (url.pathname === "/console" || url.pathname.startsWith("/console/")) return await serveConsole(req, res, this.options.consoleDir ?? join(REPO_ROOT, "console", "dist"), url.pathname);
        if (url.pathname === "/docs" || url.pathname.startsWith("/docs/")) return await serveDocs(req, res, this.options.docsDir ?? join(REPO_ROOT, "dist", "docs-site"), url.pathname);
        if (url.pathname.startsWith("/schemas/") && url.pathname.endsWith(".json")) {
          const relative = url.pathname.slice("/schemas/".length);
          if (!relative.includes("/") && (await serveFile(req, res, this.options.schemasDir ?? join(REPO_ROOT, "schemas"), relative, "public, max-age=300"))) return;
        }
      }
      if (matched.methodMismatch) return sendError(res, 405, { code: "method_not_allowed", path: "", message: `${method} is not allowed here` });
      sendError(res, 404, { code: "not_found", path: url.pathname, message: "nothing here" });
    } catch (error) {
      this.log("error", "request failed", { error: String(error) });
      if (!res.headersSent) sendError(res, 500, { code: "internal_error", path: "", message: "something went wrong on our side" });
      else res.destroy();
    }
  }
}

/**
 * The team console: hashed assets, and its one page for every other path under /console (the app routes in
 * the page). Nothing here may be framed, and the page runs only its own script.
 */
async function serveConsole(req: IncomingMessage, res: ServerResponse, consoleDir: string, pathname: string): Promise<void> {
  const headers = { "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'", "referrer-policy": "same-origin", "x-frame-options": "DENY" };
  const relative = pathname.slice("/console/".length);
  if (relative.startsWith("assets/") && (await serveFile(req, res, consoleDir, relative, "public, max-age=31536000, immutable", headers))) return;
  if (relative.startsWith("assets/")) return sendError(res, 404, { code: "not_found", path: pathname, message: "no such console file" });
  if (await serveFile(req, res, consoleDir, "index.html", "no-cache", headers)) return;
  sendError(res, 404, { code: "not_found", path: pathname, message: "the console is not built here: run `npx vite build -c console/vite.config.ts` (npm start builds it)" });
}

/** The docs site's pages: a page, a folder's index.html, or a 404 that says how to build the site. */
async function serveDocs(req: IncomingMessage, res: ServerResponse, docsDir: string, pathname: string): Promise<void> {
  if (pathname === "/docs") {
    res.writeHead(308, { location: "/docs/" });
    return void res.end();
  }
  const relative = pathname.slice("/docs/".length);
  // Pagefind's search runs WebAssembly; nothing here may be framed by another site.
  const headers = { "content-security-policy": "default-src 'self'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'" };
  for (const candidate of relative === "" || relative.endsWith("/") ? [`${relative}index.html`] : [relative, `${relative}/index.html`]) {
    if (await serveFile(req, res, docsDir, candidate, "public, max-age=300", headers)) return;
  }
  const built = await stat(join(docsDir, "index.html")).catch(() => undefined);
  sendError(res, 404, {
    code: "not_found",
    path: pathname,
    message: built ? "no such page in the docs" : "the docs site is not built here: run `npm run docs:build` (npm install also builds it)",
  });
}

/**
 * With the console on a port of its own: what a path is refused on the listener it reached, if it is. The
 * console's port serves the console, the team API, files, health and the docs; the widget's port everything but
 * the console (its team API still answers a bearer token, never a console session's cookie).
 */
function consolePortRefusal(pathname: string, viaConsole: boolean): string | undefined {
  const under = (prefix: string) => pathname === prefix || pathname.startsWith(`${prefix}/`);
  if (viaConsole) {
    // Files too: a conversation's file events link to them (by an unguessable id, no session needed).
    if (under("/console") || under("/v1/team") || under(FILES_PATH) || under("/docs") || under("/schemas") || pathname === "/healthz" || pathname === "/readyz") return undefined;
    return "this port serves the team console only";
  }
  return under("/console") ? "the team console is served on its own port (CAPLO_CONSOLE_PORT)" : undefined;
}

/** Listens on `port` (0: a free one) and `host`; the address bound, or the listen's error. */
function listenOn(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve(server.address() as AddressInfo);
    });
  });
}
