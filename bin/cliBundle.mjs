// The `caplo` command's sources as ESM files, built on first use and again whenever a source changes:
// loading the CLI's ~300 TypeScript modules through tsx's loader hooks cost about 2.4 s of CPU a run (a
// `caplo serve --help`), the bundle about 1.1 s, of which most is the npm packages it imports. There is
// still no build step to forget: the manifest beside the bundle lists every source it holds with its size
// and modification time, and a run that finds one changed, added or gone builds it again (esbuild, about
// half a second). npm packages stay outside it and are imported from node_modules as before.
//
// The bundle is a folder: the entry, and each module it imports dynamically (each command of cli/main.ts) as
// a file of its own with everything that command imports. A command's file is imported only when it runs,
// and so are the npm packages only it needs: in one file, every external import is hoisted to the top, so
// `caplo --help` loaded twilio, the MCP SDK, ioredis and pg too. An entry that imports sources statically
// as well is one file, so that no module is loaded twice.
//
// A module's own location is kept: `import.meta.url`, `dirname` and `filename` in a source are written into
// the bundle as that source's path, so paths found from them (the repository root, the widget's build, the
// migrations) are the same as when the source runs itself. The bundle sits under node_modules/.cache, so
// that a bare specifier it imports (or `import.meta.resolve`) finds the same node_modules as the sources do.
//
// Where the bundle cannot be built or kept (no esbuild, a read-only checkout, a source esbuild cannot
// parse), `cliModule()` returns undefined and bin/caplo.mjs runs the sources through tsx, whose errors then
// say what is wrong where.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const ENTRY = join(ROOT, "server", "src", "cli", "main.ts");
const CLI_CACHE = join(ROOT, "node_modules", ".cache", "caplo-cli");
/** Bump when the way the bundle is made changes. */
const FORMAT = 2;

/** Size and modification time of a file, or null where it is gone. */
function stamp(path) {
  try {
    const stat = statSync(path, { bigint: true });
    return `${stat.size}:${stat.mtimeNs}`;
  } catch {
    return null;
  }
}

/**
 * The bundle the manifest names, if it was made by this format from sources that are all unchanged. A bundle
 * built from sources saved moments before its build began (unsettled) is used only by the runs that waited for
 * that build (`waited`): any other run builds again, as a source saved while it was read may be in it as it was.
 */
function current(cache, waited = false) {
  const manifestPath = join(cache, "manifest.json");
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  } catch {
    return undefined;
  }
  // Made here: a checkout moved or copied elsewhere has the old paths written in.
  if (manifest?.format !== FORMAT || manifest.root !== ROOT || typeof manifest.bundle !== "string" || !manifest.inputs) return undefined;
  if (manifest.settled !== true && !waited) return undefined;
  for (const [path, seen] of Object.entries(manifest.inputs)) if (stamp(join(ROOT, path)) !== seen) return undefined;
  const bundle = join(cache, manifest.bundle);
  return stamp(bundle) === null ? undefined : bundle;
}

/** `import.meta.url`, `dirname` and `filename` of a source as its own path (expressions, not text). */
function ownLocation(path) {
  return {
    "import.meta.url": JSON.stringify(pathToFileURL(path).href),
    "import.meta.dirname": JSON.stringify(dirname(path)),
    "import.meta.filename": JSON.stringify(path),
  };
}

/** The compiler options of tsconfig.json that change what a TypeScript file compiles to. */
const TSCONFIG = { compilerOptions: { target: "ES2023", verbatimModuleSyntax: true, jsx: "react-jsx", jsxImportSource: "preact" } };

