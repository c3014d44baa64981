import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { contentHash, packageFiles } from "./contentHash.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "caplo-hash-"));
  dirs.push(dir);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(dir, file, ".."), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

describe("package content hash", () => {
  it("is the same for the same files and ignores node_modules and .git", () => {
    const a = folder({ "caplo.yaml": "x", "src/tool.ts": "y" });
    const b = folder({ "caplo.yaml": "x", "src/tool.ts": "y", "node_modules/z/index.js": "z", ".git/HEAD": "ref" });
    expect(contentHash(a)).toBe(contentHash(b));
    expect(packageFiles(b)).toEqual(["caplo.yaml", "src/tool.ts"]);
    expect(contentHash(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("changes when a file's bytes or name change", () => {
    const base = contentHash(folder({ "caplo.yaml": "x", "src/tool.ts": "y" }));
    expect(contentHash(folder({ "caplo.yaml": "x", "src/tool.ts": "y2" }))).not.toBe(base);
    expect(contentHash(folder({ "caplo.yaml": "x", "src/tool2.ts": "y" }))).not.toBe(base);
    // Moving bytes between files must not collide.
    expect(contentHash(folder({ "a": "bc", "b": "" }))).not.toBe(contentHash(folder({ "a": "b", "b": "c" })));
  });
});
