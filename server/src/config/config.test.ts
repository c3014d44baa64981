import { describe, expect, it } from "vitest";
import { defaultConfig, envSecrets, parseSetting, readConfig, SETTINGS } from "./index.ts";

describe("the configuration", () => {
  it("reads every setting once: defaults when unset, typed values when set, empty as unset", () => {
    const config = defaultConfig();
    expect(config).toMatchObject({ CAPLO_HOST: "127.0.0.1", CAPLO_FILE_RETENTION_DAYS: 30, CAPLO_PROPOSAL_TTL_SECONDS: 3600, CAPLO_TRANSCRIPT_BUDGET_CHARS: 48_000, CAPLO_INVOCATION_LOG_MAX_MB: 64, CAPLO_SQLITE_SYNCHRONOUS: "normal", CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK: false });
    expect(config.CAPLO_PORT).toBeUndefined();
    const read = readConfig({ CAPLO_PORT: "9000", CAPLO_AGENTS: " shop , help ,", CAPLO_NODE_LEASE_MS: "", CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK: "1", CAPLO_SQLITE_SYNCHRONOUS: "full" });
    expect(read).toMatchObject({ ok: true, warnings: [], config: { CAPLO_PORT: 9000, CAPLO_AGENTS: ["shop", "help"], CAPLO_NODE_LEASE_MS: undefined, CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK: true, CAPLO_SQLITE_SYNCHRONOUS: "full" } });
  });

  it("refuses each bad value with setting_invalid (or the setting's own older code), its variable, the rule and an example", () => {
    const read = readConfig({ CAPLO_NODE_LEASE_MS: "999", CAPLO_SANDBOX: "weakk", CAPLO_FILE_RETENTION_DAYS: "0", CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK: "yes", CAPLO_TEAM_TOKEN: "shared" });
    expect(read.ok).toBe(false);
    if (read.ok) return;
    expect(read.errors).toEqual([
      { code: "team_token_replaced", path: "CAPLO_TEAM_TOKEN", message: expect.stringContaining("no longer accepted") },
      { code: "file_retention_invalid", path: "CAPLO_FILE_RETENTION_DAYS", message: "a whole number of days from 1 to 3650" },
      { code: "setting_invalid", path: "CAPLO_NODE_LEASE_MS", message: "CAPLO_NODE_LEASE_MS must be a whole number from 1000 to 600000, not '999' (for example CAPLO_NODE_LEASE_MS=15000)" },
      { code: "setting_invalid", path: "CAPLO_SANDBOX", message: "CAPLO_SANDBOX must be weak, not 'weakk' (for example CAPLO_SANDBOX=weak)" },
      { code: "setting_invalid", path: "CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK", message: expect.stringContaining("must be 1 or 0, not 'yes'") },
    ]);
  });

  it("checks whole numbers at their boundaries and refuses signs, points, exponents and spaces", () => {
    expect(parseSetting("CAPLO_BUS_POLL_MS", "50")).toEqual({ ok: true, value: 50 });
    expect(parseSetting("CAPLO_BUS_POLL_MS", "60000")).toEqual({ ok: true, value: 60_000 });
    for (const bad of ["49", "60001", "1.5", "-50", "1e3", " 50", "fifty"]) expect(parseSetting("CAPLO_BUS_POLL_MS", bad).ok, bad).toBe(false);
  });

  it("a flag's value is checked by its setting's schema and named by the flag", () => {
    expect(parseSetting("CAPLO_PORT", "70000", "--port")).toEqual({ ok: false, error: { code: "setting_invalid", path: "--port", message: "--port must be a whole number from 0 to 65535, not '70000' (for example --port 8080)" } });
  });

  it("warns of an unknown CAPLO_* variable, naming the setting a typo most likely meant; tests' and internal variables are not warned of", () => {
    const read = readConfig({ CAPLO_SANDBOXX: "weak", CAPLO_TRANSCRIPT_BUDGET: "9000", CAPLO_WHATEVER_ELSE_ENTIRELY: "1", CAPLO_TEST_SERVER_SECRET: "x", CAPLO_EGRESS_SOCKET: "/tmp/s", CAPLO_SECRET_SHOP_API_KEY: "k", CAPLO_HANDOFF_WEBHOOK_URL_VIP: "https://x.example", HOME: "/root" });
    expect(read.ok).toBe(true);
    expect(read.warnings).toEqual([
      { code: "setting_unknown", path: "CAPLO_SANDBOXX", message: expect.stringContaining("(did you mean CAPLO_SANDBOX?)") },
      { code: "setting_unknown", path: "CAPLO_TRANSCRIPT_BUDGET", message: expect.stringContaining("(did you mean CAPLO_TRANSCRIPT_BUDGET_CHARS?)") },
      { code: "setting_unknown", path: "CAPLO_WHATEVER_ELSE_ENTIRELY", message: expect.not.stringContaining("did you mean") },
    ]);
  });

  it("keeps the known variables' text as given for the modules that check several together, and families' members", () => {
    const read = readConfig({ CAPLO_TWILIO_ACCOUNT_SID: "", CAPLO_HANDOFF_WEBHOOK_URL_VIP: "https://x.example", CAPLO_SANDBOXX: "weak" });
    expect(read.ok && read.config.source).toEqual({ CAPLO_TWILIO_ACCOUNT_SID: "", CAPLO_HANDOFF_WEBHOOK_URL_VIP: "https://x.example" });
  });

  it("describes every setting once, with a rule, an example, a default, its commands and a sentence", () => {
    const names = SETTINGS.map((entry) => entry.meta.name);
    expect(new Set(names).size).toBe(names.length);
    for (const { meta } of SETTINGS) {
      expect(meta.name, meta.name).toMatch(/^(CAPLO|OPENAI)_[A-Z0-9_<>]+$/);
      for (const field of [meta.rule, meta.example, meta.default, meta.doc]) expect(field.length, meta.name).toBeGreaterThan(0);
      expect(meta.commands.length, meta.name).toBeGreaterThan(0);
    }
    // The example of every setting the schema checks is itself valid.
    for (const { key, meta } of SETTINGS) if (!meta.family && !meta.bareMessage) expect(parseSetting(key, meta.example).ok, meta.name).toBe(true);
  });

  it("reads a secret's value from CAPLO_SECRET_<NAME> when asked, so a changed value is used at once", () => {
    const env: Record<string, string | undefined> = { CAPLO_SECRET_SHOP_API_KEY: "one" };
    const secrets = envSecrets(env);
    expect(secrets.values(["SHOP_API_KEY", "MISSING"])).toEqual({ SHOP_API_KEY: "one" });
    env.CAPLO_SECRET_SHOP_API_KEY = "two";
    expect(secrets.get("SHOP_API_KEY")).toBe("two");
    expect(secrets.get("../X")).toBeUndefined();
  });
});
