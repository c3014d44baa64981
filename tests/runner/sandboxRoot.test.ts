// The isolated sandbox's root as the launcher builds it: a folder of the runner's holding only empty
// mount points, and one fstab that mounts them all in the sandbox's own mount namespace. A package folder
// whose path holds a space, a tab and a backslash (written as octal escapes in the fstab) is bound and
// readable; the root and everything bound into it are read-only; the host's copy of the root stays a
// skeleton of empty mount points while the package runs (the mounts are the namespace's), and the
// runner's cleanup removes it and its fstab.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findNode24 } from "../../server/src/runner/node24.ts";
import { probeIsolation, spawnSandboxed } from "../../server/src/runner/sandbox.ts";

const scratch = mkdtempSync(join(tmpdir(), "caplo-root-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Every file under a folder, with its size. */
function files(dir: string): Record<string, number> {
  const found: Record<string, number> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) found[join(entry.parentPath, entry.name).slice(dir.length)] = statSync(join(entry.parentPath, entry.name)).size;
  }
  return found;
}

describe.skipIf(!probeIsolation().available)("the isolated sandbox's root", () => {
  it("binds a folder whose path holds a space, a tab and a backslash, read-only, and leaves the host's root a skeleton it then removes", async () => {
    const node = findNode24();
    if (!node.ok) throw new Error(node.message);
    const folder = join(scratch, "a package\tfolder\\with odd name");
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, "data.txt"), "read through the bind\n");
    // The package's modules by a plain path: Node reads --import as a URL (a backslash is a slash there)
    // and refuses a main module whose URL holds an escaped backslash.
    const plain = join(scratch, "plain");
    mkdirSync(plain);
    writeFileSync(join(plain, "pre.mjs"), "");
    writeFileSync(
      join(plain, "package.mjs"),
      `import { readFileSync, writeFileSync } from "node:fs";
const tryWrite = (path) => { try { writeFileSync(path, "x"); return "written"; } catch (error) { return error.code; } };
console.log(JSON.stringify({
  data: readFileSync(${JSON.stringify(join(folder, "data.txt"))}, "utf8"),
  writeRoot: tryWrite("/escape.txt"),
  writeFolder: tryWrite(${JSON.stringify(join(folder, "new.txt"))}),
}));
process.stdin.resume();
process.stdin.once("end", () => process.exit(0));
`,
    );
    // The package's folder is listed with `..` enough to climb out of any root: it is still bound inside it
    // (the host's own folder is never a mount point), so the package loads.
    const sandbox = spawnSandboxed({ node: node.path, mode: "isolated", readPaths: [folder, `${"/..".repeat(12)}${plain}`], memoryMb: 64, preload: join(plain, "pre.mjs"), script: [join(plain, "package.mjs")] });
    let stderr = "";
    sandbox.child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const line = await new Promise<string>((resolve, reject) => {
      sandbox.child.stdout?.once("data", (chunk: Buffer) => resolve(chunk.toString()));
      sandbox.child.once("exit", (code) => reject(new Error(`the sandbox exited (${code}): ${stderr}`)));
    });
    const seen = JSON.parse(line) as { data: string; writeRoot: string; writeFolder: string };
    expect(seen.data).toBe("read through the bind\n");
    expect(seen.writeRoot).toBe("ERR_ACCESS_DENIED");
    expect(seen.writeFolder).toBe("ERR_ACCESS_DENIED");

    // On the host, while the package runs: the root is a skeleton (every file an empty mount point).
    const roots = readdirSync(join(tmpdir())).filter((name) => name.startsWith(`caplo-runner-${process.pid}-`));
    expect(roots).toHaveLength(1);
    const runtime = join(tmpdir(), roots[0] as string);
    const root = readdirSync(runtime).find((name) => name.startsWith("root-") && !name.endsWith(".fstab"));
    expect(root).toBeDefined();
    const skeleton = files(join(runtime, root as string));
    expect(Object.keys(skeleton).sort()).toEqual(["/dev/null", "/dev/random", "/dev/urandom", "/dev/zero", "/usr/bin/setpriv"]);
    expect(readdirSync(join(runtime, root as string, folder))).toEqual([]);
    expect(Object.values(skeleton).every((size) => size === 0)).toBe(true);
    // Only mount points: no /etc.
    expect(readdirSync(join(runtime, root as string)).sort()).toEqual(expect.arrayContaining(["dev", "proc", "tmp", "usr"]));
    expect(readdirSync(join(runtime, root as string))).not.toContain("etc");
    const fstab = readFileSync(join(runtime, `${root}.fstab`), "utf8");
    expect(fstab).toContain("a\\040package\\011folder\\134with\\040odd\\040name");

    const exited = new Promise<number | null>((resolve) => sandbox.child.once("exit", resolve));
    sandbox.child.stdin?.end();
    expect(await exited).toBe(0);
    sandbox.cleanup();
    expect(existsSync(join(runtime, root as string))).toBe(false);
    expect(existsSync(join(runtime, `${root}.fstab`))).toBe(false);
  }, 30_000);
});
