import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { contentHash } from "./contentHash.ts";
import { checkFrozen, freezePackage, keepFrozen } from "./frozenVersion.ts";

const root = mkdtempSync(join(tmpdir(), "caplo-frozen-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let count = 0;
function pkg(files: Record<string, string>): string {
  const dir = join(root, `pkg-${++count}`);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(dir, file, ".."), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}
const files = { "caplo.yaml": "name: orders\n", "src/tool.ts": "export default 1;\n", ".caplo/secrets.env": "SHOP_API_KEY=secret\n", ".caplo/invocations.jsonl": "{}\n" };

describe("frozen versions", () => {
  it("copies exactly what ships into versions/<name>/<hash>, read-only, with the package's hash", () => {
    const dir = pkg(files);
    const frozen = freezePackage(dir, "orders", join(root, "versions"));
    expect(frozen.ok).toBe(true);
    if (!frozen.ok) return;
    expect(frozen.contentHash).toBe(contentHash(dir));
    expect(frozen.dir).toBe(join(root, "versions", "orders", frozen.contentHash));
    expect(readFileSync(join(frozen.dir, "src/tool.ts"), "utf8")).toBe("export default 1;\n");
    // The local secrets file and logs stay behind: nothing run from the copy can read them.
    expect(existsSync(join(frozen.dir, ".caplo"))).toBe(false);
    expect(statSync(join(frozen.dir, "src/tool.ts")).mode & 0o222).toBe(0);
    expect(checkFrozen(frozen.dir, frozen.contentHash)).toBeUndefined();
  });

  it("freezing the same content again reuses the copy; new secrets or logs make no new version", () => {
    const dir = pkg(files);
    const first = freezePackage(dir, "orders", join(root, "again"));
    writeFileSync(join(dir, ".caplo", "secrets.env"), "SHOP_API_KEY=other\n");
    writeFileSync(join(dir, ".env"), "X=1\n");
    const second = freezePackage(dir, "orders", join(root, "again"));
    expect(second).toEqual(first);
  });

  it("refuses a copy with one byte changed, a file added or removed, or a link, as version_altered", () => {
    const dir = pkg(files);
    const frozen = freezePackage(dir, "orders", join(root, "altered"));
    if (!frozen.ok) throw new Error("expected a copy");
    const file = join(frozen.dir, "src/tool.ts");
    chmodSync(file, 0o644);
    writeFileSync(file, "export default 2;\n");
    expect(checkFrozen(frozen.dir, frozen.contentHash)).toMatchObject({ code: "version_altered" });
    writeFileSync(file, "export default 1;\n");
    expect(checkFrozen(frozen.dir, frozen.contentHash)).toBeUndefined();
    writeFileSync(join(frozen.dir, "src/extra.ts"), "");
    expect(checkFrozen(frozen.dir, frozen.contentHash)).toMatchObject({ code: "version_altered" });
    rmSync(join(frozen.dir, "src/extra.ts"));
    mkdirSync(join(frozen.dir, ".caplo"));
    writeFileSync(join(frozen.dir, ".caplo", "secrets.env"), "A=1");
    expect(checkFrozen(frozen.dir, frozen.contentHash)).toMatchObject({ code: "version_altered", path: ".caplo" });
    rmSync(join(frozen.dir, ".caplo"), { recursive: true });
    // Freezing again over an altered copy does not paper over it.
    rmSync(file);
    expect(freezePackage(dir, "orders", join(root, "altered"))).toMatchObject({ ok: false, error: { code: "version_altered" } });
    expect(checkFrozen(join(root, "altered", "orders", "0".repeat(64)), "0".repeat(64))).toMatchObject({ code: "version_missing" });
  });

  it("keeps a frozen copy in another versions folder only while it matches its hash", () => {
    const dir = pkg(files);
    const frozen = freezePackage(dir, "orders", join(root, "local"));
    if (!frozen.ok) throw new Error("expected a copy");
    const kept = keepFrozen({ name: "orders", contentHash: frozen.contentHash, dir: frozen.dir }, join(root, "releases", "versions"));
    expect(kept).toMatchObject({ ok: true, contentHash: frozen.contentHash, dir: join(root, "releases", "versions", "orders", frozen.contentHash) });
    expect(keepFrozen({ name: "orders", contentHash: "f".repeat(64), dir: frozen.dir }, join(root, "other"))).toMatchObject({ ok: false, error: { code: "version_altered" } });
  });
});
