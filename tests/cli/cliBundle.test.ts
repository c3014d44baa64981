// bin/caplo.mjs runs the CLI from a bundle of its sources (bin/cliBundle.mjs): the same command prints the
// same as the sources run through tsx; the manifest lists the sources it holds (not npm packages) with
// their stamps; a source whose stamp no longer matches, or a bundle made in another checkout, is built
// again before the command runs (but not kept when a source was saved while it was read); and each
// source keeps its own location (import.meta.url written in as its path), while text that only names
// import.meta.url (the runner's host bundle banner, generated code for Node 24) is left as it is.
import { spawnSync } from "node:child_process";
import { readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const MANIFEST = join(ROOT, "node_modules", ".cache", "caplo-cli", "manifest.json");
type Manifest = { format: number; bundle: string; inputs: Record<string, string> };

function caplo(...args: string[]): { status: number | null; stdout: string } {
  const run = spawnSync(process.execPath, [join(ROOT, "bin", "caplo.mjs"), ...args], { cwd: ROOT, encoding: "utf8" });
  return { status: run.status, stdout: run.stdout };
}

function throughTsx(...args: string[]): { status: number | null; stdout: string } {
  const script = `const { main } = await import(${JSON.stringify(pathToFileURL(join(ROOT, "server", "src", "cli", "main.ts")).href)}); process.exitCode = await main(${JSON.stringify(args)});`;
  const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: ROOT, encoding: "utf8" });
  return { status: run.status, stdout: run.stdout };
}

describe("the CLI's bundle", () => {
  it("prints what the sources print, lists its sources, and is built again when one changed", () => {
    const bundled = caplo("serve", "--help");
    expect(bundled.status).toBe(0);
    expect(bundled.stdout).toBe(throughTsx("serve", "--help").stdout);
    expect(bundled.stdout).toContain("CAPLO_");

    const manifest = JSON.parse(readFileSync(MANIFEST, "utf8")) as Manifest;
    const inputs = Object.keys(manifest.inputs);
    expect(inputs).toEqual(expect.arrayContaining(["server/src/cli/main.ts", "server/src/runner/node24.ts", "shared/src/limits.ts", "examples/shop-api/src/demo.ts", "bin/cliBundle.mjs"]));
    // No npm package, only esbuild's version (which made it).
    expect(inputs.filter((path) => path.includes("node_modules"))).toEqual(["node_modules/esbuild/package.json"]);

    const code = readFileSync(join(ROOT, "node_modules", ".cache", "caplo-cli", manifest.bundle), "utf8");
    // node24.ts finds the repository from its own place: written in as its path, not the bundle's.
    expect(code).toContain(JSON.stringify(pathToFileURL(join(ROOT, "server", "src", "runner", "node24.ts")).href));
    // Generated code that names import.meta.url in a string keeps it.
    expect(code).toContain("__caploCreateRequire(import.meta.url)");

    // A source changed since (its stamp no longer the one the bundle was made from): built again.
    const changed = { ...manifest, inputs: { ...manifest.inputs, "server/src/cli/main.ts": "0:0" } };
    writeFileSync(MANIFEST, JSON.stringify(changed));
    const again = caplo("serve", "--help");
    expect(again.status).toBe(0);
    expect(again.stdout).toBe(bundled.stdout);
    const rebuilt = JSON.parse(readFileSync(MANIFEST, "utf8")) as Manifest;
    expect(rebuilt.bundle).not.toBe(manifest.bundle);
    expect(rebuilt.inputs["server/src/cli/main.ts"]).not.toBe("0:0");

    // Made in another checkout (moved or copied here): its paths are that checkout's, so built again.
    writeFileSync(MANIFEST, JSON.stringify({ ...rebuilt, root: "/elsewhere" }));
    expect(caplo("serve", "--help").stdout).toBe(bundled.stdout);
    const moved = JSON.parse(readFileSync(MANIFEST, "utf8")) as Manifest & { root: string };
    expect(moved.root).toBe(ROOT);
    expect(moved.bundle).not.toBe(rebuilt.bundle);

    // A source saved as it was being read (modified within the build): that run uses what it built, but
    // the manifest is not written, so a later run builds again rather than keep a bundle of the old text.
    const source = join(ROOT, "shared", "src", "limits.ts");
    const before = statSync(source);
    writeFileSync(MANIFEST, JSON.stringify({ ...moved, inputs: { ...moved.inputs, "shared/src/limits.ts": "0:0" } }));
    const stale = readFileSync(MANIFEST, "utf8");
    utimesSync(source, new Date(), new Date());
    try {
      expect(caplo("serve", "--help").stdout).toBe(bundled.stdout);
      expect(readFileSync(MANIFEST, "utf8")).toBe(stale);
    } finally {
      utimesSync(source, before.atime, before.mtime);
    }
  }, 60_000);
});
