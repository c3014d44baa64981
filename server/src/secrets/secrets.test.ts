// Workspace secrets on both stores: sealed at rest (AES-256-GCM bound to workspace, name and version),
// listed without values, versioned, audited, read by another node's store at its next call, rotated to a
// new key in one transaction; a missing or wrong key is a coded refusal.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { describeEachStore } from "../store/testing/storeHarness.ts";
import { openSecret, readSecretKeys, sealSecret, type SecretKeyring } from "./secretBox.ts";
import { WorkspaceSecrets } from "./workspaceSecrets.ts";

const keyText = () => randomBytes(32).toString("base64");
function keyring(...texts: string[]): SecretKeyring {
  const read = readSecretKeys({ CAPLO_SECRETS_KEY: texts.join(",") });
  if (!read.ok || !read.keyring) throw new Error("no keyring");
  return read.keyring;
}

describe("secret keys and sealing", () => {
  it("a key is 32 bytes in base64 or hex, from the variable or a file (one per line, # comments); not both, not malformed", () => {
    const base64 = keyText();
    const hex = randomBytes(32).toString("hex");
    expect(readSecretKeys({})).toEqual({ ok: true, keyring: undefined });
    const file = readSecretKeys({ CAPLO_SECRETS_KEY_FILE: "/keys" }, () => `# current\n${base64}\n\n${hex}\n`);
    expect(file.ok && file.keyring?.keys.length).toBe(2);
    expect(file.ok && file.keyring?.current.key.equals(Buffer.from(base64, "base64"))).toBe(true);
    expect(readSecretKeys({ CAPLO_SECRETS_KEY: base64, CAPLO_SECRETS_KEY_FILE: "/keys" })).toMatchObject({ ok: false, error: { code: "secrets_key_ambiguous" } });
    for (const bad of ["short", randomBytes(16).toString("base64"), `${base64},${base64}`, ""]) {
      const read = readSecretKeys({ CAPLO_SECRETS_KEY: bad });
      expect(read).toMatchObject({ ok: false, error: { code: "secrets_key_invalid" } });
      if (!read.ok) expect(read.error.message).not.toContain(base64);
    }
    expect(readSecretKeys({ CAPLO_SECRETS_KEY_FILE: "/missing" }, () => { throw Object.assign(new Error("x"), { code: "ENOENT" }); })).toMatchObject({ ok: false, error: { code: "secrets_key_unreadable", path: "CAPLO_SECRETS_KEY_FILE" } });
  });

  it("a sealed value opens only in its own slot (workspace, name, version) and with its key", () => {
    const ring = keyring(keyText());
    const slot = { workspaceId: "acme", name: "SHOP_API_KEY", version: 3 };
    const sealed = sealSecret(ring, slot, "sk_live_acme");
    expect(Buffer.from(sealed.ciphertext).toString("utf8")).not.toContain("sk_live_acme");
    expect(openSecret(ring, slot, sealed)).toEqual({ ok: true, value: "sk_live_acme" });
    for (const moved of [{ ...slot, workspaceId: "globex" }, { ...slot, name: "OTHER" }, { ...slot, version: 2 }]) {
      expect(openSecret(ring, moved, sealed)).toMatchObject({ ok: false, error: { code: "secret_corrupt" } });
    }
    expect(openSecret(keyring(keyText()), slot, sealed)).toMatchObject({ ok: false, error: { code: "secrets_key_wrong" } });
    const flipped = Buffer.from(sealed.ciphertext);
    flipped[0]! ^= 1;
    expect(openSecret(ring, slot, { ...sealed, ciphertext: flipped })).toMatchObject({ ok: false, error: { code: "secret_corrupt" } });
  });
});

