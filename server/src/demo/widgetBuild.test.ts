// The demo builds the widget only when widget/dist is missing or older than its sources, with the real
// Vite: here on a small widget folder of the same shape (src/, vite.config.ts, dist/widget.js and
// dist/app.html), so the repository's own widget/dist is never touched while other tests use it.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWidget, ROOT, widgetBuildStale } from "./demo.ts";

// Under the repository so that the config's `import "vite"` resolves from its node_modules.
const ARTIFACTS = join(ROOT, "tests", "artifacts", "widget-build");
let widget: string;
const dist = (file: string) => join(widget, "dist", file);
const CONFIG = `import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";
const here = (p) => fileURLToPath(new URL(p, import.meta.url));
export default defineConfig({
  logLevel: "warn",
  build: {
    outDir: here("./dist"),
    emptyOutDir: true,
    lib: { entry: here("./src/index.ts"), formats: ["iife"], name: "Tiny", fileName: () => "widget.js" },
  },
  plugins: [{ name: "app-page", closeBundle: () => writeFileSync(here("./dist/app.html"), "<!doctype html><title>app</title>") }],
});
`;

/** Sets a file's modification time `seconds` from now. */
const age = (file: string, seconds: number) => utimesSync(file, new Date(Date.now() + seconds * 1000), new Date(Date.now() + seconds * 1000));

beforeAll(() => {
  mkdirSync(ARTIFACTS, { recursive: true });
  widget = mkdtempSync(join(ARTIFACTS, "widget-"));
  mkdirSync(join(widget, "src", "parts"), { recursive: true });
  writeFileSync(join(widget, "vite.config.ts"), CONFIG);
  writeFileSync(join(widget, "src", "parts", "greeting.ts"), 'export const greeting = "first build";\n');
  writeFileSync(join(widget, "src", "index.ts"), 'import { greeting } from "./parts/greeting.ts";\n(globalThis as Record<string, unknown>).tiny = greeting;\n');
});
afterAll(() => rmSync(ARTIFACTS, { recursive: true, force: true }));

describe("the demo's widget build", () => {
  it("builds when dist is missing, then reports it up to date without building again", async () => {
    expect(widgetBuildStale(widget)).toBe(true);
    const lines: string[] = [];
    expect(await buildWidget((line) => lines.push(line), widget)).toBeUndefined();
    expect(lines[0]).toMatch(/widget: building tests\/artifacts\/widget-build\/widget-\w+\/dist \(npx vite build -c .*vite\.config\.ts\)/);
    expect(lines.at(-1)).toBe("  widget: built");
    expect(readFileSync(dist("widget.js"), "utf8")).toContain("first build");
    expect(widgetBuildStale(widget)).toBe(false);

    const builtAt = statSync(dist("widget.js")).mtimeMs;
    const again: string[] = [];
    expect(await buildWidget((line) => again.push(line), widget)).toBeUndefined();
    expect(again).toEqual([expect.stringMatching(/widget: up to date/)]);
    expect(statSync(dist("widget.js")).mtimeMs).toBe(builtAt);
  }, 60_000);

  it("rebuilds when a source in a subfolder is newer than the build, and the new build has the change", async () => {
    const source = join(widget, "src", "parts", "greeting.ts");
    writeFileSync(source, 'export const greeting = "second build";\n');
    age(dist("widget.js"), -60);
    expect(widgetBuildStale(widget)).toBe(true);
    const lines: string[] = [];
    expect(await buildWidget((line) => lines.push(line), widget)).toBeUndefined();
    expect(lines.at(-1)).toBe("  widget: built");
    expect(readFileSync(dist("widget.js"), "utf8")).toContain("second build");
    expect(widgetBuildStale(widget)).toBe(false);
  }, 60_000);

  it("is stale when vite.config.ts is newer, or app.html is missing", () => {
    expect(widgetBuildStale(widget)).toBe(false);
    age(join(widget, "vite.config.ts"), 120);
    expect(widgetBuildStale(widget)).toBe(true);
    age(join(widget, "vite.config.ts"), -120);
    expect(widgetBuildStale(widget)).toBe(false);
    rmSync(dist("app.html"));
    expect(widgetBuildStale(widget)).toBe(true);
  });

  it("a source that does not compile is a widget_build_failed error saying which command shows why", async () => {
    writeFileSync(join(widget, "src", "index.ts"), "export const broken = (;\n");
    const error = await buildWidget(() => undefined, widget);
    expect(error?.code).toBe("widget_build_failed");
    expect(error?.message).toMatch(/the widget did not build; run `npx vite build -c .*vite\.config\.ts` to see why/);
  }, 60_000);
});
