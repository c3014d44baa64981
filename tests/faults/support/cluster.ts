// The fault tests' cluster: real `caplo serve` processes on loopback (each in a process group of its own,
// so kill -9 takes its sandboxes too, as losing the machine would), a PostgreSQL database of the test's
// own, the fault fixture packages built and published as one agent, and a shop that counts applications
// by idempotency key.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { packageVersionSchema, parseAgentConfig, type PackageVersion } from "@caplo/shared";
import { createRelease } from "../../../server/src/agents/release.ts";
import { FileReleaseStore } from "../../../server/src/agents/releaseStore.ts";
import { buildPackage } from "../../../server/src/build/index.ts";
import type { ScriptedRule } from "../../../server/src/model/scripted.ts";
import { TEST_DATABASE_URL } from "../../support/services.ts";
import { createTestDatabase } from "../../support/testDatabase.ts";

export const ROOT = join(import.meta.dirname, "..", "..", "..");
export const ORIGIN = "https://faults.example";
export const AGENT = "faults";
export const ADMIN_URL = TEST_DATABASE_URL;
const FIXTURES = join(import.meta.dirname, "..", "fixtures");
const PACKAGES = ["fault-shop", "fault-hang", "fault-crash", "fault-big", "fault-echo", "fault-ask"];

/** What the scripted model does in these tests (pattern strings are regular expressions, case-insensitive). */
export const FAULT_RULES: ScriptedRule[] = [
  { when: /\bchange ([A-Za-z0-9-]+)/i, replies: [{ text: "Please review the change.", toolCalls: [{ name: "fault_shop__apply_change", args: { ref: "$1" } }] }] },
  // The read answers at once, then the model writes slowly (its first word, 3 s, the rest): its step is held meanwhile.
  { when: /\bslowly echo (\w+)/i, replies: [{ toolCalls: [{ name: "fault_echo__echo", args: { word: "$1" } }] }, { text: "Slow echo: {{tool}}", pauseMs: 3_000 }] },
  { when: /\becho (\w+)/i, replies: [{ toolCalls: [{ name: "fault_echo__echo", args: { word: "$1" } }] }, { text: "Echo: {{tool}}" }] },
  { when: /\bhang\b/i, replies: [{ toolCalls: [{ name: "fault_hang__hang", args: {} }] }, { text: "The lookup gave no answer: {{tool}}" }] },
  { when: /\bcrash\b/i, replies: [{ toolCalls: [{ name: "fault_crash__crash", args: {} }] }, { text: "The lookup failed: {{tool}}" }] },
  { when: /\bbig\b/i, replies: [{ toolCalls: [{ name: "fault_big__big", args: {} }] }, { text: "The big lookup: {{tool}}" }] },
  { when: /\bask me\b/i, replies: [{ toolCalls: [{ name: "fault_ask__ask", args: {} }] }, { text: "Asked: {{tool}}" }] },
  { when: /^say \w+/i, replies: [{ text: "You said: {{user}}" }] },
];

function newest(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((latest, entry) => {
    const path = join(dir, entry.name);
    return Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }, 0);
}

