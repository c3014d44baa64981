// bin/caplo.mjs runs the CLI from a bundle of its sources (bin/cliBundle.mjs): the same command prints the
// same as the sources run through tsx; the manifest lists the sources it holds (not npm packages) with
// their stamps; a source whose stamp no longer matches, or a bundle made in another checkout, is built
// again before the command runs (but not kept when a source was saved while it was read); and each
// source keeps its own location (import.meta.url written in as its path), while text that only names
// import.meta.url (the runner's host bundle banner, generated code for Node 24) is left as it is.
//
// The CLI's own bundle (node_modules/.cache/caplo-cli) is only read here: other test files run `caplo` at
// the same time. The rebuild rules are checked on a small entry of this test's own, in a cache of its own.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain ESM module of bin/, without types
import { bundledModule } from "../../bin/cliBundle.mjs";

const ROOT = join(import.meta.dirname, "..", "..");
const CLI_CACHE = join(ROOT, "node_modules", ".cache", "caplo-cli");
type Manifest = { format: number; root: string; bundle: string; settled: boolean; inputs: Record<string, string> };
const readManifest = (cache: string) => JSON.parse(readFileSync(join(cache, "manifest.json"), "utf8")) as Manifest;
const bundle = bundledModule as (entry: string, cache: string) => Promise<string | undefined>;

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
  it("prints what the sources print, lists its sources without npm packages, and keeps each source's location", () => {
    const bundled = caplo("serve", "--help");
    expect(bundled.status).toBe(0);
    expect(bundled.stdout).toBe(throughTsx("serve", "--help").stdout);
    expect(bundled.stdout).toContain("CAPLO_");

    const manifest = readManifest(CLI_CACHE);
    const inputs = Object.keys(manifest.inputs);
    expect(inputs).toEqual(expect.arrayContaining(["server/src/cli/main.ts", "server/src/runner/node24.ts", "shared/src/limits.ts", "examples/shop-api/src/demo.ts", "bin/cliBundle.mjs"]));
    // No npm package, only esbuild's version (which made it).
    expect(inputs.filter((path) => path.includes("node_modules"))).toEqual(["node_modules/esbuild/package.json"]);

    // The entry and a file per command: each command's module (and the npm packages only it needs) is
    // loaded when that command runs, not by every command.
    const folder = dirname(join(CLI_CACHE, manifest.bundle));
    const files = readdirSync(folder).filter((file) => file.endsWith(".mjs"));
    expect(files.length).toBeGreaterThan(10);
    const code = files.map((file) => readFileSync(join(folder, file), "utf8")).join("\n");
    expect(readFileSync(join(CLI_CACHE, manifest.bundle), "utf8")).not.toMatch(/^import .* from "(twilio|pg|ioredis|@modelcontextprotocol\/sdk\/[^"]*)";$/m);
    // node24.ts finds the repository from its own place: written in as its path, not the bundle's.
    expect(code).toContain(JSON.stringify(pathToFileURL(join(ROOT, "server", "src", "runner", "node24.ts")).href));
    // Generated code that names import.meta.url in a string keeps it.
    expect(code).toContain("__caploCreateRequire(import.meta.url)");
  }, 60_000);

  describe("built again when it must be", () => {
    // Under the repository (the manifest's paths are relative to it), in a folder of this test's own.
    const scratch = join(ROOT, "tests", "artifacts", `cli-bundle-${process.pid}`);
    const cache = join(scratch, "cache");
    const entry = join(scratch, "entry.ts");
    const helper = join(scratch, "helper.ts");
    const relativeHelper = `tests/artifacts/cli-bundle-${process.pid}/helper.ts`;
    afterAll(() => rmSync(scratch, { recursive: true, force: true }));
    const settledLongAgo = (path: string) => utimesSync(path, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const run = async () => (await import(pathToFileURL((await bundle(entry, cache))!).href + `?${Math.random()}`)) as { where: string; word: string };

    it("keeps a bundle while its sources are unchanged; builds again for a changed source, another checkout, and never records a build of a source saved meanwhile", async () => {
      mkdirSync(scratch, { recursive: true });
      writeFileSync(helper, `export const word: string = "first";\n`);
      writeFileSync(entry, `export { word } from "./helper.ts";\nexport const where: string = import.meta.url;\n`);
      settledLongAgo(helper);
      settledLongAgo(entry);

      const first = await run();
      expect(first).toMatchObject({ where: pathToFileURL(entry).href, word: "first" });
      const made = readManifest(cache);
      expect(Object.keys(made.inputs)).toEqual(expect.arrayContaining([relativeHelper, "bin/cliBundle.mjs", "node_modules/esbuild/package.json"]));
      // Unchanged: the same bundle, not built again.
      expect(await bundle(entry, cache)).toBe(join(cache, made.bundle));

      // A source changed since (its stamp no longer the one the bundle was made from): built again, with the change.
      writeFileSync(helper, `export const word: string = "second";\n`);
      settledLongAgo(helper);
      expect((await run()).word).toBe("second");
      const rebuilt = readManifest(cache);
      expect(rebuilt.bundle).not.toBe(made.bundle);
      expect(rebuilt.inputs[relativeHelper]).not.toBe(made.inputs[relativeHelper]);

      // Made in another checkout (moved or copied here): its paths are that checkout's, so built again.
      writeFileSync(join(cache, "manifest.json"), JSON.stringify({ ...rebuilt, root: "/elsewhere" }));
      expect((await run()).word).toBe("second");
      const moved = readManifest(cache);
      expect(moved.root).toBe(ROOT);
      expect(moved.bundle).not.toBe(rebuilt.bundle);

      // A source saved as it was being read (modified within the build): that run uses what it built, but
      // the manifest says so (unsettled), so a later run builds again rather than keep a bundle of the old text.
      writeFileSync(helper, `export const word: string = "third";\n`);
      expect((await run()).word).toBe("third");
      const unsettled = readManifest(cache);
      expect(unsettled).toMatchObject({ settled: false });
      expect(unsettled.bundle).not.toBe(moved.bundle);
      settledLongAgo(helper);
      expect((await run()).word).toBe("third");
      expect(readManifest(cache)).toMatchObject({ settled: true });
      expect(readManifest(cache).bundle).not.toBe(unsettled.bundle);
    });

    it("is built once by runs that start together on an empty cache (the others wait for it), and a dead builder's or a stale lock is taken over", async () => {
      const together = join(scratch, "together");
      mkdirSync(scratch, { recursive: true });
      writeFileSync(helper, `export const word: string = "together";\n`);
      writeFileSync(entry, `export { word } from "./helper.ts";\nexport const where: string = import.meta.url;\n`);
      for (const path of [entry, helper]) settledLongAgo(path);
      const script = `const { bundledModule } = await import(${JSON.stringify(pathToFileURL(join(ROOT, "bin", "cliBundle.mjs")).href)});
const module = await import(await bundledModule(${JSON.stringify(entry)}, ${JSON.stringify(together)}));
process.stdout.write(module.word);`;
      const runs = Array.from({ length: 4 }, () => {
        const child = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
        let output = "";
        child.stdout.on("data", (chunk: Buffer) => (output += chunk));
        return new Promise<string>((resolve) => child.once("exit", () => resolve(output)));
      });
      expect(await Promise.all(runs)).toEqual(["together", "together", "together", "together"]);
      const built = () => readdirSync(together).filter((name) => name.startsWith("cli-"));
      expect(built()).toHaveLength(1);
      expect(existsSync(join(together, "build.lock"))).toBe(false);

      // A builder killed mid-build leaves its lock, named by its pid: the next run sees that process gone and builds.
      const dead = spawnSync(process.execPath, ["-e", "0"]).pid!;
      mkdirSync(join(together, "build.lock"));
      writeFileSync(join(together, "build.lock", String(dead)), "");
      writeFileSync(helper, `export const word: string = "after a dead builder";\n`);
      settledLongAgo(helper);
      const after = (await import(pathToFileURL((await bundle(entry, together))!).href)) as { word: string };
      expect(after.word).toBe("after a dead builder");
      expect(built()).toHaveLength(2);
      expect(existsSync(join(together, "build.lock"))).toBe(false);

      // A lock older than any build, whose pid is alive again as another process (this test's, after a restart
      // say), is stale too: the next run builds at once instead of waiting.
      mkdirSync(join(together, "build.lock"));
      writeFileSync(join(together, "build.lock", String(process.pid)), "");
      const old = new Date(Date.now() - 180_000);
      utimesSync(join(together, "build.lock"), old, old);
      writeFileSync(helper, `export const word: string = "after a stale lock";\n`);
      settledLongAgo(helper);
      // (Waiting for it as for a live builder would take 2 minutes, past this test's timeout.)
      const stale = (await import(pathToFileURL((await bundle(entry, together))!).href)) as { word: string };
      expect(stale.word).toBe("after a stale lock");
      expect(existsSync(join(together, "build.lock"))).toBe(false);
    }, 60_000);

    it("keeps an old bundle while a process that runs from it is alive: a module it imports late is still there after a rebuild", async () => {
      writeFileSync(join(scratch, "lazy.ts"), `export const late: string = "imported late";\n`);
      // Only dynamic imports: each is a file of its own, loaded when imported.
      writeFileSync(entry, `export const { word } = await import("./helper.ts");\nexport const where: string = import.meta.url;\nexport const later = () => import("./lazy.ts");\n`);
      for (const path of [entry, helper, join(scratch, "lazy.ts")]) settledLongAgo(path);
      // A long-running process (a server) that builds the bundle and runs from it: its late import waits
      // for a line on stdin. (This test's own process obtains later bundles, so it pins those, not this.)
      const script = `const { bundledModule } = await import(${JSON.stringify(pathToFileURL(join(ROOT, "bin", "cliBundle.mjs")).href)});
const module = await import(await bundledModule(${JSON.stringify(entry)}, ${JSON.stringify(cache)}));
process.stdout.write("ready\\n");
process.stdin.once("data", async () => { process.stdout.write((await module.later()).late + "\\n"); process.exit(0); });`;
      const server = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
      let output = "";
      server.stdout.on("data", (chunk: Buffer) => (output += chunk));
      const exited = new Promise<number | null>((resolve) => server.once("exit", resolve));
      await expect.poll(() => output, { timeout: 20_000 }).toContain("ready");
      const first = join(cache, readManifest(cache).bundle);
      expect(readdirSync(dirname(first)).filter((file) => file.endsWith(".mjs")).sort()).toEqual(["entry.mjs", "helper.mjs", "lazy.mjs"]);

      // Its bundle is over a minute old, and a source changes: the next run builds again and clears old bundles.
      const aged = new Date(Date.now() - 120_000);
      utimesSync(dirname(first), aged, aged);
      writeFileSync(helper, `export const word: string = "fourth";\n`);
      settledLongAgo(helper);
      expect((await run()).word).toBe("fourth");
      const second = join(cache, readManifest(cache).bundle);
      expect(second).not.toBe(first);
      expect(existsSync(dirname(first))).toBe(true);
      server.stdin.write("go\n");
      expect(await exited).toBe(0);
      expect(output).toContain("imported late");

      // Once that process has exited, the old bundle goes with the next rebuild.
      utimesSync(dirname(first), aged, aged);
      writeFileSync(helper, `export const word: string = "fifth";\n`);
      settledLongAgo(helper);
      expect((await run()).word).toBe("fifth");
      expect(existsSync(dirname(first))).toBe(false);
    }, 60_000);

    it("keeps an entry that also imports sources statically in one file, so a module it imports late is the one it holds", async () => {
      writeFileSync(join(scratch, "same.ts"), `export { marker } from "./helper.ts";\n`);
      writeFileSync(entry, `export { marker } from "./helper.ts";\nexport const later = () => import("./same.ts");\n`);
      writeFileSync(helper, `export const marker = { made: Math.random() };\n`);
      for (const path of [entry, helper, join(scratch, "same.ts")]) settledLongAgo(path);
      const built = (await bundle(entry, cache))!;
      expect(readdirSync(dirname(built)).filter((file) => file.endsWith(".mjs"))).toEqual(["entry.mjs"]);
      const module = (await import(pathToFileURL(built).href)) as { marker: object; later: () => Promise<{ marker: object }> };
      expect((await module.later()).marker).toBe(module.marker);
    });
  });
});
