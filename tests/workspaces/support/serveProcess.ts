// A real `caplo serve` process (bin/caplo.mjs) for the workspace tests: started with the flags and variables
// a test gives, its output kept line by line; resolved when it says where it listens, or when it exits.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";

export const ROOT = join(import.meta.dirname, "..", "..", "..");

export type ServeProcess = {
  child: ChildProcess;
  /** Every line it wrote, stdout and stderr together. */
  lines: string[];
  /** Where it listens (`caplo serve: http://...`), or undefined when it exited first. */
  url: string | undefined;
  /** Its exit code once it ended (undefined while it runs). */
  exitCode: () => number | null;
  stop: () => Promise<number | null>;
};

/** Starts `caplo serve ARGS` with only PATH, HOME and `env`; resolves once it listens or has exited. */
export async function startServeProcess(args: string[], env: Record<string, string>): Promise<ServeProcess> {
  const child = spawn(process.execPath, [join(ROOT, "bin", "caplo.mjs"), "serve", "--port", "0", "--host", "127.0.0.1", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = await new Promise<string | undefined>((resolve) => {
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on("line", (line) => {
        lines.push(line);
        const match = /^caplo serve: (http:\/\/\S+)/.exec(line);
        if (match) resolve(match[1]);
      });
    }
    // Its last lines are read before the exit is taken as final.
    void exited.then(() => setTimeout(() => resolve(undefined), 50));
  });
  return {
    child,
    lines,
    url,
    exitCode: () => child.exitCode,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}
