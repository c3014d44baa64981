// `caplo tool dev DIR [--no-inspector]`: runs the package's src/stdio.ts on Node 24 for local MCP
// clients (secrets from same-named environment variables, as serveStdio reads them). MCP Inspector is
// never a dependency of Caplo: when it is installed (in the package or this repository) it is opened on
// the server; otherwise the exact command to attach it with npx is printed, and the server starts alone.
import { readConfig } from "../config/index.ts";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { findNode24 } from "../runner/index.ts";
import { REPO_ROOT } from "../runner/node24.ts";
import { insidePackage } from "../runner/packagePath.ts";

export const help = `Usage: caplo tool dev DIR [--no-inspector]

Starts DIR/src/stdio.ts with Node 24 over standard input and output (outside Caplo's sandbox: run only
your own package this way), the same code that MCP Inspector,
Claude Desktop or any local MCP client can run. Secrets come from environment variables of the same
name (local development only; on Caplo they never come from the environment).

  --no-inspector  only serve on this terminal's stdio, and print nothing about MCP Inspector

MCP Inspector (@modelcontextprotocol/inspector) is not installed with Caplo. If the package or this
repository has it, caplo tool dev opens it on the server. Otherwise it prints the command that runs it
through npx (downloaded on first use), e.g.:
  npx @modelcontextprotocol/inspector <node24> DIR/src/stdio.ts`;

const INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector";
const INSPECTOR_CLI = `${INSPECTOR_PACKAGE}/cli/build/cli.js`;

/** Quotes a shell word only when it needs it. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/** The command that attaches MCP Inspector to this package's server, for a terminal. */
export function inspectorCommand(node: string, stdio: string): string {
  return ["npx", INSPECTOR_PACKAGE, node, stdio].map(shellWord).join(" ");
}

/** An installed MCP Inspector CLI: the package's own, else this repository's. */
function findInspector(dir: string): string | undefined {
  for (const from of [join(dir, "package.json"), join(REPO_ROOT, "package.json")]) {
    try {
      return createRequire(from).resolve(INSPECTOR_CLI);
    } catch {
      // not installed there
    }
  }
  return undefined;
}

export async function run(args: string[]): Promise<number> {
  const unknown = args.filter((arg) => arg.startsWith("-") && arg !== "--no-inspector");
  if (unknown.length > 0) {
    console.error(`unknown_option: ${unknown.join(" ")}\n\n${help}`);
    return 2;
  }
  const positional = args.filter((arg) => !arg.startsWith("-"));
  if (positional.length !== 1) {
    console.error(help);
    return 2;
  }
  const dir = resolve(positional[0]!);
  const stdio = join(dir, "src", "stdio.ts");
  // caplo tool dev runs the author's own package outside any sandbox (see docs/runner.md): at least the
  // file it runs is the package's own, not a link out of it.
  const inside = insidePackage(dir, stdio);
  if (!inside.ok) {
    console.error(`${inside.error.code}: ${inside.error.message}`);
    return 2;
  }
  if (!existsSync(stdio)) {
    console.error(`stdio_missing: ${stdio} does not exist (caplo tool init writes it; it calls serveStdio)`);
    return 2;
  }
  // CAPLO_NODE24 from the configuration, read once here and passed down.
  const read = readConfig(process.env);
  if (!read.ok) {
    for (const error of read.errors) console.error(`${error.code}: ${error.path}: ${error.message}`);
    return 2;
  }
  const node = findNode24(read.config.CAPLO_NODE24);
  if (!node.ok) {
    console.error(`${node.code}: ${node.message}`);
    return 2;
  }
  let command = node.path;
  let commandArgs = ["--disable-warning=ExperimentalWarning", stdio];
  if (!args.includes("--no-inspector")) {
    const inspector = findInspector(dir);
    if (inspector) {
      console.error(`caplo tool dev: opening MCP Inspector (${inspector}) on ${stdio}`);
      command = process.execPath;
      commandArgs = [inspector, node.path, stdio];
    } else {
      // stdout carries MCP frames: the note goes to stderr.
      console.error(
        [
          `caplo tool dev: serving ${stdio} on this terminal's stdin/stdout (Node 24).`,
          `MCP Inspector is not installed here (Caplo does not install it). To inspect this package, run in another terminal:`,
          `  ${inspectorCommand(node.path, stdio)}`,
          `(secrets: put -e NAME=value after "inspector" for each one the package declares; --no-inspector hides this note)`,
        ].join("\n"),
      );
    }
  }
  const child = spawn(command, commandArgs, { cwd: dir, stdio: "inherit", env: process.env });
  const stop = (signal: NodeJS.Signals) => child.kill(signal);
  // Kept until the child exits: a second Ctrl-C (the terminal's group and a wrapper both relay it) goes to the
  // child again instead of ending this process before the child has.
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  return new Promise((resolveExit) => {
    child.once("exit", (code, signal) => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolveExit(signal ? 130 : (code ?? 1));
    });
    child.once("error", (error) => {
      console.error(`could not start ${command === node.path ? "Node 24" : "MCP Inspector"}: ${error.message}`);
      resolveExit(2);
    });
  });
}
