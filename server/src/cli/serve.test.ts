// `caplo serve`: options from flags and environment, and a real start serving a published release on a
// SQLite file, answering a WebSocket customer with the scripted model.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { parseAgentConfig } from "@caplo/shared";
import { createRelease } from "../agents/release.ts";
import { FileReleaseStore } from "../agents/releaseStore.ts";
import type { ToolRunner } from "../runner/api.ts";
import { loadScript } from "../model/scriptFile.ts";
import { SETTINGS } from "../config/index.ts";
import { help, parseServeArgs, startServe } from "./serve.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-serve-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("options", () => {
  it("flags win over the environment, which wins over defaults", () => {
    const parsed = parseServeArgs(["--port", "9000", "--agent", "shop", "--agent=help"], { CAPLO_PORT: "7000", CAPLO_HOST: "0.0.0.0", CAPLO_AGENTS: "ignored" });
    expect(parsed).toMatchObject({ ok: true, options: { port: 9000, host: "0.0.0.0", agents: ["shop", "help"], db: ".caplo/caplo.db", releasesDir: ".caplo/releases" } });
    expect(parseServeArgs([], { CAPLO_AGENTS: "a, b", CAPLO_DATABASE_URL: "postgres://x/y" })).toMatchObject({ ok: true, options: { agents: ["a", "b"], db: "postgres://x/y", port: 8080 } });
  });

  it("a bad option, a missing value, a port outside 0 to 65535 or no agent is a specific error", () => {
    expect(parseServeArgs(["--agent", "a", "--nope"], {})).toMatchObject({ ok: false, error: { code: "option_unknown", path: "--nope" } });
    expect(parseServeArgs(["--agent"], {})).toMatchObject({ ok: false, error: { code: "option_value_missing" } });
    expect(parseServeArgs(["--agent", "a", "--port", "65535"], {})).toMatchObject({ ok: true });
    expect(parseServeArgs(["--agent", "a", "--port", "65536"], {})).toMatchObject({ ok: false, error: { code: "port_invalid" } });
    expect(parseServeArgs([], {})).toMatchObject({ ok: false, error: { code: "agent_required" } });
    expect(parseServeArgs(["--agent", "a"], { CAPLO_STATUS_CHECK_BASE_MS: "99" })).toMatchObject({ ok: false, error: { code: "status_check_base_invalid" } });
  });

  it("--help documents every flag and environment variable", () => {
    for (const word of ["--port", "--host", "--db", "--releases", "--agent", "--script", "--widget-dir", "CAPLO_TEAM_MEMBERS", "CAPLO_NODE_ID", "CAPLO_DATABASE_URL", "CAPLO_SECRET_"]) {
      expect(help).toContain(word);
    }
  });

  it("--help lists every setting the configuration schema gives caplo serve, with its flag", () => {
    const names = SETTINGS.filter(({ meta }) => meta.commands.includes("serve"));
    expect(names.length).toBeGreaterThan(40);
    for (const { meta } of names) {
      expect(help, meta.name).toContain(`  ${meta.name} (`);
      if (meta.flag && !meta.flag.endsWith("(demo)")) expect(help, meta.flag).toContain(`  ${meta.flag} (`);
    }
    expect(help).not.toContain("`");
  });

  it("a script file that is not valid is refused with the path of the problem", async () => {
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify([{ when: "x", replies: [{ text: 3 }] }]));
    expect(await loadScript(file)).toMatchObject({ ok: false, error: { code: "script_invalid", path: "0.replies.0.text" } });
  });
});

