// The shop API's command line as a terminal runs it: Ctrl-C signals the whole process group, and a wrapper
// (tsx, npx) relays the signal to the server again, so the server sees SIGINT more than once while it closes.
// The program runs under tsx's loader in one process, so what is checked is the program's own handling (the
// tsx command adds its own timer: it kills a program that has not answered its relay within 60 ms).
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { expect, it } from "vitest";

const HERE = dirname(fileURLToPath(import.meta.url));
const TSX_LOADER = pathToFileURL(join(HERE, "..", "..", "..", "node_modules", "tsx", "dist", "loader.mjs")).href;

it("Ctrl-C sent to the process group again and again while it closes (a terminal and tsx both send it) stops the server cleanly (exit 0)", async () => {
  const child = spawn(process.execPath, ["--import", TSX_LOADER, join(HERE, "main.ts"), "--port", "0"], { stdio: ["ignore", "pipe", "pipe"], detached: true });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  await expect.poll(() => output, { timeout: 30_000, interval: 50 }).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
  const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)![1]!;
  expect((await fetch(`${url}/api/products`, { headers: { authorization: "Bearer demo-shop-key" } })).status).toBeLessThan(500);
  // Signals of one kind do not queue: Ctrl-C again and again until the server is gone reaches it while it closes.
  const press = () => {
    try {
      process.kill(-child.pid!, "SIGINT");
    } catch {
      // The group is gone.
    }
  };
  press();
  const again = setInterval(press, 2);
  const code = await exited.finally(() => clearInterval(again));
  expect(code, output).toBe(0);
}, 60_000);
