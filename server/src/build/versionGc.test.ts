import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { run } from "../cli/tool-gc.ts";
import { collectVersions, pinnedVersions } from "./versionGc.ts";

const hash = (c: string) => c.repeat(64);
let root = "";
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A frozen copy as freezePackage leaves it (read-only files), last touched `ageS` seconds ago. */
function copy(versions: string, name: string, h: string, ageS: number): string {
  const dir = join(versions, name, h);
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(join(dir, "caplo.yaml"), "name: x\n");
  writeFileSync(join(dir, "src", "index.js"), "export {};\n");
  chmodSync(join(dir, "caplo.yaml"), 0o444);
  chmodSync(join(dir, "src", "index.js"), 0o444);
  const at = new Date(Date.now() - ageS * 1000);
  utimesSync(dir, at, at);
  return dir;
}

function release(store: string, agent: string, id: string, packages: Array<{ name: string; contentHash: string }>): void {
  mkdirSync(join(store, agent), { recursive: true });
  writeFileSync(join(store, agent, `${id}.json`), JSON.stringify({ id: `${agent}@sha256:${id}`, agent, packages }));
}

describe("frozen version cleanup", () => {
  it("removes only copies no release pins that are not their package's newest; pins of old releases and other agents count", async () => {
    root = mkdtempSync(join(tmpdir(), "caplo-gc-"));
    const store = join(root, "releases");
    const versions = join(store, "versions");
    const oldPinned = copy(versions, "shop", hash("a"), 300);
    const unpinned = copy(versions, "shop", hash("b"), 200);
    const newest = copy(versions, "shop", hash("c"), 10);
    const otherAgents = copy(versions, "crm", hash("d"), 500);
    const crmOld = copy(versions, "crm", hash("e"), 900);
    release(store, "shop-agent", hash("1"), [{ name: "shop", contentHash: hash("a") }]);
    release(store, "help-desk", hash("2"), [{ name: "crm", contentHash: hash("d") }]);
    writeFileSync(join(store, "shop-agent", "latest.json"), JSON.stringify({ id: `shop-agent@sha256:${hash("1")}` }));
    expect(pinnedVersions(store)).toEqual(new Set([`shop/${hash("a")}`, `crm/${hash("d")}`]));

    const dry = collectVersions(versions, pinnedVersions(store), { dryRun: true });
    expect(dry.removed.sort()).toEqual([`crm/${hash("e")}`, `shop/${hash("b")}`]);
    expect(existsSync(unpinned) && existsSync(crmOld)).toBe(true);

    expect(await run(["--store", store])).toBe(0);
    expect(existsSync(unpinned)).toBe(false);
    expect(existsSync(crmOld)).toBe(false);
    for (const kept of [oldPinned, newest, otherAgents]) expect(existsSync(join(kept, "src", "index.js"))).toBe(true);
  });

  it("a package's own .caplo/versions keeps what the releases pin and its newest build", async () => {
    root = mkdtempSync(join(tmpdir(), "caplo-gc-"));
    const store = join(root, "releases");
    const pkg = join(root, "shop");
    const versions = join(pkg, ".caplo", "versions");
    const pinned = copy(versions, "shop", hash("a"), 300);
    const old = copy(versions, "shop", hash("b"), 200);
    const newest = copy(versions, "shop", hash("c"), 1);
    release(store, "shop-agent", hash("1"), [{ name: "shop", contentHash: hash("a") }]);
    expect(await run(["--store", store, "--dir", pkg])).toBe(0);
    expect([existsSync(pinned), existsSync(old), existsSync(newest)]).toEqual([true, false, true]);
  });

  it("a release file that cannot be read removes nothing (exit 1); a bad option is a usage error (exit 2)", async () => {
    root = mkdtempSync(join(tmpdir(), "caplo-gc-"));
    const store = join(root, "releases");
    const old = copy(join(store, "versions"), "shop", hash("b"), 200);
    copy(join(store, "versions"), "shop", hash("c"), 1);
    mkdirSync(join(store, "shop-agent"), { recursive: true });
    writeFileSync(join(store, "shop-agent", `${hash("1")}.json`), "{ not json");
    expect(await run(["--store", store])).toBe(1);
    expect(existsSync(old)).toBe(true);
    expect(await run(["--store"])).toBe(2);
    expect(await run(["--force"])).toBe(2);
  });
});