/** Build the fixture packages (cached in the temp folder by their content) and publish the agent into `dir`. */
export async function publishAgent(dir: string): Promise<{ releasesDir: string; scriptFile: string }> {
  const stamp = createHash("sha256")
    .update(PACKAGES.map((name) => `${name}:${newest(join(FIXTURES, name))}`).join(","))
    .update(String(newest(join(ROOT, "server", "src", "build"))))
    .digest("hex")
    .slice(0, 16);
  const cache = join(tmpdir(), `caplo-faults-build-${stamp}.json`);
  let versions: PackageVersion[] | undefined;
  if (existsSync(cache)) {
    const parsed = packageVersionSchema.array().safeParse(JSON.parse(readFileSync(cache, "utf8")));
    if (parsed.success) versions = parsed.data;
  }
  if (!versions) {
    versions = [];
    for (const name of PACKAGES) {
      const built = await buildPackage(join(FIXTURES, name));
      if (!built.ok) throw new Error(`fixture ${name} did not build: ${JSON.stringify(built.errors)}`);
      versions.push(built.version);
    }
    writeFileSync(cache, JSON.stringify(versions));
  }
  const config = parseAgentConfig({
    apiVersion: "v1",
    kind: "Agent",
    name: AGENT,
    instructions: "Help with changes.",
    origins: [ORIGIN],
    channels: { web: {}, whatsapp: {} },
    tools: ["fault-shop/apply_change", "fault-hang/hang", "fault-crash/crash", "fault-big/big", "fault-echo/echo", "fault-ask/ask"],
  });
  if (!config.ok) throw new Error(JSON.stringify(config.issues));
  const release = createRelease(config.agent, versions, new Date());
  if (!release.ok) throw new Error(JSON.stringify(release.issues));
  const releasesDir = join(dir, "releases");
  await new FileReleaseStore(releasesDir).put(release.release);
  const scriptFile = join(dir, "script.json");
  writeFileSync(
    scriptFile,
    JSON.stringify(
      FAULT_RULES.map((rule) => ({
        when: { regex: (rule.when as RegExp).source, flags: "i" },
        replies: rule.replies,
      })),
    ),
  );
  return { releasesDir, scriptFile };
}

/** A database of the test's own on the machine's PostgreSQL (or another server), dropped at the end. */
export function createDatabase(adminUrl = ADMIN_URL): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  return createTestDatabase("caplo_faults", adminUrl);
}

/**
 * A shop API: applies each idempotency key once, counts every request per key, may hold its answer.
 * Refs starting HOLD: the change is applied and the answer held. HOLDCHECK: also the first status lookup
 * of the key is held (recorded in `heldLookups` with the asking connection's port).
 */
export class Shop {
  readonly server: Server;
  port = 0;
  /** Every POST /apply per key (a retry with the same key is counted, and applies nothing new). */
  readonly requests = new Map<string, number>();
  /** Status lookups per key (each is one node's status check). */
  readonly lookups = new Map<string, number>();
  /** Changes applied, per key: what the shop did. */
  readonly applied = new Map<string, string>();
  /** Status lookups held (HOLDCHECK refs): the key and the client port of the connection that asked. */
  readonly heldLookups: { key: string; port: number }[] = [];
  private held: ServerResponse[] = [];

  private constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  static async start(): Promise<Shop> {
    const shop = new Shop();
    await new Promise<void>((resolve) => shop.server.listen(0, "127.0.0.1", () => resolve()));
    shop.port = (shop.server.address() as { port: number }).port;
    return shop;
  }

  /** The runner's CAPLO_EGRESS_RESOLVE entry that sends the fixtures' host here. */
  get resolve(): string {
    return `shop.fault.test=127.0.0.1:${this.port}`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://shop");
    if (req.method === "POST" && url.pathname === "/apply") {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const { ref } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { ref: string };
      const key = String(req.headers["idempotency-key"] ?? "");
      this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
      if (!this.applied.has(key)) this.applied.set(key, ref);
      // HOLD-...: applied in the shop, but the answer never comes (the node is killed meanwhile).
      if (ref.startsWith("HOLD")) {
        this.held.push(res);
        return;
      }
      // SLOW-...: applied at once, answered a second later (the store may be away by then).
      if (ref.startsWith("SLOW")) await new Promise((resolve) => setTimeout(resolve, 1_000));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ref, status: "applied" }));
      return;
    }
    if (req.method === "GET" && url.pathname === "/status") {
      const key = url.searchParams.get("key") ?? "";
      this.lookups.set(key, (this.lookups.get(key) ?? 0) + 1);
      const ref = this.applied.get(key);
      if (ref?.startsWith("HOLDCHECK") && this.lookups.get(key) === 1) {
        this.heldLookups.push({ key, port: req.socket.remotePort ?? 0 });
        this.held.push(res);
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(ref ? { status: "applied", ref } : { status: "not_found" }));
      return;
    }
    res.writeHead(404).end();
  }

  /** Keys under which `ref` was applied. */
  keysFor(ref: string): string[] {
    return [...this.applied].filter(([, applied]) => applied === ref).map(([key]) => key);
  }

  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.held = [];
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export type NodeSettings = {
  name: string;
  databaseUrl: string;
  releasesDir: string;
  scriptFile: string;
  shop?: Shop;
  redisUrl?: string;
  env?: Record<string, string>;
};

