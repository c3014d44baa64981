// `caplo tool dev DIR [--no-inspector]`: runs the package's src/stdio.ts on Node 24 for local MCP
// clients (secrets from same-named environment variables, as serveStdio reads them).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { findNode24 } from "../runner/index.ts";

export const help = `Usage: caplo tool dev DIR [--no-inspector]

Starts DIR/src/stdio.ts with Node 24 over standard input and output, the same code that MCP Inspector,
Claude Desktop or any local MCP client can run. Secrets come from environment variables of the same
name (local development only; on Caplo they never come from the environment).

  --no-inspector  only start the server on this terminal's stdio
                  (otherwise MCP Inspector is opened on it when @modelcontextprotocol/inspector is installed)`;

export async function run(args: string[]): Promise<number> {
  const positional = args.filter((arg) => !arg.startsWith("--"));
  if (positional.length !== 1) {
    console.error(help);
    return 2;
  }
  const dir = resolve(positional[0]!);
  const stdio = join(dir, "src", "stdio.ts");
  if (!existsSync(stdio)) {
    console.error(`stdio_missing: ${stdio} does not exist (caplo tool init writes it; it calls serveStdio)`);
    return 2;
  }
  const node = findNode24();
  if (!node.ok) {
    console.error(`${node.code}: ${node.message}`);
    return 2;
  }
  let command = node.path;
  let commandArgs = [stdio];
  if (!args.includes("--no-inspector")) {
    let inspector: string | undefined;
    try {
      inspector = createRequire(join(dir, "package.json")).resolve("@modelcontextprotocol/inspector/cli/build/cli.js");
    } catch {
      inspector = undefined;
    }
    if (inspector) {
      command = process.execPath;
      commandArgs = [inspector, node.path, stdio];
    } else {
      console.error("MCP Inspector (@modelcontextprotocol/inspector) is not installed here; starting the server alone. Use --no-inspector to skip this note.");
    }
  }
  const child = spawn(command, commandArgs, { cwd: dir, stdio: "inherit", env: process.env });
  const stop = (signal: NodeJS.Signals) => child.kill(signal);
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return new Promise((resolveExit) => {
    child.once("exit", (code, signal) => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolveExit(signal ? 130 : (code ?? 1));
    });
    child.once("error", (error) => {
      console.error(`could not start Node 24: ${error.message}`);
      resolveExit(2);
    });
  });
}
