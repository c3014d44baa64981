// The widget ships to browsers: its source may import only Preact, DOMPurify, its own files, types from
// @caplo/shared and the zod-free limits constants. No Node built-ins, no zod, no server or Twilio code.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";

const ROOT = new URL(".", import.meta.url).pathname;
const ALLOWED = new Set(["preact", "preact/hooks", "dompurify", "@caplo/shared/limits"]);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    const isTest = /\.test\.tsx?$/.test(entry.name) || entry.name === "testing.tsx";
    return /\.(ts|tsx)$/.test(entry.name) && !isTest ? [path] : [];
  });
}

describe("widget bundle boundary", () => {
  test("browser code imports only Preact, DOMPurify, its own modules, shared types and shared limits", () => {
    const bad: string[] = [];
    let seen = 0;
    for (const file of sources(ROOT)) {
      const text = readFileSync(file, "utf8");
      for (const match of text.matchAll(/^\s*import\s+(type\s+)?[^"']*?from\s+["']([^"']+)["']|^\s*import\s+["']([^"']+)["']/gm)) {
        const typeOnly = Boolean(match[1]);
        const spec = match[2] ?? match[3]!;
        seen += 1;
        if (spec.startsWith(".")) continue;
        if (typeOnly && spec.startsWith("@caplo/shared")) continue;
        if (!ALLOWED.has(spec)) bad.push(`${file.slice(ROOT.length)}: ${spec}`);
      }
    }
    expect(seen).toBeGreaterThan(50); // the scan really read the imports
    expect(bad).toEqual([]);
  });

  test("the shared limits module the widget imports has no imports of its own (so no zod)", () => {
    const limits = readFileSync(new URL("../../shared/src/limits.ts", import.meta.url), "utf8");
    expect(limits).not.toMatch(/^\s*import\s/m);
  });
});
