// The demo assembly behind `caplo demo` (`npm start`): build what is not built, start the demo shop API,
// publish the demo agent, run `caplo serve`'s stack with the sandboxed runner mapped to the local shop,
// and serve the demo shop page. Every expected failure comes back as a clear error value.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, openSync, readSync, closeSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { DEFAULT_WORKSPACE, type PackageVersion } from "@caplo/shared";
import { startDemoShop, type DemoShop } from "../../../examples/shop-api/src/demo.ts";
import { loadAgentFile } from "../agents/agentFile.ts";
import { createRelease } from "../agents/release.ts";
import { FileReleaseStore } from "../agents/releaseStore.ts";
import { auditPublish } from "../agents/releaseAudit.ts";
import { buildPackage, contentHash, type BuildOptions } from "../build/index.ts";
import { packageVersionSchema } from "@caplo/shared";
import { startServer, type RunningServer } from "../app/server.ts";
import { buildSettings, runnerSettings } from "../app/runnerSettings.ts";
import { teamMember } from "../gateway/teamMembers.ts";
import { readConfig } from "../config/index.ts";
import { modelFromEnv } from "../model/config.ts";
import type { ToolRunner } from "../runner/api.ts";
import { demoPackageDirs } from "./demoPackages.ts";
import { listenDemoPage, type DemoPage } from "./demoPage.ts";
import type { DemoError, DemoOptions } from "./demoOptions.ts";
import { DEMO_RULES } from "./demoScript.ts";
import { buildConsole, buildWidget, newest, ROOT, WIDGET_DIR } from "./viteBuilds.ts";

export { buildConsole, buildWidget, consoleBuildStale, ROOT, widgetBuildStale } from "./viteBuilds.ts";

export const DEMO_AGENT_FILE = join(ROOT, "examples", "demo", "agent.yaml");

/** `consoleUrl`: the team console; `member` and `token`: the demo team member who signs in there (a new token each start). */
export type RunningDemo = { url: string; gatewayUrl: string; shopUrl: string; consoleUrl: string; member: string; token: string; close: () => Promise<void> };
type Log = (line: string) => void;
const fail = (code: string, path: string, message: string) => ({ ok: false as const, error: { code, path, message } });

/** The demo's team member, who signs in to the console. */
export const DEMO_MEMBER = "demo";

/** Built demo package versions, by package content and build code, so a second start builds nothing. */
const BUILD_CACHE = join(ROOT, ".caplo", "build-cache");

/** Changes whenever the build or the shared formats change (a cached version from older code is not reused). */
function buildCodeStamp(): string {
  return Math.floor(Math.max(newest(join(ROOT, "server", "src", "build")), newest(join(ROOT, "shared", "src")))).toString(36);
}

