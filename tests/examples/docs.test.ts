// The docs' commands: every ```sh runnable block in docs/ is run line by line (`caplo`/`npx caplo` as
// this checkout's CLI) in a scratch folder where `examples/` is this repository's, and must exit 0; every
// `caplo` command named in any sh block of the docs this folder owns must be a command the CLI has.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { COMMANDS } from "../../server/src/cli/main.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");
const DOCS = join(ROOT, "docs");
const CLI = join(ROOT, "bin", "caplo.mjs");
/** Docs written by other parts of the team; their sh blocks are run only when they mark them runnable. */
const OTHERS = new Set(["ARCHITECTURE.md", "agents.md", "identity.md", "channels.md", "tool-fixtures.md"]);

type Block = { file: string; line: number; info: string; commands: string[] };

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? markdownFiles(join(dir, entry.name)) : entry.name.endsWith(".md") ? [join(dir, entry.name)] : [],
  );
}

/** Fenced code blocks whose info string starts with sh, with their command lines (comments dropped). */
function shellBlocks(file: string): Block[] {
  const blocks: Block[] = [];
  const lines = readFileSync(file, "utf8").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(sh|bash|shell)\b(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const commands: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith("```"); i++) {
      const command = lines[i]!.replace(/(^|\s)#.*$/, "").trim();
      if (command) commands.push(command);
    }
    blocks.push({ file: relative(ROOT, file), line: start + 1, info: `${open[1]}${open[2]}`.trim(), commands });
  }
  return blocks;
}

/** `caplo tool build x` / `npx caplo tool build x` → the CLI arguments, or undefined for another program. */
function caploArgs(command: string): string[] | undefined {
  const words = command.split(/\s+/);
  if (words[0] === "npx" && words[1] === "caplo") return words.slice(2);
  if (words[0] === "caplo") return words.slice(1);
  return undefined;
}

const files = markdownFiles(DOCS);
const blocks = files.flatMap(shellBlocks);
const runnable = blocks.filter((block) => /\brunnable\b/.test(block.info));
const scratchRoot = join(ROOT, "tests", "artifacts", "docs");
mkdirSync(scratchRoot, { recursive: true });
const scratchDirs: string[] = [];

afterAll(() => {
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
});

describe("docs commands", () => {
  it("the docs have runnable command blocks", () => {
    expect(runnable.length).toBeGreaterThan(0);
  });

  it("every caplo command in the team's tool-author, site-owner and operator docs exists in the CLI", () => {
    const names = Object.keys(COMMANDS);
    const unknown: string[] = [];
    for (const block of blocks.filter((entry) => !OTHERS.has(entry.file.split("/").pop()!))) {
      for (const command of block.commands) {
        const args = caploArgs(command);
        if (!args || args[0]?.startsWith("-")) continue;
        const words = args.filter((arg) => !arg.startsWith("-"));
        const known = names.includes(words.slice(0, 2).join(" ")) || names.includes(words[0] ?? "");
        if (!known) unknown.push(`${block.file}:${block.line}: ${command}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  for (const block of runnable) {
    it(`${block.file}:${block.line} runs: ${block.commands.join(" && ")}`, () => {
      const scratch = mkdtempSync(join(scratchRoot, "run-"));
      scratchDirs.push(scratch);
      symlinkSync(join(ROOT, "examples"), join(scratch, "examples"));
      let cwd = scratch;
      for (const command of block.commands) {
        const cd = /^cd\s+(\S+)$/.exec(command);
        if (cd) {
          cwd = resolve(cwd, cd[1]!);
          continue;
        }
        const args = caploArgs(command);
        expect(args, `${command}: a runnable block holds only caplo commands and cd`).toBeDefined();
        const run = spawnSync(process.execPath, [CLI, ...args!], { cwd, encoding: "utf8", timeout: 90_000, env: { ...process.env, NO_COLOR: "1" } });
        expect(run.status, `${command}\n${run.stdout}\n${run.stderr}`).toBe(0);
        expect(`${run.stdout}${run.stderr}`.length, `${command} printed nothing`).toBeGreaterThan(0);
      }
    }, 240_000);
  }
});