async function build(entry, cache) {
  const manifestPath = join(cache, "manifest.json");
  const started = Date.now();
  const { build: esbuild, transform, version } = await import("esbuild");
  mkdirSync(cache, { recursive: true });
  const name = `cli-${process.pid}-${Date.now().toString(36)}`;
  const temporary = join(cache, `${name}.tmp`);
  // Each source compiled on its own first, with its own location written in; npm packages (not the
  // workspace's own @caplo/* sources) stay imports of node_modules.
  const ownSources = {
    name: "caplo-cli",
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.path.startsWith("@caplo/") || args.path.startsWith("node:")) return undefined;
        return { path: args.path, external: true };
      });
      build.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, async (args) => {
        if (args.path.includes("/node_modules/")) return undefined;
        const loader = /\.[cm]?tsx$/.test(args.path) ? "tsx" : /\.[cm]?ts$/.test(args.path) ? "ts" : /x$/.test(args.path) ? "jsx" : "js";
        const compiled = await transform(readFileSync(args.path, "utf8"), { loader, format: "esm", target: "node20", sourcefile: args.path, tsconfigRaw: TSCONFIG, define: ownLocation(args.path) });
        return { contents: compiled.code, loader: "js" };
      });
    },
  };
  const options = (entryPoints, plugins) => ({
    entryPoints,
    absWorkingDir: ROOT,
    bundle: true,
    outdir: temporary,
    outExtension: { ".js": ".mjs" },
    write: false,
    metafile: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // Names of functions and classes stay what the sources call them (tsx keeps them too).
    keepNames: true,
    logLevel: "silent",
    plugins,
  });
  // The entry alone, each module it imports dynamically (a command of cli/main.ts) left out as a file of its own.
  const stem = (path) => basename(path).replace(/\.[cm]?[jt]sx?$/, "");
  const main = stem(entry);
  const lazy = new Map(); // source path -> output name
  const used = new Set([main]);
  const lazyImports = {
    name: "caplo-cli-lazy",
    setup(build) {
      build.onResolve({ filter: /^\./ }, (args) => {
        if (args.kind !== "dynamic-import" || args.importer !== entry) return undefined;
        const path = join(dirname(args.importer), args.path);
        let name = lazy.get(path);
        if (!name) {
          const base = stem(path);
          name = used.has(base) ? `${base}-${used.size}` : base;
          used.add(name);
          lazy.set(path, name);
        }
        return { path: `./${name}.mjs`, external: true };
      });
    },
  };
  const results = [await esbuild(options({ [main]: entry }, [lazyImports, ownSources]))];
  // An entry that also imports sources statically (a test server, not the command table) stays one file:
  // a file of its own for a dynamic import would load a second copy of a module the entry already holds.
  const entryImports = results[0].metafile.inputs[relative(ROOT, entry)]?.imports ?? [];
  if (lazy.size > 0 && entryImports.some((imported) => imported.kind === "import-statement" && !imported.external)) {
    lazy.clear();
    results[0] = await esbuild(options({ [main]: entry }, [ownSources]));
  }
  // Then each of those as one file with everything it imports, its own dynamic imports included. (Split into
  // shared chunks instead, a long-running server spent about 12% more CPU a turn: bench/engine --against.)
  if (lazy.size > 0) results.push(await esbuild(options(Object.fromEntries([...lazy].map(([path, name]) => [name, path])), [ownSources])));
  const outputFiles = results.flatMap((result) => result.outputFiles);
  if (!outputFiles.some((file) => file.path === join(temporary, `${main}.mjs`))) return undefined;
  const inputs = {};
  for (const input of results.flatMap((result) => Object.keys(result.metafile.inputs))) {
    const path = join(ROOT, input);
    const seen = stamp(path);
    if (seen !== null) inputs[relative(ROOT, path)] = seen;
  }
  // And this file and esbuild's version: a change to how the bundle is made rebuilds it.
  for (const maker of [fileURLToPath(import.meta.url), join(ROOT, "node_modules", "esbuild", "package.json")]) {
    const seen = stamp(maker);
    if (seen !== null) inputs[relative(ROOT, maker)] = seen;
  }
  // A source saved while it was read may be in the bundle as it was before: this run (and the runs that
  // waited for this build) use the bundle, but the manifest says it is unsettled, so the next run builds again.
  const settled = Object.keys(inputs).every((path) => statSync(join(ROOT, path)).mtimeMs < started - 2_000);
  // Written whole in a folder of its own, then renamed into place: a run never sees half a bundle.
  mkdirSync(temporary, { recursive: true });
  for (const file of outputFiles) writeFileSync(join(temporary, relative(temporary, file.path)), file.contents);
  renameSync(temporary, join(cache, name));
  const bundle = `${name}/${main}.mjs`;
  const manifestTemporary = `${manifestPath}.${process.pid}.tmp`;
  writeFileSync(manifestTemporary, JSON.stringify({ format: FORMAT, root: ROOT, esbuild: version, bundle, settled, inputs }));
  renameSync(manifestTemporary, manifestPath);
  // Bundles of earlier sources (folders, and the single files of format 1): removed once they are a minute
  // old and no live process runs from one (a process imports a file of its bundle only when it needs it:
  // its command's file after the entry, an entry's late dynamic import maybe hours later).
  for (const other of readdirSync(cache)) {
    if (other === name || !other.startsWith("cli-")) continue;
    try {
      if (Date.now() - statSync(join(cache, other)).mtimeMs > 60_000 && !inUse(join(cache, other))) rmSync(join(cache, other), { recursive: true, force: true });
    } catch {
      // Removed by another run meanwhile.
    }
  }
  return join(cache, bundle);
}

