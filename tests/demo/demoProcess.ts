// Starts `caplo demo` exactly as `npm start` does (node bin/caplo.mjs demo), as a child process on a free
// port with a temporary data folder, in a process group of its own, and stops it as Ctrl-C in a terminal
// does: SIGINT to the whole group (the demo and every process it started receive it at once).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The environment without a model key, so the offline demo model answers. */
export function offlineEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ["OPENAI_API_KEY", "OPENAI_BASE_URL", "CAPLO_MODEL", "CAPLO_PORT", "CAPLO_REDIS_URL", "CAPLO_DATABASE_URL"]) delete env[name];
  return { ...env, ...extra };
}

export type DemoProcess = { child: ChildProcess; output: () => string; exited: Promise<number | null>; dataDir: string; stop: () => Promise<number | null> };

export function spawnDemo(args: string[], dataDir = mkdtempSync(join(tmpdir(), "caplo-demo-")), env: Record<string, string> = {}): DemoProcess {
  // The gateway's fixed default port (4200) would clash between demos started at once: a free one unless asked.
  const gateway = args.some((arg) => arg.startsWith("--gateway-port")) ? [] : ["--gateway-port", "0"];
  const child = spawn(process.execPath, [join(ROOT, "bin/caplo.mjs"), "demo", "--data-dir", dataDir, ...gateway, ...args], { cwd: ROOT, env: offlineEnv(env), stdio: ["ignore", "pipe", "pipe"], detached: true });
  let text = "";
  child.stdout!.on("data", (chunk: Buffer) => (text += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (text += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    dataDir,
    output: () => text,
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid!, "SIGINT");
        } catch {
          child.kill("SIGINT"); // the group is already gone
        }
      }
      const code = await exited;
      rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}

/** Resolves with the printed URL once the demo says it is running; rejects if it exits first. */
export function waitForUrl(demo: DemoProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const match = /Open:\s+(http:\/\/\S+)/.exec(demo.output());
      if (match) {
        demo.child.stdout!.off("data", check);
        resolve(match[1]!);
      }
    };
    demo.child.stdout!.on("data", check);
    void demo.exited.then((code) => reject(new Error(`caplo demo exited with ${code} before printing its URL:\n${demo.output()}`)));
    check();
  });
}
