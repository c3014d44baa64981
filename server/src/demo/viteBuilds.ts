// The demo's builds of the widget and the team console with the repository's Vite, each only when its build is
// missing or older than its sources: `npm start` runs them, and the browser tests and benches share them
// (tests/support/buildOnce.ts). Kept apart from demo.ts so a test file importing a build imports nothing else.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { promisify } from "node:util";
import type { DemoError } from "./demoOptions.ts";

export const ROOT = join(import.meta.dirname, "..", "..", "..");
export const WIDGET_DIR = join(ROOT, "widget");
type Log = (line: string) => void;

/** The newest modification time under a folder (the widget's sources). */
export function newest(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((latest, entry) => {
    const path = join(dir, entry.name);
    return Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }, 0);
}

/** Whether widget/dist is missing or older than the widget's sources (src/ and vite.config.ts). */
export function widgetBuildStale(widgetDir = WIDGET_DIR): boolean {
  const built = join(widgetDir, "dist", "widget.js");
  if (!existsSync(built) || !existsSync(join(widgetDir, "dist", "app.html"))) return true;
  return statSync(built).mtimeMs < Math.max(newest(join(widgetDir, "src")), statSync(join(widgetDir, "vite.config.ts")).mtimeMs);
}

/** Builds the widget with Vite when its build is missing or stale; `widgetDir` is for tests. */
export function buildWidget(log: Log, widgetDir = WIDGET_DIR): Promise<DemoError | undefined> {
  const shown = relative(ROOT, widgetDir) || ".";
  return buildWithVite(log, { name: "widget", config: join(shown, "vite.config.ts"), dist: join(shown, "dist"), built: join(shown, "dist", "widget.js"), stale: () => widgetBuildStale(widgetDir) });
}

/** Whether console/dist is missing or older than its sources (console/src, the widget components it reuses, its config). */
export function consoleBuildStale(root = ROOT): boolean {
  const built = join(root, "console", "dist", "index.html");
  if (!existsSync(built)) return true;
  const sources = Math.max(newest(join(root, "console", "src")), newest(join(root, "widget", "src", "app")), statSync(join(root, "console", "vite.config.ts")).mtimeMs);
  return statSync(built).mtimeMs < sources;
}

/** Builds the team console with Vite when its build is missing or stale. */
export function buildConsole(log: Log): Promise<DemoError | undefined> {
  return buildWithVite(log, { name: "console", config: join("console", "vite.config.ts"), dist: join("console", "dist"), built: join("console", "dist", "index.html"), stale: () => consoleBuildStale() });
}

/**
 * `npx vite build -c CONFIG` (paths from the repository root) when `stale()` says the build is missing or older
 * than its sources; an error value when Vite is missing, the build fails, or it leaves `built` stale.
 */
async function buildWithVite(log: Log, build: { name: "widget" | "console"; config: string; dist: string; built: string; stale: () => boolean }): Promise<DemoError | undefined> {
  if (!build.stale()) return void log(`  ${build.name}: up to date (${build.dist})`);
  log(`  ${build.name}: building ${build.dist} (npx vite build -c ${build.config}) ...`);
  const vite = join(ROOT, "node_modules", "vite", "bin", "vite.js");
  if (!existsSync(vite)) return { code: "build_tool_missing", path: vite, message: "Vite is not installed: run `npm install` first, then `npm start` again" };
  const what = build.name === "widget" ? "the widget" : "the team console";
  try {
    await promisify(execFile)(process.execPath, [vite, "build", "-c", build.config], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, NODE_ENV: "production" } });
  } catch (error) {
    const text = String((error as { stderr?: string }).stderr ?? error).trim().split("\n").slice(-5).join("\n");
    return { code: `${build.name}_build_failed`, path: `${dirname(build.config)}/`, message: `${what} did not build; run \`npx vite build -c ${build.config}\` to see why:\n${text}` };
  }
  if (build.stale()) return { code: `${build.name}_build_failed`, path: build.dist, message: `the ${build.name} build produced no ${build.built} newer than its sources` };
  log(`  ${build.name}: built`);
}