const PINS = ".pins";

/** Whether a process still alive runs from this bundle folder (its pin, named by its pid, is there). */
function inUse(folder) {
  let pids;
  try {
    pids = readdirSync(join(folder, PINS));
  } catch {
    return false;
  }
  return pids.some((pid) => alive(Number(pid)));
}

/** Marks the bundle's folder as run from by this process until it exits (best effort: a read-only cache is not pinned). */
function pin(bundle) {
  const pins = join(dirname(bundle), PINS);
  const mine = join(pins, String(process.pid));
  try {
    mkdirSync(pins, { recursive: true });
    writeFileSync(mine, "");
    process.once("exit", () => rmSync(mine, { force: true }));
  } catch {
    // Not writable: the folder is only removed by a run that can write there, which then sees no pin.
  }
  return bundle;
}

/** Whether the process `pid` is alive (another user's counts). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

const LOCK = "build.lock";
/** How long a run waits for another run's build before it builds itself; a lock older than this is stale. */
const LOCK_WAIT_MS = 120_000;

/**
 * `make()` with the cache's build lock held: of the runs that find no bundle at once (the first runs after a
 * checkout or a change, often started together: a test's commands side by side, a terminal and a script), one
 * builds and the others wait for its bundle, instead of each building its own. The lock is a folder holding
 * its builder's pid: one left by a builder that died (killed mid-build) is taken over at once, and one older
 * than LOCK_WAIT_MS (its pid alive again as another process) too. A run that cannot make the lock (a
 * read-only cache), or has waited LOCK_WAIT_MS, builds without it, as before.
 */
async function underLock(cache, make) {
  const lock = join(cache, LOCK);
  const deadline = Date.now() + LOCK_WAIT_MS;
  let waited = false;
  for (;;) {
    try {
      mkdirSync(cache, { recursive: true });
      mkdirSync(lock);
      break;
    } catch (error) {
      if (error.code !== "EEXIST") return make();
    }
    waited = true;
    let owner = NaN;
    try {
      owner = Number(readdirSync(lock)[0]);
    } catch {
      continue; // released meanwhile: try again
    }
    // Its pid is written just after the folder is made: a lock without one is given a few seconds. A lock older
    // than any build (its pid reused since, say after a restart) is stale too.
    const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? 0);
    const gone = age > LOCK_WAIT_MS || (Number.isInteger(owner) && owner > 0 ? !alive(owner) : age > 5_000);
    if (gone) rmSync(lock, { recursive: true, force: true });
    else if (Date.now() > deadline) return make();
    else await new Promise((resolve) => setTimeout(resolve, 25));
  }
  try {
    writeFileSync(join(lock, String(process.pid)), "");
    // After a wait, the bundle the other run built (even from sources saved just before, as it uses it too).
    return current(cache, waited) ?? (await make());
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** A TypeScript entry's bundle in `cache` (built now if its sources changed), or undefined where it cannot be had. */
export async function bundledModule(entry, cache) {
  try {
    const bundle = current(cache) ?? (await underLock(cache, () => build(entry, cache)));
    return bundle && pin(bundle);
  } catch {
    return undefined;
  }
}

/** The CLI's bundle (built now if its sources changed), or undefined where it cannot be had. */
export function cliModule() {
  return bundledModule(ENTRY, CLI_CACHE);
}
