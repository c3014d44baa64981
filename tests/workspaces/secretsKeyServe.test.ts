// A full `caplo serve` process refuses to start on a store holding workspace secrets it cannot open: without a
// key it exits 1 with secrets_key_missing, with another key with secrets_key_wrong, before it listens anywhere;
// with the key they were sealed with it starts. On SQLite and on PostgreSQL (a database of the test's own).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAgentConfig } from "@caplo/shared";
import { createRelease } from "../../server/src/agents/release.ts";
import { FileReleaseStore } from "../../server/src/agents/releaseStore.ts";
import { run as secret } from "../../server/src/cli/secret.ts";
import { parseServeArgs, startServe } from "../../server/src/cli/serve.ts";
import { createTestDatabase, type TestDatabase } from "../support/testDatabase.ts";
import { startServeProcess } from "./support/serveProcess.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-secrets-key-serve-"));
const releasesDir = join(dir, "releases");
const sealingKey = randomBytes(32).toString("base64");
const keyFile = (name: string, key: string) => {
  const path = join(dir, name);
  writeFileSync(path, `${key}\n`, { mode: 0o600 });
  return path;
};
let database: TestDatabase | undefined;

beforeAll(async () => {
  const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name: "keyed", instructions: "Be brief.", origins: ["https://site.example"], channels: { web: {} } });
  if (!config.ok) throw new Error(JSON.stringify(config.issues));
  const release = createRelease(config.agent, [], new Date());
  if (!release.ok) throw new Error(JSON.stringify(release.issues));
  await new FileReleaseStore(releasesDir).put(release.release);
  database = await createTestDatabase("caplo_key_serve");
}, 60_000);
afterAll(async () => {
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe("caplo serve on a store holding workspace secrets", () => {
  const stores = ["sqlite", "postgres"] as const;
  const db = (kind: (typeof stores)[number]) => (kind === "sqlite" ? join(dir, "sqlite", "caplo.db") : database!.url);

  it("a real serve process stops with secrets_key_missing without a key and secrets_key_wrong with another, before listening (SQLite and PostgreSQL)", async () => {
    for (const kind of stores) {
      const out: string[] = [];
      const io = { out: (line: string) => void out.push(line), err: (line: string) => void out.push(line), stdin: async () => "sk_live_value\n" };
      expect(await secret(["set", "SHOP_API_KEY", "--workspace", "acme", "--db", db(kind), "--by", "cli:test"], { CAPLO_SECRETS_KEY: sealingKey }, io), out.join("\n")).toBe(0);
    }
    const serve = (kind: (typeof stores)[number], env: Record<string, string>) => startServeProcess(["--agent", "keyed", "--db", db(kind), "--releases", releasesDir], env);
    // The four processes start together (each pays the CLI's start-up once, side by side).
    const started = await Promise.all(stores.flatMap((kind) => [serve(kind, {}), serve(kind, { CAPLO_SECRETS_KEY_FILE: keyFile(`wrong-${kind}.key`, randomBytes(32).toString("base64")) })]));
    for (const [index, refused] of started.entries()) {
      const output = refused.lines.join("\n");
      expect(refused.url, output).toBeUndefined();
      expect(refused.exitCode(), output).toBe(1);
      expect(output).toMatch(
        index % 2 === 0
          ? /^caplo serve: secrets_key_missing at CAPLO_SECRETS_KEY_FILE: the store holds 1 workspace secret\(s\) sealed with a key, and no key is configured/m
          : /^caplo serve: secrets_key_wrong at acme\/SHOP_API_KEY: secret acme\/SHOP_API_KEY was sealed with key k[0-9a-f]{16}, which is not among the configured keys/m,
      );
      expect(output).not.toContain(sealingKey);
    }
  }, 180_000);

  it.each(stores)("with the key the secrets were sealed with, the server starts (%s)", async (kind) => {
    const parsed = parseServeArgs(["--port", "0", "--agent", "keyed", "--db", db(kind), "--releases", releasesDir], { CAPLO_SECRETS_KEY_FILE: keyFile(`right-${kind}.key`, sealingKey) });
    if (!parsed.ok) throw new Error(parsed.error.message);
    const lines: string[] = [];
    const started = await startServe(parsed.options, (line) => lines.push(line));
    if (!started.ok) throw new Error(`${started.error.code}: ${started.error.message}`);
    try {
      expect(lines.join("\n")).toMatch(/workspace secrets: 1 stored, sealed with key k[0-9a-f]{16}/);
      expect((await fetch(`${started.server.url}/readyz`)).status).toBe(200);
    } finally {
      await started.server.close();
    }
  }, 60_000);
});
