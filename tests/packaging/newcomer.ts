// The newcomer's folder for tests/packaging: both tarballs packed from this checkout (scripts/pack-caplo.ts,
// scripts/pack-tools.ts) and installed, they alone, with `npm install` into an empty folder outside the
// checkout, and how to run the installed `caplo` there (node_modules/.bin first on the PATH, as npx does,
// in an environment without this test run's variables).
import { execFile, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { packCaplo } from "../../scripts/pack-caplo.ts";
import { installedVersion, ROOT } from "../../scripts/pack-common.ts";
import { packTools } from "../../scripts/pack-tools.ts";

export type Newcomer = { outside: string; app: string; caploTarball: string; toolsTarball: string; env: NodeJS.ProcessEnv };

const run = promisify(execFile);

/**
 * better-sqlite3's install script downloads its prebuilt binary from GitHub (prebuild-install), else
 * compiles SQLite from source (minutes on a loaded 2-core machine). This machine reaches the npm registry
 * but not GitHub, so the install is handed the binary `npm ci` built here, as the file the download would
 * give, through prebuild-install's own local-prebuilds setting. A machine that can download gets the same.
 */
function betterSqlitePrebuild(outside: string): NodeJS.ProcessEnv {
  const dir = join(outside, "prebuilds");
  mkdirSync(dir, { recursive: true });
  const version = installedVersion("better-sqlite3");
  const file = join(dir, `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`);
  execFileSync("tar", ["czf", file, "-C", join(ROOT, "node_modules", "better-sqlite3"), "build/Release/better_sqlite3.node"]);
  return { npm_config_better_sqlite3_local_prebuilds: dir };
}

/** The environment of a newcomer's shell: PATH (the installed bins first), HOME (npm's cache), nothing of this run. */
function newcomerEnv(app: string): NodeJS.ProcessEnv {
  const keep = ["HOME", "LANG", "TZ", "USER", "TMPDIR"];
  return {
    ...Object.fromEntries(keep.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]])),
    PATH: `${join(app, "node_modules", ".bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
  };
}

/** `npm install` in a folder, from npm's cache where it can (what .ci/run's npm ci filled). */
export async function npmInstall(cwd: string, specs: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout, stderr } = await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", ...specs], { cwd, env, maxBuffer: 32 * 1024 * 1024 });
  return `${stdout}${stderr}`;
}

/** Packs both tarballs and installs them into an empty folder outside the checkout. */
export async function installNewcomer(): Promise<Newcomer> {
  const outside = mkdtempSync(join(tmpdir(), "caplo-newcomer-"));
  const [caploTarball, toolsTarball] = [await packCaplo(join(outside, "pack")), await packTools(join(outside, "pack"))];
  const app = join(outside, "app");
  mkdirSync(app);
  const env = newcomerEnv(app);
  await npmInstall(app, [caploTarball, toolsTarball], { ...env, ...betterSqlitePrebuild(outside) });
  return { outside, app, caploTarball, toolsTarball, env };
}

/** Runs the installed `caplo` in the newcomer's folder; resolves with its output and exit code (never throws on exit code). */
export async function caplo(newcomer: Newcomer, args: string[], cwd = newcomer.app): Promise<{ code: number; stdout: string; stderr: string }> {
  return run("caplo", args, { cwd, env: newcomer.env, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: typeof error.code === "number" ? error.code : 1, stdout: error.stdout ?? "", stderr: error.stderr ?? "" }),
  );
}

/** A scripted-model rule file for `caplo serve --script`: an order number makes the model call a read tool, then quote it. */
export function writeScript(path: string, tool: string): void {
  writeFileSync(path, JSON.stringify([{ when: { regex: "order (SO-[0-9]{4})", flags: "i" }, replies: [{ toolCalls: [{ name: tool, args: { orderId: "$1" } }] }, { text: "Here it is: {{tool}}" }] }]));
}
