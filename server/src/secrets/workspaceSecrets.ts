// Workspace secrets: set, listed (never their values), removed and rotated by the operator (`caplo secret`),
// read by the engine at each call that needs them, from the store, so a change reaches every node's next
// call without a restart and without a message between nodes. Values are sealed at rest (secretBox.ts).
// CAPLO_SECRET_<NAME> stays a shortcut for the default workspace: it answers a name with no stored value.
import { DEFAULT_WORKSPACE, SECRET_NAME_PATTERN, WORKSPACE_ID_PATTERN } from "@caplo/shared";
import type { SecretMeta, Store } from "../store/store.ts";
import { openSecret, sealSecret, SECRET_VALUE_MAX_BYTES, type SecretKeyring, type SecretsError } from "./secretBox.ts";

export type WorkspaceSecretsOptions = {
  store: Store;
  keyring: SecretKeyring | undefined;
  /** CAPLO_SECRET_<NAME> of this environment answer the default workspace's names that have no stored value. */
  env?: Readonly<Record<string, string | undefined>>;
  now?: () => number;
  /** A stored value that no longer opens is logged by code and name (never a value) and treated as missing. */
  log?: (level: "warn" | "error", message: string, data?: Record<string, unknown>) => void;
};

type Result<T> = { ok: true; value: T } | { ok: false; error: SecretsError };

export class WorkspaceSecrets {
  private readonly options: WorkspaceSecretsOptions;

  constructor(options: WorkspaceSecretsOptions) {
    this.options = options;
  }

  /**
   * Every stored value must open with the configured keys: a server with stored secrets and no key stops with
   * secrets_key_missing, one whose keys do not open them with secrets_key_wrong (or secret_corrupt).
   */
  async check(): Promise<{ ok: true; count: number } | { ok: false; error: SecretsError }> {
    const stored = await this.options.store.listAllSecrets();
    if (stored.length === 0) return { ok: true, count: 0 };
    const keyring = this.options.keyring;
    if (!keyring) {
      return { ok: false, error: { code: "secrets_key_missing", path: "CAPLO_SECRETS_KEY_FILE", message: `the store holds ${stored.length} workspace secret(s) sealed with a key, and no key is configured: set CAPLO_SECRETS_KEY_FILE (or CAPLO_SECRETS_KEY) to the key they were sealed with` } };
    }
    for (const secret of stored) {
      const opened = openSecret(keyring, secret, secret.sealed);
      if (!opened.ok) return { ok: false, error: { ...opened.error, code: opened.error.code === "secret_corrupt" ? "secrets_key_wrong" : opened.error.code, message: `${opened.error.message}; the configured key is not the one the secrets were sealed with (or the store was altered)` } };
    }
    return { ok: true, count: stored.length };
  }

  /** The values of the named secrets in a workspace that have one (the store's, else for default CAPLO_SECRET_<NAME>). */
  async values(workspaceId: string, names: readonly string[]): Promise<Record<string, string>> {
    const values: Record<string, string> = {};
    if (names.length === 0) return values;
    const stored = await this.options.store.readSecrets(workspaceId, names);
    for (const secret of stored) {
      if (!this.options.keyring) {
        this.options.log?.("error", "a workspace secret is stored but no secrets key is configured; the call goes without it", { code: "secrets_key_missing", workspaceId, secret: secret.name });
        continue;
      }
      const opened = openSecret(this.options.keyring, secret, secret.sealed);
      if (opened.ok) values[secret.name] = opened.value;
      else this.options.log?.("error", "a workspace secret does not open; the call goes without it", { code: opened.error.code, workspaceId, secret: secret.name });
    }
    if (workspaceId === DEFAULT_WORKSPACE && this.options.env) {
      for (const name of names) {
        const fromEnv = SECRET_NAME_PATTERN.test(name) ? this.options.env[`CAPLO_SECRET_${name}`] : undefined;
        if (values[name] === undefined && fromEnv !== undefined) values[name] = fromEnv;
      }
    }
    return values;
  }

