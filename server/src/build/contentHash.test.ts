import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { contentHash, packageFiles, shippedFiles } from "./contentHash.ts";

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
  it("covers only what ships: .caplo, local secrets files, logs, test output and .git are left out", () => {
    const a = folder({ "caplo.yaml": "x", "src/tool.ts": "y" });
    const b = folder({
      "caplo.yaml": "x",
      "src/tool.ts": "y",
      ".git/HEAD": "ref",
      ".caplo/invocations.jsonl": "{}",
      ".caplo/secrets.env": "SHOP_API_KEY=k",
      ".caplo/versions/x/abc/caplo.yaml": "x",
      ".env": "A=1",
      ".env.local": "A=2",
      "local.secrets.env": "A=3",
      "npm-debug.log": "log",
      "coverage/index.html": "<html>",
      "test-results/out.json": "{}",
      "node_modules/.bin/tsx": "#!",
      "node_modules/.cache/x": "cache",
    });
    expect(contentHash(a)).toBe(contentHash(b));
    expect(packageFiles(b)).toEqual(["caplo.yaml", "src/tool.ts"]);
    expect(contentHash(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("ships the package's own node_modules (code it runs), but not a node_modules linked from elsewhere", () => {
    const own = folder({ "caplo.yaml": "x", "node_modules/dep/index.js": "export {}" });
    expect(packageFiles(own)).toEqual(["caplo.yaml", "node_modules/dep/index.js"]);
    const linked = folder({ "caplo.yaml": "x" });
    symlinkSync(own, join(linked, "node_modules"), "dir");
    writeFileSync(join(own, "target.txt"), "t");
    symlinkSync(join(own, "target.txt"), join(linked, "file-link.txt"));
    const shipped = shippedFiles(linked);
    expect(shipped.ok && shipped.files.map((file) => file.path)).toEqual(["caplo.yaml", "file-link.txt"]);
    expect(shipped.ok && shipped.skipped).toEqual(["node_modules"]);
  });

  it("changes when a file's bytes or name change", () => {
    const base = contentHash(folder({ "caplo.yaml": "x", "src/tool.ts": "y" }));
    expect(contentHash(folder({ "caplo.yaml": "x", "src/tool.ts": "y2" }))).not.toBe(base);
    expect(contentHash(folder({ "caplo.yaml": "x", "src/tool2.ts": "y" }))).not.toBe(base);
    // Moving bytes between files must not collide.
    expect(contentHash(folder({ "a": "bc", "b": "" }))).not.toBe(contentHash(folder({ "a": "b", "b": "c" })));
  });
});
