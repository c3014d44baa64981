// Packs @caplo/tools as the tarball a tool author installs: built JavaScript (one ESM file, with the few
// shared definitions it uses bundled in, so it imports no private package) and .d.ts files, the MCP SDK and
// zod as peer dependencies. `npx tsx scripts/pack-tools.ts [OUT_DIR]` prints the tarball's path
// (default dist/pack/). In the repository itself the workspace keeps importing sdk/src/*.ts.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { filesUnder, npmPack, readJson, relativeSpecifier, ROOT } from "./pack-common.ts";

/** Builds the package folder (dist/pack/tools) and packs it; returns the tarball's path. */
export async function packTools(outDir = join(ROOT, "dist", "pack")): Promise<string> {
  const sdk = readJson(join(ROOT, "sdk", "package.json"));
  const root = readJson(join(ROOT, "package.json"));
  const stage = join(outDir, "tools");
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });

  // JavaScript: one file for Node 20 and later; the MCP SDK and zod stay imports (peer dependencies), so a
  // package shares one copy of each with its own server code.
  await build({
    entryPoints: [join(ROOT, "sdk", "src", "index.ts")],
    outfile: join(stage, "dist", "index.js"),
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    external: ["@modelcontextprotocol/sdk", "@modelcontextprotocol/sdk/*", "zod", "zod/*"],
    logLevel: "error",
  });

  // Types: tsc's declarations of sdk/src and the shared modules it uses, with the shared imports made
  // relative and .ts specifiers as .js, so they resolve in the author's project.
  const types = join(stage, "types");
  const tsconfig = join(stage, "tsconfig.types.json");
  writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: join(ROOT, "tsconfig.json"),
      compilerOptions: { typeRoots: [join(ROOT, "node_modules", "@types")], noEmit: false, declaration: true, emitDeclarationOnly: true, incremental: false, outDir: types, rootDir: ROOT, composite: false },
      include: [],
      files: [join(ROOT, "sdk", "src", "index.ts"), join(ROOT, "shared", "src", "outcome.ts"), join(ROOT, "shared", "src", "limits.ts")],
    }),
  );
  execFileSync(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", tsconfig], { cwd: ROOT, stdio: "inherit" });
  rmSync(tsconfig);
  for (const file of filesUnder(types)) {
    if (!file.endsWith(".d.ts")) continue;
    const text = readFileSync(file, "utf8")
      .replace(/from "@caplo\/shared\/([\w-]+)"/g, (_, name: string) => `from "${relativeSpecifier(file, join(types, "shared", "src", `${name}.js`))}"`)
      .replace(/from "@caplo\/shared"/g, () => `from "${relativeSpecifier(file, join(types, "shared", "src", "index.js"))}"`)
      .replace(/(from |import\()"(\.{1,2}\/[^"]+)\.ts"/g, '$1"$2.js"');
    writeFileSync(file, text);
  }

  const peer = (name: string) => root.dependencies![name]!.replace(/^\^?/, "^");
  writeFileSync(
    join(stage, "package.json"),
    `${JSON.stringify(
      {
        name: sdk.name,
        version: sdk.version,
        description: sdk.description,
        license: "Apache-2.0",
        type: "module",
        engines: { node: ">=20.19" },
        exports: { ".": { types: "./types/sdk/src/index.d.ts", default: "./dist/index.js" } },
        types: "./types/sdk/src/index.d.ts",
        files: ["dist", "types", "README.md"],
        peerDependencies: { "@modelcontextprotocol/sdk": peer("@modelcontextprotocol/sdk"), zod: peer("zod") },
      },
      null,
      2,
    )}\n`,
  );
  cpSync(join(ROOT, "sdk", "README.md"), join(stage, "README.md"));
  return npmPack(stage, outDir);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  packTools(process.argv[2] ? resolve(process.argv[2]) : undefined).then(
    (tarball) => console.log(tarball),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
