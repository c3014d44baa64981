// `caplo secret` as an operator runs it: the value from standard input or a file, never the command line,
// listed without values, removed, the key rotated; every refusal coded.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../store/sqliteStore.ts";
import { run } from "./secret.ts";

describe("caplo secret", () => {
  const dir = mkdtempSync(join(tmpdir(), "caplo-secret-cli-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, "caplo.db");
  const keyFile = join(dir, "secrets.key");
  writeFileSync(keyFile, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600 });
  const env = { CAPLO_DB: db, CAPLO_SECRETS_KEY_FILE: keyFile };
  const cli = async (args: string[], stdin = "", environment: Record<string, string> = env) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await run(args, environment, { out: (line) => out.push(line), err: (line) => err.push(line), stdin: async () => stdin });
    return { code, out: out.join("\n"), err: err.join("\n") };
  };

  it("sets from standard input or --file, lists names and versions only, removes", async () => {
    expect(await cli(["set", "SHOP_API_KEY", "--workspace", "acme", "--by", "ana"], "sk_live_stdin\n")).toMatchObject({ code: 0, out: expect.stringContaining("version 1") });
    const file = join(dir, "value.txt");
    writeFileSync(file, "sk_live_file");
    expect((await cli(["set", "SHOP_API_KEY", "--workspace", "acme", "--file", file])).code).toBe(0);
    const listed = await cli(["list", "--workspace", "acme"]);
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(/SHOP_API_KEY\s+2\s+\d{4}-\d\d-\d\dT[\d:.]+Z\s+cli:/);
    expect(listed.out).not.toContain("sk_live");
    expect((await cli(["list"])).out).toBe("workspace default has no stored secrets");
    const store = new SqliteStore(db);
    try {
      expect((await store.listAudit("acme")).map((entry) => [entry.action, entry.actor.startsWith("cli:") || entry.actor === "ana"])).toEqual([["secret.set", true], ["secret.set", true]]);
    } finally {
      await store.close();
    }
    expect((await cli(["rm", "SHOP_API_KEY", "--workspace", "acme"])).code).toBe(0);
    expect(await cli(["rm", "SHOP_API_KEY", "--workspace", "acme"])).toMatchObject({ code: 1, err: expect.stringContaining("secret_not_found") });
  });

  it("refuses a value on the command line, a bad name, no key, and says so by code", async () => {
    const inArgv = await cli(["set", "SHOP_API_KEY", "sk_live_argv"]);
    expect(inArgv).toMatchObject({ code: 2, err: expect.stringContaining("secret_value_in_argv") });
    expect(inArgv.err).not.toContain("sk_live_argv");
    expect(await cli(["set", "1BAD"], "v")).toMatchObject({ code: 1, err: expect.stringContaining("secret_name_invalid") });
    expect(await cli(["set", "GOOD"], "v", { CAPLO_DB: db })).toMatchObject({ code: 1, err: expect.stringContaining("secrets_key_missing") });
    expect(await cli(["set", "GOOD"], "v", { CAPLO_DB: db, CAPLO_SECRETS_KEY: "short" })).toMatchObject({ code: 2, err: expect.stringContaining("secrets_key_invalid") });
    expect(await cli(["frobnicate"])).toMatchObject({ code: 2 });
  });

  it("rotate-key seals every value under the key file's first key; the old key alone is then wrong", async () => {
    expect((await cli(["set", "TOKEN"], "t0ken")).code).toBe(0);
    const old = (await import("node:fs")).readFileSync(keyFile, "utf8").trim();
    const fresh = randomBytes(32).toString("base64");
    writeFileSync(keyFile, `${fresh}\n${old}\n`);
    expect(await cli(["rotate-key"])).toMatchObject({ code: 0, out: expect.stringContaining("sealed again") });
    expect((await cli(["set", "OTHER"], "x", { CAPLO_DB: db, CAPLO_SECRETS_KEY: old })).err).toContain("secrets_key_wrong");
    expect((await cli(["set", "OTHER"], "x", { CAPLO_DB: db, CAPLO_SECRETS_KEY: fresh })).code).toBe(0);
  });
});