/** One `caplo serve` process. */
export class CaploNode {
  readonly name: string;
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  url = "";
  private exited: Promise<void>;

  private stopping = false;

  private constructor(name: string, child: ChildProcess) {
    this.name = name;
    this.child = child;
    this.exited = new Promise((resolve) =>
      child.once("exit", (code, signal) => {
        // A node that dies on its own is a finding: show why.
        if (!this.stopping && this.url) console.error(`node ${name} exited by itself (${signal ?? code}):\n${this.lines.slice(-40).join("\n")}`);
        resolve();
      }),
    );
  }

  static async start(settings: NodeSettings): Promise<CaploNode> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/root",
      CAPLO_NODE_LEASE_MS: "2000",
      CAPLO_STATUS_CHECK_BASE_MS: "300",
      CAPLO_BUS_POLL_MS: "250",
      // Every test client connects from 127.0.0.1: the per-address limits are tested in tests/gateway.
      CAPLO_WIDGET_SOCKETS_PER_ADDRESS: "100000",
      CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE: "1000000",
      ...(settings.shop && { CAPLO_EGRESS_RESOLVE: settings.shop.resolve }),
      ...(settings.redisUrl && { CAPLO_REDIS_URL: settings.redisUrl }),
      ...settings.env,
    };
    const child = spawn(
      process.execPath,
      [join(ROOT, "bin", "caplo.mjs"), "serve", "--port", "0", "--agent", AGENT, "--db", settings.databaseUrl, "--releases", settings.releasesDir, "--script", settings.scriptFile],
      { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] },
    );
    const node = new CaploNode(settings.name, child);
    for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on("line", (line) => node.lines.push(line));
    node.url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${settings.name} did not start in 60 s:\n${node.lines.join("\n")}`)), 60_000);
      const lines = createInterface({ input: child.stdout! });
      lines.on("line", (line) => {
        const match = /^caplo serve: (http:\/\/\S+)/.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`${settings.name} exited with ${code}:\n${node.lines.join("\n")}`));
      });
    });
    running.add(node);
    return node;
  }

  get wsUrl(): string {
    return `${this.url.replace("http", "ws")}/v1/ws`;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** kill -9 of the node and everything it started (its package sandboxes), as losing the machine. */
  async kill9(): Promise<void> {
    this.stopping = true;
    if (this.alive) {
      try {
        process.kill(-this.child.pid!, "SIGKILL");
      } catch {
        this.child.kill("SIGKILL");
      }
    }
    await this.exited;
    running.delete(this);
  }

  /** A clean stop (SIGTERM): the node finishes its work, leaves the cluster and exits. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.alive) this.child.kill("SIGTERM");
    const timer = setTimeout(() => void this.kill9(), 20_000);
    await this.exited;
    clearTimeout(timer);
    running.delete(this);
  }

  async ready(): Promise<{ ready: boolean; store: string; bus: string }> {
    const response = await fetch(`${this.url}/readyz`);
    return (await response.json()) as { ready: boolean; store: string; bus: string };
  }
}

const running = new Set<CaploNode>();

/**
 * The node whose process (or one of its descendants, such as a sandbox) holds the loopback TCP connection
 * with local port `port` (`ss -tnp`, then up the parent chain in /proc).
 */
export function nodeOwningPort(port: number, nodes: CaploNode[]): CaploNode | undefined {
  const out = execFileSync("ss", ["-tnpH", "state", "established", `( sport = :${port} )`], { encoding: "utf8" });
  for (const match of out.matchAll(/pid=(\d+)/g)) {
    for (let pid = Number(match[1]); pid > 1; ) {
      const node = nodes.find((candidate) => candidate.child.pid === pid);
      if (node) return node;
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      pid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    }
  }
  return undefined;
}

/** Stop every node still running (afterAll). */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((node) => node.kill9()));
}

export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A scratch folder for one test file. */
export function scratch(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "caplo-faults-"));
  mkdirSync(dir, { recursive: true });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