describeEachStore("workspace secrets", ({ store: node1, second: node2, sql }) => {
  const key = keyText();

  it("set, list, read on another node at its next call, remove; versions count on; every change audited without its value", async () => {
    const ops = new WorkspaceSecrets({ store: node1, keyring: keyring(key) });
    const other = new WorkspaceSecrets({ store: node2, keyring: keyring(key) });
    expect(await ops.set("acme", "SHOP_API_KEY", "sk_live_one", "cli:ana@host")).toMatchObject({ ok: true, value: { version: 1, updatedBy: "cli:ana@host" } });
    expect(await other.values("acme", ["SHOP_API_KEY", "UNSET"])).toEqual({ SHOP_API_KEY: "sk_live_one" });
    expect(await ops.set("acme", "SHOP_API_KEY", "sk_live_two", "cli:ben@host")).toMatchObject({ ok: true, value: { version: 2 } });
    expect(await other.values("acme", ["SHOP_API_KEY"])).toEqual({ SHOP_API_KEY: "sk_live_two" }); // no restart, no message between nodes
    expect(await other.values("globex", ["SHOP_API_KEY"])).toEqual({}); // another workspace's secret is never this one's
    const listed = await ops.list("acme");
    expect(listed.ok && listed.value).toEqual([{ workspaceId: "acme", name: "SHOP_API_KEY", version: 2, updatedAt: expect.any(Number), updatedBy: "cli:ben@host" }]);
    expect(JSON.stringify(listed)).not.toContain("sk_live");
    const rows = await sql("SELECT * FROM workspace_secrets");
    expect(rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(rows.map((row) => ({ ...row, ciphertext: Buffer.from(row.ciphertext as Buffer).toString("latin1") })))).not.toContain("sk_live_two");
    expect(await ops.remove("acme", "SHOP_API_KEY", "cli:ana@host")).toEqual({ ok: true, value: true });
    expect(await other.values("acme", ["SHOP_API_KEY"])).toEqual({});
    expect(await ops.remove("acme", "SHOP_API_KEY", "cli:ana@host")).toMatchObject({ ok: false, error: { code: "secret_not_found" } });
    expect(await ops.set("acme", "SHOP_API_KEY", "sk_live_three", "cli:ana@host")).toMatchObject({ ok: true, value: { version: 4 } });
    const audit = await node2.listAudit("acme");
    expect(audit.map((entry) => [entry.action, entry.target, entry.actor, entry.detail?.version])).toEqual([
      ["secret.set", "SHOP_API_KEY", "cli:ana@host", 1],
      ["secret.set", "SHOP_API_KEY", "cli:ben@host", 2],
      ["secret.removed", "SHOP_API_KEY", "cli:ana@host", 3],
      ["secret.set", "SHOP_API_KEY", "cli:ana@host", 4],
    ]);
    expect(JSON.stringify(audit)).not.toContain("sk_live");
  });

  it("bad names and values are refused with codes and nothing is stored", async () => {
    const ops = new WorkspaceSecrets({ store: node1, keyring: keyring(key) });
    expect(await ops.set("acme", "1BAD", "v", "x")).toMatchObject({ ok: false, error: { code: "secret_name_invalid" } });
    expect(await ops.set("Acme", "GOOD", "v", "x")).toMatchObject({ ok: false, error: { code: "workspace_invalid" } });
    expect(await ops.set("acme", "GOOD", "", "x")).toMatchObject({ ok: false, error: { code: "secret_value_empty" } });
    expect(await ops.set("acme", "GOOD", "x".repeat(64 * 1024 + 1), "x")).toMatchObject({ ok: false, error: { code: "secret_value_too_large" } });
    expect(await ops.set("acme", "GOOD", "x".repeat(64 * 1024), "x")).toMatchObject({ ok: true });
    expect(await new WorkspaceSecrets({ store: node1, keyring: undefined }).set("acme", "OTHER", "v", "x")).toMatchObject({ ok: false, error: { code: "secrets_key_missing" } });
    const listed = await ops.list("acme");
    expect(listed.ok && listed.value.map((secret) => secret.name)).not.toContain("OTHER");
  });

  it("CAPLO_SECRET_<NAME> answers only the default workspace, and only names with no stored value", async () => {
    const env = { CAPLO_SECRET_ENV_ONLY: "from-env", CAPLO_SECRET_BOTH: "env-value" };
    const ops = new WorkspaceSecrets({ store: node1, keyring: keyring(key), env });
    await ops.set("default", "BOTH", "stored-value", "x");
    expect(await ops.values("default", ["ENV_ONLY", "BOTH"])).toEqual({ ENV_ONLY: "from-env", BOTH: "stored-value" });
    expect(await ops.values("acme", ["ENV_ONLY"])).toEqual({});
  });

  it("a missing or wrong key is refused at the check; rotate-key seals every value under the new key in one go", async () => {
    expect(await new WorkspaceSecrets({ store: node2, keyring: undefined }).check()).toMatchObject({ ok: false, error: { code: "secrets_key_missing" } });
    expect(await new WorkspaceSecrets({ store: node2, keyring: keyring(keyText()) }).check()).toMatchObject({ ok: false, error: { code: "secrets_key_wrong" } });
    const next = keyText();
    const rotating = new WorkspaceSecrets({ store: node1, keyring: keyring(next, key) });
    expect(await rotating.check()).toMatchObject({ ok: true });
    const rotated = await rotating.rotateKey("cli:ana@host");
    expect(rotated).toMatchObject({ ok: true, value: { keyId: keyring(next).current.id } });
    const onlyNew = new WorkspaceSecrets({ store: node2, keyring: keyring(next) });
    expect(await onlyNew.check()).toMatchObject({ ok: true });
    expect(await onlyNew.values("acme", ["SHOP_API_KEY"])).toEqual({ SHOP_API_KEY: "sk_live_three" });
    expect(await new WorkspaceSecrets({ store: node2, keyring: keyring(key) }).check()).toMatchObject({ ok: false, error: { code: "secrets_key_wrong" } });
    expect((await node1.listAudit("acme")).at(-1)).toMatchObject({ action: "secrets.key_rotated", actor: "cli:ana@host" });
  });
});