  async get(workspaceId: string, name: string): Promise<string | undefined> {
    return (await this.values(workspaceId, [name]))[name];
  }

  async set(workspaceId: string, name: string, value: string, actor: string): Promise<Result<SecretMeta>> {
    const refused = checkRef(workspaceId, name);
    if (refused) return { ok: false, error: refused };
    const bytes = Buffer.byteLength(value, "utf8");
    if (bytes === 0) return { ok: false, error: { code: "secret_value_empty", path: name, message: "the value is empty (remove a secret with caplo secret rm)" } };
    if (bytes > SECRET_VALUE_MAX_BYTES) return { ok: false, error: { code: "secret_value_too_large", path: name, message: `the value is ${bytes} bytes; at most ${SECRET_VALUE_MAX_BYTES}` } };
    const keyring = this.options.keyring;
    if (!keyring) return { ok: false, error: { code: "secrets_key_missing", path: "CAPLO_SECRETS_KEY_FILE", message: "no secrets key is configured: set CAPLO_SECRETS_KEY_FILE (or CAPLO_SECRETS_KEY) to a key made with: openssl rand -base64 32" } };
    const checked = await this.check();
    if (!checked.ok) return checked;
    await this.options.store.ensureWorkspace(workspaceId, this.now());
    const meta = await this.options.store.setSecret(workspaceId, name, (version) => sealSecret(keyring, { workspaceId, name, version }, value), actor, this.now());
    return { ok: true, value: meta };
  }

  async remove(workspaceId: string, name: string, actor: string): Promise<Result<boolean>> {
    const refused = checkRef(workspaceId, name);
    if (refused) return { ok: false, error: refused };
    const removed = await this.options.store.removeSecret(workspaceId, name, actor, this.now());
    if (!removed) return { ok: false, error: { code: "secret_not_found", path: name, message: `workspace ${workspaceId} has no secret ${name}` } };
    return { ok: true, value: true };
  }

  async list(workspaceId: string): Promise<Result<SecretMeta[]>> {
    if (!WORKSPACE_ID_PATTERN.test(workspaceId)) return { ok: false, error: workspaceInvalid(workspaceId) };
    return { ok: true, value: await this.options.store.listSecrets(workspaceId) };
  }

  /**
   * Seal every stored value again under the keyring's first key, in one transaction. Each must open first
   * (with any configured key): a value that does not leaves everything as it was.
   */
  async rotateKey(actor: string): Promise<Result<{ count: number; keyId: string }>> {
    const keyring = this.options.keyring;
    if (!keyring) return { ok: false, error: { code: "secrets_key_missing", path: "CAPLO_SECRETS_KEY_FILE", message: "no secrets key is configured" } };
    const checked = await this.check();
    if (!checked.ok) return checked;
    const count = await this.options.store.resealSecrets(
      (secret) => {
        const opened = openSecret(keyring, secret, secret.sealed);
        if (!opened.ok) throw Object.assign(new Error(opened.error.message), { code: opened.error.code });
        return sealSecret(keyring, secret, opened.value);
      },
      actor,
      this.now(),
    );
    return { ok: true, value: { count, keyId: keyring.current.id } };
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}

function workspaceInvalid(workspaceId: string): SecretsError {
  return { code: "workspace_invalid", path: "workspace", message: `${JSON.stringify(workspaceId)} is not a workspace id: lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters` };
}

function checkRef(workspaceId: string, name: string): SecretsError | undefined {
  if (!WORKSPACE_ID_PATTERN.test(workspaceId)) return workspaceInvalid(workspaceId);
  if (!SECRET_NAME_PATTERN.test(name)) return { code: "secret_name_invalid", path: "name", message: `${JSON.stringify(name)} is not a secret name: letters, digits and underscores, not starting with a digit, at most 128 characters` };
  return undefined;
}
