import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AGENT_FILE_MAX_BYTES, loadAgentFile, parseAgentYaml } from "./agentFile.ts";

const valid = `apiVersion: v1
kind: Agent
name: shop-assistant
instructions: |
  You help customers of the shop.
tools:
  - orders/get_order
origins:
  - https://shop.example
channels:
  web: {}
`;

describe("reading agent.yaml", () => {
  it("reads a valid file", () => {
    expect(parseAgentYaml(valid)).toMatchObject({ ok: true, agent: { name: "shop-assistant", tools: ["orders/get_order"], instructions: "You help customers of the shop." } });
  });

  it("reports a YAML syntax error with its line and column", () => {
    const result = parseAgentYaml("apiVersion: v1\nkind: Agent\nname: [unclosed\n");
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.issues[0]).toMatchObject({ code: "yaml_invalid", path: "" });
      expect(result.issues[0]!.message).toMatch(/line \d+, column \d+/);
    }
  });

  it("refuses a key written twice", () => {
    const result = parseAgentYaml(`${valid}name: other\n`);
    expect(result.ok ? "ok" : result.issues[0]!.code).toBe("yaml_invalid");
  });

  it("reports schema errors at their path and line", () => {
    const result = parseAgentYaml(valid.replace("orders/get_order", "orders/get-order").replace("channels:", "colour: red\nchannels:"));
    expect(result.ok ? [] : result.issues).toEqual([
      { code: "pattern_mismatch", path: "tools[0]", message: "package/tool, for example orders/get_order", line: 7 },
      { code: "field_unknown", path: "colour", message: 'unknown field "colour": other fields are refused', line: 10 },
    ]);
  });

  it("reports a missing field at the line of the mapping that lacks it", () => {
    const result = parseAgentYaml(valid.replace("channels:\n  web: {}\n", "channels:\n  web:\n    handoff:\n      message: Hi\n"));
    expect(result.ok ? [] : result.issues.map(({ code, path, line }) => ({ code, path, line }))).toEqual([
      { code: "field_required", path: "channels.web.handoff.queue", line: 13 },
    ]);
  });

  it("refuses an empty file and a file that is not a mapping", () => {
    expect(parseAgentYaml("")).toMatchObject({ ok: false, issues: [{ code: "agent_empty" }] });
    expect(parseAgentYaml("- a\n- b\n")).toMatchObject({ ok: false, issues: [{ code: "type_invalid" }] });
  });

  it("refuses an ES256 public key that node:crypto cannot use as P-256", () => {
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey.export({ type: "spki", format: "pem" }).toString();
    const indented = p384.trim().split("\n").map((line) => `    ${line}`).join("\n");
    const result = parseAgentYaml(`${valid}identity:\n  algorithm: ES256\n  publicKey: |\n${indented}\n`);
    expect(result).toMatchObject({ ok: false, issues: [{ code: "identity_key_invalid", path: "identity.publicKey", line: 14 }] });
    const p256 = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ type: "spki", format: "pem" }).toString();
    const good = p256.trim().split("\n").map((line) => `    ${line}`).join("\n");
    expect(parseAgentYaml(`${valid}identity:\n  algorithm: ES256\n  publicKey: |\n${good}\n`).ok).toBe(true);
  });
});

describe("loading agent.yaml from disk", () => {
  it("reports a missing file and a file over 256 KiB with codes", async () => {
    const dir = await mkdtemp(join(tmpdir(), "caplo-agent-"));
    try {
      expect(await loadAgentFile(join(dir, "missing.yaml"))).toMatchObject({ ok: false, issues: [{ code: "agent_file_unreadable" }] });
      const big = join(dir, "big.yaml");
      await writeFile(big, `${valid}# ${"x".repeat(AGENT_FILE_MAX_BYTES)}\n`);
      expect(await loadAgentFile(big)).toMatchObject({ ok: false, issues: [{ code: "agent_file_too_large" }] });
      const file = join(dir, "agent.yaml");
      await writeFile(file, valid);
      expect((await loadAgentFile(file)).ok).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
