// bench/gateway: many concurrent WebSocket conversations through read-tool turns (scripted model, SQLite
// file store, the shop's real MCP server in-process), then many idle connections. Prints turns per
// second, p50/p99 turn latency, the server's CPU per turn (and this load generator's, which runs in this
// process, apart from the server's), the machine's load average, and memory per idle connection.
//
//   node --import tsx bench/gateway/run.ts [--conversations 200] [--turns 10] [--idle 10000]
//   BENCH_PROF=/tmp/prof node --import tsx bench/gateway/run.ts --idle 0   # + a CPU profile of the server
//
// A turn is timed from sending the customer's message to receiving the agent's reply event. Each turn
// stores 5 events and 4 transcript entries in 4 transactions (customer message; model reply + progress
// start; progress end + result + tool entry; final reply), asks the model twice and runs get_order once.
// The measured window includes each conversation's connect and hello. On a 2-core machine shared with
// other work, read the load average: the server is one process on one core, and every other busy
// process takes from it.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import WebSocket from "ws";

const ORIGIN = "https://shop.example";
const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
};
const conversations = arg("conversations", 200);
const turnsEach = arg("turns", 10);
const idle = arg("idle", 10_000);
const deadline = Date.now() + 5 * 60_000; // the whole benchmark stops by itself within 5 minutes

const dir = mkdtempSync(join(tmpdir(), "caplo-bench-"));
const server = spawn(process.execPath, ["--expose-gc", "--import", "tsx", join(import.meta.dirname, "server.ts"), dir], { stdio: ["ignore", "pipe", "inherit", "ipc"] });
const port = await new Promise<number>((resolve, reject) => {
  createInterface({ input: server.stdout! }).once("line", (line) => resolve(Number((JSON.parse(line) as { port: string }).port)));
  server.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
});
const url = `ws://127.0.0.1:${port}/v1/ws`;

type Memory = { cpuMs: number; rss: number; heapUsed: number; external: number; arrayBuffers: number; connections: number };
/** Ask the server process something on its IPC channel; resolves with its next message. */
const ask = <T>(request: string) =>
  new Promise<T>((resolve) => {
    server.once("message", (message) => resolve(message as T));
    server.send(request);
  });
const memory = () => ask<Memory>("mem");

/** Open a connection and say hello; resolves on welcome. */
function connect(): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { origin: ORIGIN, perMessageDeflate: false });
    ws.once("error", reject);
    ws.once("open", () => ws.send(JSON.stringify({ t: "hello", v: 1, agent: "shop-agent", capabilities: {} })));
    const onWelcome = (data: WebSocket.RawData) => {
      if ((JSON.parse(String(data)) as { t: string }).t === "welcome") {
        ws.off("message", onWelcome);
        resolve(ws);
      }
    };
    ws.on("message", onWelcome);
  });
}

async function conversation(latencies: number[]): Promise<void> {
  const ws = await connect();
  for (let turn = 0; turn < turnsEach && Date.now() < deadline; turn++) {
    const started = performance.now();
    await new Promise<void>((resolve) => {
      const onMessage = (data: WebSocket.RawData) => {
        const frame = JSON.parse(String(data)) as { t: string; message?: { type: string; from?: string } };
        if (frame.t === "event" && frame.message?.type === "text" && frame.message.from === "agent") {
          ws.off("message", onMessage);
          resolve();
        }
      };
      ws.on("message", onMessage);
      ws.send(JSON.stringify({ t: "in", ref: `r${turn}`, event: { type: "message", text: `where is order SO-${String(1000 + turn).padStart(4, "0")}` } }));
    });
    latencies.push(performance.now() - started);
  }
  ws.close();
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

try {
  // Warm up (module loading, SQLite statement cache, JIT).
  await conversation([]);
  const latencies: number[] = [];
  // With BENCH_PROF=DIR the server writes a CPU profile of the measured turns only (open it in Chrome DevTools).
  if (process.env.BENCH_PROF) await ask("prof-start");
  const cpuBefore = await memory();
  const clientCpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: conversations }, () => conversation(latencies)));
  const seconds = (performance.now() - started) / 1000;
  const clientCpu = process.cpuUsage(clientCpuBefore);
  const cpuAfter = await memory();
  if (process.env.BENCH_PROF) console.log(`server CPU profile: ${(await ask<{ profile: string }>("prof-stop")).profile}`);
  latencies.sort((a, b) => a - b);
  console.log(`turns: ${latencies.length} in ${seconds.toFixed(2)} s over ${conversations} concurrent conversations`);
  console.log(`turns/s: ${(latencies.length / seconds).toFixed(0)}`);
  const cpuPerTurn = (cpuAfter.cpuMs - cpuBefore.cpuMs) / latencies.length;
  console.log(`server CPU per turn: ${cpuPerTurn.toFixed(2)} ms (one core's capacity: ${(1000 / cpuPerTurn).toFixed(0)} turns/s); machine load average ${(await import("node:os")).loadavg()[0]!.toFixed(1)} on ${(await import("node:os")).cpus().length} cores`);
  console.log(`load generator (this process) CPU per turn: ${((clientCpu.user + clientCpu.system) / 1000 / latencies.length).toFixed(2)} ms`);
  console.log(`turn latency: p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(1)} ms`);

  if (idle > 0) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = await memory();
    const sockets: WebSocket[] = [];
    for (let opened = 0; opened < idle && Date.now() < deadline; opened += 500) {
      const batch = await Promise.all(Array.from({ length: Math.min(500, idle - opened) }, () => connect()));
      sockets.push(...batch);
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = await memory();
    const added = after.connections - before.connections;
    const perConnection = (after.rss - before.rss) / added;
    console.log(`idle connections: ${added} (each with a conversation), server RSS ${(before.rss / 1048576).toFixed(0)} → ${(after.rss / 1048576).toFixed(0)} MiB`);
    console.log(`memory per idle connection: ${(perConnection / 1024).toFixed(1)} KiB RSS, ${((after.heapUsed - before.heapUsed) / added / 1024).toFixed(1)} KiB JS heap`);
    console.log(`projected for 10,000 idle connections: ${((perConnection * 10_000) / 1048576).toFixed(0)} MiB above the base`);
    for (const socket of sockets) socket.terminate();
  }
} finally {
  server.kill("SIGTERM");
  await new Promise((resolve) => server.once("exit", resolve));
  rmSync(dir, { recursive: true, force: true });
}
