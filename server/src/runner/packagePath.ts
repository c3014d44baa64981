// Paths inside a package that the CLI reads or writes on the host (caplo.yaml, the entry, fixtures,
// .caplo/secrets.env, .caplo/invocations.jsonl): a package is untrusted, so a path is used only if,
// with every symbolic link followed (of the file and of each folder above it), it is still inside the
// package's own folder. A path that does not exist yet is judged by its nearest existing folder.
import { lstatSync, readdirSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

export type PathError = { code: "path_outside_package"; path: string; message: string };
export type InsidePath = { ok: true; path: string } | { ok: false; error: PathError };

/** Whether `path` is `root` or below it (both real paths). */
function within(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

/** The real path of `path` (followed through every link), or of its nearest existing folder plus the rest. */
function realPath(path: string): string {
  let existing = resolve(path);
  const rest: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(existing), ...rest.reverse());
    } catch {
      const parent = dirname(existing);
      if (parent === existing) return resolve(path);
      rest.push(existing.slice(parent.length).replace(/^[/\\]/, ""));
      existing = parent;
    }
  }
}

/** `path` if it stays inside the package folder `root` once every link is followed; else why not. */
export function insidePackage(root: string, path: string): InsidePath {
  const realRoot = realPath(root);
  const full = isAbsolute(path) ? path : join(root, path);
  const real = realPath(full);
  if (within(realRoot, real)) return { ok: true, path: real };
  const shown = relative(root, full) || full;
  return { ok: false, error: { code: "path_outside_package", path: shown, message: `${shown} leads outside the package (to ${real}): links and paths that leave the package are refused` } };
}

const SKIPPED = new Set([".git"]);

/**
 * What in the package would bring a file of the host into it, at most `max`: a symbolic link whose target
 * is outside the package (outside node_modules any such link; inside it a link to a file, which the build
 * would copy), and a hard link to a file the sandbox's user may not read (the build's copy would make
 * its bytes readable to the package).
 */
export function linksLeavingPackage(root: string, max = 10): PathError[] {
  const realRoot = realPath(root);
  const found: PathError[] = [];
  const walk = (folder: string, inModules: boolean) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (found.length >= max) return;
      if (SKIPPED.has(entry.name)) continue;
      const full = join(folder, entry.name);
      const shown = relative(root, full);
      if (entry.isDirectory()) walk(full, inModules || entry.name === "node_modules");
      else if (entry.isSymbolicLink()) {
        const target = resolve(folder, readlinkSync(full));
        const real = realPath(target);
        if (within(realRoot, real)) continue;
        if (inModules && !statSync(full, { throwIfNoEntry: false })?.isFile()) continue;
        found.push({ code: "path_outside_package", path: shown, message: `${shown} is a link to ${readlinkSync(full)}, outside the package: a package holds its own files` });
      } else if (entry.isFile()) {
        const stat = lstatSync(full);
        if (stat.nlink > 1 && (stat.mode & 0o004) === 0) {
          found.push({ code: "path_outside_package", path: shown, message: `${shown} is a hard link to a file others may not read: a package holds its own files` });
        }
      }
    }
  };
  if (lstatSync(root).isDirectory()) walk(root, false);
  return found;
}
