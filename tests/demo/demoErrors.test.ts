// `caplo demo` fails with a clear message and exit code 1, never a stack trace, when its port is taken,
// its database file is not a database or an install step is missing; a wrong option exits 2; --help
// documents the options.
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { freePort, spawnDemo } from "./demoProcess.ts";

const held: Server[] = [];
afterAll(async () => {
  for (const server of held) await new Promise<void>((resolve) => server.close(() => resolve()));
});

const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at .+\(.+:\d+:\d+\)/);

describe("caplo demo's clear messages", () => {
  test("a port in use says which port and how to choose another, exit code 1", async () => {
    const port = await freePort();
    const server = createServer();
    held.push(server);
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", () => resolve()));
    const demo = spawnDemo(["--port", String(port)]);
    const code = await demo.exited;
    const output = demo.output();
    await demo.stop();
    expect(code).toBe(1);
    expect(output).toContain(`port ${port} (the demo page) is already in use`);
    expect(output).toContain("--port N");
    noStack(output);
  }, 60_000);

  test("a shop API port in use names --shop-port, before anything is built, exit code 1", async () => {
    const shopPort = await freePort();
    const server = createServer();
    held.push(server);
    await new Promise<void>((resolve) => server.listen(shopPort, "127.0.0.1", () => resolve()));
    const demo = spawnDemo(["--port", String(await freePort()), "--shop-port", String(shopPort)]);
    const code = await demo.exited;
    const output = demo.output();
    await demo.stop();
    expect(code).toBe(1);
    expect(output).toContain(`port ${shopPort} (the demo shop API) is already in use`);
    expect(output).toContain("--shop-port N");
    expect(output).not.toContain("tool package");
    noStack(output);
  }, 60_000);

  test("a gateway port in use names --gateway-port, before anything is built or any package started, exit code 1", async () => {
    const gatewayPort = await freePort();
    const server = createServer();
    held.push(server);
    await new Promise<void>((resolve) => server.listen(gatewayPort, "127.0.0.1", () => resolve()));
    const demo = spawnDemo(["--port", String(await freePort()), "--shop-port", "0", "--gateway-port", String(gatewayPort)]);
    const code = await demo.exited;
    const output = demo.output();
    await demo.stop();
    expect(code).toBe(1);
    expect(output).toContain(`port ${gatewayPort} (the demo gateway) is already in use`);
    expect(output).toContain("--gateway-port N");
    expect(output).not.toContain("tool package");
    noStack(output);
  }, 60_000);

  test("a corrupt database file says to move or delete it, exit code 1, and leaves the file as it was", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "caplo-demo-corrupt-"));
    const garbage = "this is not a SQLite database, just text that a crash or a bad copy left here\n".repeat(20);
    writeFileSync(join(dataDir, "caplo.db"), garbage);
    const demo = spawnDemo(["--port", String(await freePort())], dataDir);
    const code = await demo.exited;
    const output = demo.output();
    const { readFileSync } = await import("node:fs");
    expect(readFileSync(join(dataDir, "caplo.db"), "utf8")).toBe(garbage);
    await demo.stop();
    expect(code).toBe(1);
    expect(output).toContain("is not a readable SQLite file");
    expect(output).toContain("npm start");
    expect(output).toContain("[database_corrupt]");
    noStack(output);
  }, 60_000);

  test("a missing install step (no Node 24 for the tool packages) says to run npm install, exit code 1", async () => {
    // What a checkout looks like where `npm install` did not finish: runtime/node24 is not there.
    const demo = spawnDemo(["--port", String(await freePort()), "--shop-port", "0"], undefined, { CAPLO_NODE24: join(tmpdir(), "caplo-no-node24", "node") });
    const code = await demo.exited;
    const output = demo.output();
    await demo.stop();
    expect(code).toBe(1);
    expect(output).toMatch(/Node 24 (is not installed|not found)[^\n]*run npm (install|ci)/);
    expect(output).not.toContain("Open:");
    noStack(output);
  }, 120_000);

  test("an unknown option exits 2 and names it; --help lists every option", async () => {
    const wrong = spawnDemo(["--colour", "red"]);
    expect(await wrong.exited).toBe(2);
    expect(wrong.output()).toContain("unknown option --colour");
    await wrong.stop();
    const help = spawnDemo(["--help"]);
    expect(await help.exited).toBe(0);
    for (const option of ["--port", "--shop-port", "--data-dir", "--pending-ms", "--status-check-ms", "OPENAI_API_KEY", "CAPLO_PORT"]) expect(help.output()).toContain(option);
    await help.stop();
  }, 60_000);
});