function readCached(file: string): PackageVersion | undefined {
  try {
    const parsed = packageVersionSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    // Usable only while its frozen copy is there (the runner checks it again when it loads it).
    return parsed.success && existsSync(parsed.data.dir) ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** How many package builds run at once: each starts Node 24 to list the tools (2 on a 2-core machine). */
const BUILD_CONCURRENCY = Math.max(2, Math.min(4, availableParallelism()));

type BuiltPackages = { ok: true; versions: PackageVersion[]; builtCount: number } | { ok: false; error: DemoError };

/** Builds the packages not in the cache, a few at a time, with a `[n/total]` line as each is ready. */
export async function buildPackages(dirs: string[], log: Log, signal?: AbortSignal, settings: Pick<BuildOptions, "node" | "cgroups"> = {}): Promise<BuiltPackages> {
  const versions: PackageVersion[] = new Array(dirs.length);
  const stamp = buildCodeStamp();
  let next = 0;
  let done = 0;
  let builtCount = 0;
  let problem: DemoError | undefined;
  const progress = () => `[${String(++done).padStart(String(dirs.length).length)}/${dirs.length}]`;
  const worker = async () => {
    while (next < dirs.length && !problem && !signal?.aborted) {
      const index = next++;
      const dir = dirs[index]!;
      const name = dir.split(/[/\\]/).at(-1)!;
      const cacheFile = join(BUILD_CACHE, `${name}-${contentHash(dir).replace(/[^a-z0-9]/gi, "").slice(-32)}-${stamp}.json`);
      const cached = readCached(cacheFile);
      if (cached) {
        versions[index] = cached;
        log(`  ${progress()} tool package ${name}: up to date (${cached.id.slice(0, 40)})`);
        continue;
      }
      const started = Date.now();
      // Frozen copies kept beside the build cache: a copy's folder (demoPackages.ts) does not outlive the demo.
      const result = await buildPackage(dir, { versionsDir: join(BUILD_CACHE, "versions"), ...settings });
      if (!result.ok) {
        const first = result.errors[0]!;
        problem = { code: "package_build_failed", path: `examples/demo/${name}`, message: `${first.code} at ${first.path}: ${first.message} (run \`caplo tool build examples/demo/${name}\` to see every error)` };
        return;
      }
      versions[index] = result.version;
      builtCount += 1;
      mkdirSync(BUILD_CACHE, { recursive: true });
      writeFileSync(cacheFile, JSON.stringify(result.version));
      const tools = result.version.tools.length;
      log(`  ${progress()} tool package ${name}: built ${result.version.id.slice(0, 40)} (${tools} tool${tools === 1 ? "" : "s"}, ${((Date.now() - started) / 1000).toFixed(1)} s)`);
    }
  };
  await Promise.all(Array.from({ length: BUILD_CONCURRENCY }, worker));
  return problem ? { ok: false, error: problem } : { ok: true, versions, builtCount };
}

/** A SQLite file that exists but is not a database (the first 16 bytes say so), before anything opens it. */
function checkDatabaseFile(file: string): DemoError | undefined {
  if (!existsSync(file) || statSync(file).size === 0) return undefined;
  const header = Buffer.alloc(16);
  const fd = openSync(file, "r");
  try {
    readSync(fd, header, 0, 16, 0);
  } finally {
    closeSync(fd);
  }
  if (header.toString("latin1") !== "SQLite format 3\0") return corrupt(file);
}
const corrupt = (file: string): DemoError => ({
  code: "database_corrupt",
  path: file,
  message: `the demo's database is not a readable SQLite file. Move it away (or delete it to start the demo fresh: rm -rf ${join(file, "..")}) and run \`npm start\` again`,
});

/**
 * Listens on 127.0.0.1:`port` (0: a free one) and lets go at once: the port that was free, or undefined when
 * it is in use. Another error is thrown, for the caller to report.
 */
async function tryPort(port: number): Promise<number | undefined> {
  const server = createServer();
  const listened = await new Promise<boolean>((resolve, reject) =>
    server.once("error", (error: NodeJS.ErrnoException) => (error.code === "EADDRINUSE" ? resolve(false) : reject(error))).listen(port, "127.0.0.1", () => resolve(true)),
  );
  if (!listened) return undefined;
  const free = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return free;
}

const portInUse = (port: number, what: string, flag: string): DemoError => ({
  code: "port_in_use",
  path: flag,
  message: `port ${port} (${what}) is already in use on 127.0.0.1: stop what uses it (is another \`npm start\` running?) or choose another with ${flag} N`,
});

/** Starts the whole demo; the caller closes it. `log` receives the progress lines. */
export async function startDemo(options: DemoOptions, log: Log = console.log, signal?: AbortSignal): Promise<{ ok: true; demo: RunningDemo } | { ok: false; error: DemoError }> {
  const interrupted: DemoError = { code: "interrupted", path: "", message: "stopped while starting (Ctrl-C)" };
  const closers: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    closers.length = 0;
  };
  const failed = async (error: DemoError) => {
    await closeAll();
    return { ok: false as const, error };
  };
  mkdirSync(options.dataDir, { recursive: true });
  const dbFile = join(options.dataDir, "caplo.db");
  const dbProblem = checkDatabaseFile(dbFile);
  if (dbProblem) return { ok: false, error: dbProblem };

  const read = readConfig(options.env);
  if (!read.ok) return { ok: false, error: read.errors[0]! };
  let model: ReturnType<typeof modelFromEnv>;
  try {
    model = modelFromEnv(read.config.source);
  } catch (error) {
    const typed = error as { code?: string; path?: string; message?: string };
    return fail(typed.code ?? "model_config_invalid", typed.path ?? "", `${typed.message ?? String(error)} (unset OPENAI_API_KEY, OPENAI_BASE_URL and CAPLO_MODEL for the offline demo)`);
  }
  const offline = model === undefined;

  // The page's port first: it is the one the user asked for, and holding it makes a clash fail fast.
  let page: DemoPage;
  try {
    page = await listenDemoPage(options.port);
  } catch (error) {
    if ((error as { code?: string }).code === "EADDRINUSE") return { ok: false, error: portInUse(options.port, "the demo page", "--port") };
    throw error;
  }
  closers.push(() => page.close());

  let shop: DemoShop;
  try {
    shop = await startDemoShop({ port: options.shopPort, pendingMs: options.pendingMs, dbFile: join(options.dataDir, "shop.json") });
  } catch (error) {
    if ((error as { code?: string }).code === "EADDRINUSE") return failed(portInUse(options.shopPort, "the demo shop API", "--shop-port"));
    throw error;
  }
  closers.push(() => shop.shop.close());
  // The gateway's port is listened on only when the server starts, after the builds and the packages'
  // sandboxes: a clash found then cost the whole start (6 s, 11 sandboxes). Tried now and let go, it fails
  // fast; one taken in between is still reported when the server starts.
  // Another error than "in use" (a port it may not listen on) is left for the server's own start to report.
  if (options.gatewayPort !== 0 && (await tryPort(options.gatewayPort).catch(() => options.gatewayPort)) === undefined) return failed(portInUse(options.gatewayPort, "the demo gateway", "--gateway-port"));

  log("Building what is not built:");
  // The help articles' page origins follow the port the shop got (--shop-port, or a free one for 0).
  const packages = demoPackageDirs(shop.packageDirs, Number(new URL(shop.shop.url).port), join(ROOT, ".caplo", "demo-packages"));
  closers.push(async () => packages.remove());
  for (const copy of packages.copied) log(`  tool package ${copy.split(/[/\\]/).at(-1)}: page origins moved to the shop's port (${new URL(shop.shop.url).origin})`);

  // The widget (Vite) and the packages (each a short Node 24 run) build side by side: on a first start
  // the slower of the two sets the wait, not their sum.
  const started = Date.now();
  const [widgetProblem, built] = await Promise.all([buildWidget(log).then(async (problem) => problem ?? (await buildConsole(log))), buildPackages(packages.dirs, log, signal, buildSettings(read.config))]);
  if (widgetProblem) return failed(widgetProblem);
  if (!built.ok) return failed(built.error);
  if (signal?.aborted) return failed(interrupted);
  if (built.builtCount > 0) log(`  built in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const agentFile = await loadAgentFile(DEMO_AGENT_FILE);
  if (!agentFile.ok) {
    const issue = agentFile.issues[0]!;
    return failed({ code: issue.code, path: `examples/demo/agent.yaml ${issue.path}`, message: issue.message });
  }
  const gatewayPort = options.gatewayPort === 0 ? (await tryPort(0))! : options.gatewayPort;
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const pagePort = new URL(page.url).port;
  const agent = {
    ...agentFile.agent,
    // The page is opened as 127.0.0.1 or localhost; the widget's frame (and its WebSocket) is the gateway's.
    origins: [page.url, `http://localhost:${pagePort}`, gatewayUrl, `http://localhost:${gatewayPort}`],
    ...(offline && { greeting: `Hi! I'm the Caplo Shop assistant, running as the offline demo (no AI model connected). Try "where is my order SO-1002", "stores near me" or "compare plans", or type "help" for more.` }),
  };
  const release = createRelease(agent, built.versions, new Date());
  if (!release.ok) return failed({ code: release.issues[0]!.code, path: `examples/demo/agent.yaml ${release.issues[0]!.path}`, message: release.issues[0]!.message });
  const releasesDir = join(options.dataDir, "releases");
  const releaseStore = new FileReleaseStore(releasesDir);
  const kept = releaseStore.keepVersions(release.release);
  if (kept) return failed({ code: kept.code, path: kept.path, message: kept.message });
  const stored = await releaseStore.put(release.release);
  log(`Agent ${agent.name}: release ${release.release.id}${stored.created ? " published" : " (unchanged)"}`);

  const scriptFile = join(options.dataDir, "demo-script.json");
  writeFileSync(scriptFile, JSON.stringify(DEMO_RULES, null, 2));
  const identitySecret = randomBytes(32).toString("base64url");
  const env: Record<string, string | undefined> = {
    ...options.env,
    CAPLO_SECRET_SHOP_API_KEY: shop.secrets.SHOP_API_KEY,
    CAPLO_SECRET_SHOP_API_URL: shop.secrets.SHOP_API_URL,
    CAPLO_SECRET_DEMO_IDENTITY_SECRET: identitySecret,
  };
  let runner: ToolRunner;
  try {
    const { CaploToolRunner } = await import("../runner/toolRunner.ts");
    const sandboxed = new CaploToolRunner({ ...runnerSettings(read.config), egressResolve: shop.egressResolve });
    log(sandboxed.sandboxNote);
    runner = sandboxed;
  } catch (error) {
    return failed({ code: (error as { code?: string }).code ?? "runner_failed", path: "runner", message: (error as Error).message });
  }
  // Start the packages' sandboxes a few at a time (the engine would start them one by one).
  log(`Starting ${built.versions.length} tool packages in their sandboxes ...`);
  const queue = [...built.versions];
  let loadProblem: DemoError | undefined;
  await Promise.all(
    [1, 2, 3, 4].map(async () => {
      for (let version = queue.shift(); version && !loadProblem; version = queue.shift()) {
        try {
          await runner.load(version);
        } catch (error) {
          loadProblem = { code: (error as { code?: string }).code ?? "package_start_failed", path: version.name, message: `tool package ${version.name} did not start: ${(error as Error).message}` };
        }
      }
    }),
  );
  if (loadProblem) {
    await runner.close().catch(() => undefined);
    return failed(loadProblem);
  }
  if (signal?.aborted) {
    await runner.close().catch(() => undefined);
    return failed(interrupted);
  }
  let server: RunningServer;
  const token = `demo-${randomBytes(18).toString("base64url")}`;
  try {
    const started = await startServer(
      {
        port: gatewayPort,
        host: "127.0.0.1",
        db: dbFile,
        releasesDir,
        agents: [agent.name],
        script: scriptFile,
        widgetDir: join(WIDGET_DIR, "dist"),
        // The demo team member signs in to the console with this start's token (printed with the console's address).
        teamMembers: [teamMember(DEMO_MEMBER, token)],
        nodeId: "demo",
        statusCheckBaseMs: options.statusCheckBaseMs,
        env,
        runner,
      },
      (line) => {
        if (options.verbose || !/^(info|debug):|^team API:|^widget app origins/.test(line)) log(line.startsWith("caplo serve:") ? line.replace("caplo serve:", "gateway:") : line);
      },
    );
    if (!started.ok) {
      await runner.close();
      if (started.error.code === "port_in_use") return failed(portInUse(gatewayPort, "the demo gateway", "--gateway-port"));
      return failed(started.error);
    }
    server = started.server;
  } catch (error) {
    await runner.close().catch(() => undefined);
    const code = (error as { code?: string }).code ?? "";
    if (/^SQLITE_(NOTADB|CORRUPT)/.test(code)) return failed(corrupt(dbFile));
    if (code === "EADDRINUSE") return failed(portInUse(gatewayPort, "the demo gateway", "--gateway-port"));
    return failed({ code: "demo_start_failed", path: "", message: error instanceof Error ? error.message : String(error) });
  }
  closers.push(() => server.close());
  // The demo's publish goes to its workspace's audit like `caplo agent publish`'s (once per new latest release).
  await auditPublish(server.store, { workspaceId: DEFAULT_WORKSPACE, agent: agent.name, releaseId: release.release.id, actor: "caplo demo", at: Date.now() }).catch((error: unknown) => log(`warn: the release's audit entry was not stored: ${String(error)}`));

  page.configure({ gatewayUrl, agent: agent.name, identitySecret, issuer: String(agent.identity?.issuer ?? ""), audience: String(agent.identity?.audience ?? ""), offline });
  log(offline ? 'Model: the offline demo model (no OPENAI_API_KEY set). It understands the demo\'s phrases: type "help" in the chat.' : "Model: the configured OpenAI-compatible model.");
  return { ok: true, demo: { url: `${page.url}/`, gatewayUrl, shopUrl: shop.shop.url, consoleUrl: `${gatewayUrl}/console`, member: DEMO_MEMBER, token, close: closeAll } };
}
