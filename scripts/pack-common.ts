// What the pack scripts (pack-tools.ts, pack-caplo.ts) share: the repository root, package.json reading,
// a folder's files, the versions installed here, and `npm pack` of a staged package folder.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export type PackageJson = {
  name: string;
  version: string;
  description: string;
  license?: string;
  engines?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

export function readJson(path: string): PackageJson {
  return JSON.parse(readFileSync(path, "utf8")) as PackageJson;
}

/** Every file under a folder (recursively). */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The version of a package installed in this repository's node_modules. */
export function installedVersion(name: string): string {
  return readJson(join(ROOT, "node_modules", name, "package.json")).version;
}

/** The range the root package.json gives a package (dependencies or devDependencies), or `^` its installed version. */
export function rootRange(name: string): string {
  const root = readJson(join(ROOT, "package.json"));
  return root.dependencies?.[name] ?? root.devDependencies?.[name] ?? `^${installedVersion(name)}`;
}

/** A relative ES module specifier from one file to another ("./x.js", "../y/z.js"). */
export function relativeSpecifier(from: string, to: string): string {
  const path = relative(dirname(from), to).split("\\").join("/");
  return path.startsWith(".") ? path : `./${path}`;
}

/** `npm pack` of a staged package folder into outDir; returns the tarball's path. */
export function npmPack(stage: string, outDir: string): string {
  const name = execFileSync("npm", ["pack", "--silent", "--pack-destination", outDir], { cwd: stage, encoding: "utf8" }).trim().split("\n").pop()!;
  return join(outDir, name);
}
