// `caplo serve` with its own sandboxed runner keeps a real customer's tool call in the invocation log
// beside its SQLite file: a visitor asks over the WebSocket, the scripted model calls the fixtured
// package's lookup (which logs a line and reads a secret), and `caplo tool logs --db` then finds the call
// by the conversation the widget was given, with its log line and without the secret's value.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { WebSocket } from "ws";
import { parseAgentConfig } from "@caplo/shared";
import { createRelease } from "../../server/src/agents/release.ts";
import { FileReleaseStore } from "../../server/src/agents/releaseStore.ts";
import { buildPackage } from "../../server/src/build/index.ts";
import { parseServeArgs, startServe } from "../../server/src/cli/serve.ts";
import { run as toolLogs } from "../../server/src/cli/tool-logs.ts";
import { PACKAGES_DIR } from "./testPackages.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-serve-invlog-"));
const SECRET = "demo-secret-5d4c3b2a1f";
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function capture(run: () => Promise<number>): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
  const error = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void lines.push(args.join(" ")));
  try {
    return { code: await run(), out: lines.join("\n") };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

describe("caplo serve's invocation log", () => {
  it("refuses a bad CAPLO_INVOCATION_LOG_MAX_MB with its code", async () => {
    const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name: "empty", instructions: "Be brief.", origins: ["https://site.example"], channels: { web: {} } });
    if (!config.ok) throw new Error(JSON.stringify(config.issues));
    const release = createRelease(config.agent, [], new Date());
    if (!release.ok) throw new Error(JSON.stringify(release.issues));
    await new FileReleaseStore(join(dir, "releases")).put(release.release);
    const parsed = parseServeArgs(["--port", "0", "--agent", "empty", "--db", join(dir, "bad", "caplo.db"), "--releases", join(dir, "releases")], { CAPLO_INVOCATION_LOG_MAX_MB: "0" });
    if (!parsed.ok) throw new Error(parsed.error.message);
    expect(await startServe(parsed.options, () => undefined)).toMatchObject({ ok: false, error: { code: "setting_invalid", path: "CAPLO_INVOCATION_LOG_MAX_MB" } });
  });

  it("keeps a served call's record and log lines beside the SQLite file, found by the conversation's id", async () => {
    const built = await buildPackage(join(PACKAGES_DIR, "fixtured"));
    if (!built.ok) throw new Error(JSON.stringify(built.errors));
    const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name: "looker", instructions: "Look things up.", origins: ["https://site.example"], channels: { web: {} }, tools: ["fixtured/lookup"] });
    if (!config.ok) throw new Error(JSON.stringify(config.issues));
    const release = createRelease(config.agent, [built.version], new Date());
    if (!release.ok) throw new Error(JSON.stringify(release.issues));
    await new FileReleaseStore(join(dir, "releases")).put(release.release);
    const script = join(dir, "script.json");
    writeFileSync(script, JSON.stringify([{ when: { regex: "(IT-\\d{3})" }, replies: [{ toolCalls: [{ name: "fixtured__lookup", args: { id: "$1" } }] }, { text: "Found it." }] }]));
    const db = join(dir, "data", "caplo.db");
    const parsed = parseServeArgs(["--port", "0", "--agent", "looker", "--db", db, "--releases", join(dir, "releases"), "--script", script], { CAPLO_SECRET_DEMO_KEY: SECRET });
    if (!parsed.ok) throw new Error(parsed.error.message);
    const lines: string[] = [];
    const started = await startServe(parsed.options, (line) => lines.push(line));
    if (!started.ok) throw new Error(started.error.message);
    let conversationId = "";
    try {
      const file = join(dir, "data", "invocations.jsonl");
      expect(lines).toContain(`invocation logs: ${file} (at most 64 MiB)`);
      const ws = new WebSocket(`${started.server.url.replace("http", "ws")}/v1/ws`, { origin: "https://site.example" });
      await new Promise<void>((resolve, reject) => {
        ws.on("error", reject);
        ws.on("open", () => ws.send(JSON.stringify({ t: "hello", v: 1, agent: "looker", capabilities: {} })));
        ws.on("message", (data) => {
          const frame = JSON.parse(String(data)) as { t: string; conversationId?: string; message?: { type: string; from?: string; text?: string } };
          if (frame.t === "welcome") {
            conversationId = frame.conversationId!;
            ws.send(JSON.stringify({ t: "in", ref: "1", event: { type: "message", text: "Look up IT-007 please" } }));
          }
          if (frame.t === "event" && frame.message?.type === "text" && frame.message.text === "Found it.") resolve();
        });
      });
      ws.close();
      const text = readFileSync(file, "utf8");
      expect(text).not.toContain(SECRET);
      const list = await capture(() => toolLogs(["--db", db, "--conversation", conversationId]));
      expect(list.code).toBe(0);
      const id = new RegExp(`(inv_\\S+)  lookup \\(call\\) ok \\d+ ms  1 log line  conversation ${conversationId}`).exec(list.out)?.[1];
      expect(id, list.out).toBeDefined();
      const one = await capture(() => toolLogs([id!, "--db", db]));
      expect(one.out).toContain('info  looked up {"id":"IT-007"}');
      expect(one.out).not.toContain(SECRET);
    } finally {
      await started.server.close();
    }
  }, 120_000);
});