describe("start", () => {
  it("serves the latest published release over the WebSocket with the scripted model and the SQLite store", async () => {
    const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name: "helper", instructions: "Be brief.", origins: ["https://site.example"], channels: { web: {} } });
    if (!config.ok) throw new Error(JSON.stringify(config.issues));
    const release = createRelease(config.agent, [], new Date("2026-01-01T00:00:00Z"));
    if (!release.ok) throw new Error(JSON.stringify(release.issues));
    await new FileReleaseStore(join(dir, "releases")).put(release.release);
    const script = join(dir, "script.json");
    writeFileSync(script, JSON.stringify([{ when: { regex: "^hi", flags: "i" }, replies: [{ text: "Hello from serve." }] }]));
    // No tools in this release: an empty runner is enough (the sandboxed runner is tested in server/src/runner).
    const runner: ToolRunner = { load: async () => undefined, call: async () => Promise.reject(new Error("no tools")), checkStatus: async () => ({ outcome: "unknown", reason: "no tools" }), close: async () => undefined };
    const parsed = parseServeArgs(["--port", "0", "--agent", "helper", "--db", join(dir, "caplo.db"), "--releases", join(dir, "releases"), "--script", script], {});
    if (!parsed.ok) throw new Error(parsed.error.message);
    const lines: string[] = [];
    const started = await startServe({ ...parsed.options, runner }, (line) => lines.push(line));
    if (!started.ok) throw new Error(started.error.message);
    try {
      expect(lines.some((line) => line.includes("store: sqlite") && line.includes(release.release.id))).toBe(true);
      expect((await fetch(`${started.server.url}/readyz`)).status).toBe(200);
      const ws = new WebSocket(`${started.server.url.replace("http", "ws")}/v1/ws`, { origin: "https://site.example" });
      const texts: string[] = [];
      await new Promise<void>((resolve, reject) => {
        ws.on("error", reject);
        ws.on("open", () => ws.send(JSON.stringify({ t: "hello", v: 1, agent: "helper", capabilities: {} })));
        ws.on("message", (data) => {
          const frame = JSON.parse(String(data)) as { t: string; message?: { type: string; from?: string; text?: string } };
          if (frame.t === "welcome") ws.send(JSON.stringify({ t: "in", ref: "1", event: { type: "message", text: "Hi there" } }));
          if (frame.t === "event" && frame.message?.type === "text") texts.push(`${frame.message.from}: ${frame.message.text}`);
          if (texts.length === 2) resolve();
        });
      });
      ws.close();
      expect(texts).toEqual(["customer: Hi there", "agent: Hello from serve."]);
    } finally {
      await started.server.close();
    }
  });

  it("mounts the messaging channels configured in the environment, and refuses a malformed channel setting", async () => {
    const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name: "chat", instructions: "Be brief.", origins: ["https://site.example"], channels: { web: {}, messenger: {} } });
    if (!config.ok) throw new Error(JSON.stringify(config.issues));
    const release = createRelease(config.agent, [], new Date("2026-01-01T00:00:00Z"));
    if (!release.ok) throw new Error(JSON.stringify(release.issues));
    await new FileReleaseStore(join(dir, "releases")).put(release.release);
    const runner: ToolRunner = { load: async () => undefined, call: async () => Promise.reject(new Error("no tools")), checkStatus: async () => ({ outcome: "unknown", reason: "no tools" }), close: async () => undefined };
    const env = {
      CAPLO_MESSENGER_PAGE_TOKEN: "EAAG-page-access-token-0123456789",
      CAPLO_META_APP_SECRET: "0123456789abcdef0123456789abcdef",
      CAPLO_META_VERIFY_TOKEN: "verify-token-0123456789",
    };
    const parsed = parseServeArgs(["--port", "0", "--agent", "chat", "--db", join(dir, "channels", "caplo.db"), "--releases", join(dir, "releases")], env);
    if (!parsed.ok) throw new Error(parsed.error.message);
    const lines: string[] = [];
    const started = await startServe({ ...parsed.options, runner }, (line) => lines.push(line));
    if (!started.ok) throw new Error(started.error.message);
    try {
      expect(lines.some((line) => line.startsWith("channels: messenger"))).toBe(true);
      const handshake = `${started.server.url}/webhooks/messenger?hub.mode=subscribe&hub.verify_token=${env.CAPLO_META_VERIFY_TOKEN}&hub.challenge=4242`;
      const answer = await fetch(handshake);
      expect([answer.status, await answer.text()]).toEqual([200, "4242"]);
      expect((await fetch(handshake.replace("verify-token", "wrong-token"))).status).toBe(403);
    } finally {
      await started.server.close();
    }
    const bad = parseServeArgs(["--port", "0", "--agent", "chat", "--db", join(dir, "bad.db"), "--releases", join(dir, "releases")], { ...env, CAPLO_META_APP_SECRET: "short" });
    if (!bad.ok) throw new Error(bad.error.message);
    expect(await startServe({ ...bad.options, runner }, () => undefined)).toMatchObject({ ok: false, error: { code: "channel_config_invalid", path: "CAPLO_META_APP_SECRET" } });
  });

  it("Ctrl-C while it starts (after the first line it prints) lets the start finish and stops it cleanly, exit 0", async () => {
    // Before, the handlers came only once the server listened: a Ctrl-C before then, or in the moment between
    // "listening" and the handlers, ended the process by the signal's default, with no close (exit by SIGINT).
    const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name: "quitter", instructions: "Be brief.", origins: ["https://site.example"], channels: { web: {} } });
    if (!config.ok) throw new Error(JSON.stringify(config.issues));
    const release = createRelease(config.agent, [], new Date("2026-01-01T00:00:00Z"));
    if (!release.ok) throw new Error(JSON.stringify(release.issues));
    await new FileReleaseStore(join(dir, "quit-releases")).put(release.release);
    const cli = join(import.meta.dirname, "..", "..", "..", "bin", "caplo.mjs");
    const child = spawn(process.execPath, [cli, "serve", "--port", "0", "--agent", "quitter", "--db", join(dir, "quit.db"), "--releases", join(dir, "quit-releases")], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    let signalled = false;
    const exited = new Promise<[number | null, string | null]>((done) => child.once("exit", (code, signal) => done([code, signal])));
    const onOutput = (chunk: Buffer) => {
      output += chunk.toString();
      // The first line comes from inside the start (the sandbox's note), before anything listens.
      if (!signalled && output.includes("\n")) {
        signalled = true;
        child.kill("SIGINT");
      }
    };
    child.stdout.on("data", onOutput);
    child.stderr.on("data", onOutput);
    const [code, signal] = await exited;
    expect({ code, signal }, output).toEqual({ code: 0, signal: null });
    expect(signalled).toBe(true);
  }, 30_000);

  it("an agent without a published release is a clear error", async () => {
    const parsed = parseServeArgs(["--agent", "ghost", "--releases", join(dir, "none"), "--db", join(dir, "x.db")], {});
    if (!parsed.ok) throw new Error(parsed.error.message);
    expect(await startServe(parsed.options, () => undefined)).toMatchObject({ ok: false, error: { code: "release_not_found", path: "ghost" } });
  });
});
