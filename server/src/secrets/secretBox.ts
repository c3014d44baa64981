// Workspace secrets at rest: AES-256-GCM under the operator's key. Each value has a fresh 12-byte nonce, and
// its workspace, name and version are authenticated with it (additional data), so a sealed value copied to
// another workspace's row, another name or an older version does not open. The key never leaves this module's
// callers' memory and is never logged; a key is named by its id, a hash of it, so a stored value says which
// key sealed it without holding anything that reveals the key.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { SealedValue } from "../store/store.ts";

export const SECRET_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** A secret's value at most (a key, a token, a PEM): 64 KiB. */
export const SECRET_VALUE_MAX_BYTES = 64 * 1024;

export type SecretKey = { id: string; key: Buffer };
/** The keys a server opens values with; `current` (the first) seals new values. */
export type SecretKeyring = { current: SecretKey; keys: readonly SecretKey[] };
export type SecretsError = { code: string; path: string; message: string };

/** A key's id: the start of SHA-256 over a label and the key (names the key, reveals nothing of it). */
export function secretKeyId(key: Buffer): string {
  return `k${createHash("sha256").update("caplo-secret-key-id\0").update(key).digest("hex").slice(0, 16)}`;
}

/** One key as written: 44 base64 characters or 64 hex digits, both 32 bytes. */
function parseKey(text: string, path: string): { ok: true; key: SecretKey } | { ok: false; error: SecretsError } {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, "hex")
    : /^[A-Za-z0-9+/]{43}=$/.test(trimmed)
      ? Buffer.from(trimmed, "base64")
      : undefined;
  if (!key || key.length !== SECRET_KEY_BYTES) {
    return { ok: false, error: { code: "secrets_key_invalid", path, message: `a secrets key is ${SECRET_KEY_BYTES} random bytes written as 44 base64 characters or 64 hex digits (make one with: openssl rand -base64 32)` } };
  }
  return { ok: true, key: { id: secretKeyId(key), key } };
}

/**
 * The operator's keys: CAPLO_SECRETS_KEY_FILE (one key per line, `#` comments) or CAPLO_SECRETS_KEY (keys
 * separated by commas), never both. The first key seals; the others only open (during a key rotation).
 * Neither set: no keyring (a server with no stored secrets runs without one).
 */
export function readSecretKeys(settings: { CAPLO_SECRETS_KEY?: string | undefined; CAPLO_SECRETS_KEY_FILE?: string | undefined }, readFile: (path: string) => string = (path) => readFileSync(path, "utf8")): { ok: true; keyring: SecretKeyring | undefined } | { ok: false; error: SecretsError } {
  const inline = settings.CAPLO_SECRETS_KEY;
  const file = settings.CAPLO_SECRETS_KEY_FILE;
  if (inline !== undefined && file !== undefined) {
    return { ok: false, error: { code: "secrets_key_ambiguous", path: "CAPLO_SECRETS_KEY", message: "set CAPLO_SECRETS_KEY_FILE or CAPLO_SECRETS_KEY, not both" } };
  }
  if (inline === undefined && file === undefined) return { ok: true, keyring: undefined };
  let entries: string[];
  let path: string;
  if (file !== undefined) {
    path = "CAPLO_SECRETS_KEY_FILE";
    let text: string;
    try {
      text = readFile(file);
    } catch (error) {
      return { ok: false, error: { code: "secrets_key_unreadable", path, message: `the secrets key file ${file} cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}` } };
    }
    entries = text.split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"));
  } else {
    path = "CAPLO_SECRETS_KEY";
    entries = inline!.split(",").map((entry) => entry.trim()).filter(Boolean);
  }
  if (entries.length === 0) return { ok: false, error: { code: "secrets_key_invalid", path, message: "no key given" } };
  const keys: SecretKey[] = [];
  for (const [index, entry] of entries.entries()) {
    const parsed = parseKey(entry, `${path}[${index}]`);
    if (!parsed.ok) return parsed;
    if (keys.some((key) => key.id === parsed.key.id)) return { ok: false, error: { code: "secrets_key_invalid", path: `${path}[${index}]`, message: "the same key is listed twice" } };
    keys.push(parsed.key);
  }
  return { ok: true, keyring: { current: keys[0]!, keys } };
}

/** What a sealed value is bound to: its workspace, name and version. */
export type SecretSlot = { workspaceId: string; name: string; version: number };

function additionalData(slot: SecretSlot): Buffer {
  return Buffer.from(`caplo-secret-v1\0${slot.workspaceId}\0${slot.name}\0${slot.version}`, "utf8");
}

/** Seal a value under the keyring's current key. */
export function sealSecret(keyring: SecretKeyring, slot: SecretSlot, value: string): SealedValue {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", keyring.current.key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(additionalData(slot));
  const ciphertext = Buffer.concat([cipher.update(value, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return { keyId: keyring.current.id, nonce, ciphertext };
}

/** Open a sealed value, or a coded error: the key that sealed it is not in the keyring, or it does not authenticate. */
export function openSecret(keyring: SecretKeyring, slot: SecretSlot, sealed: SealedValue): { ok: true; value: string } | { ok: false; error: SecretsError } {
  const key = keyring.keys.find((candidate) => candidate.id === sealed.keyId);
  const where = `${slot.workspaceId}/${slot.name}`;
  if (!key) return { ok: false, error: { code: "secrets_key_wrong", path: where, message: `secret ${where} was sealed with key ${sealed.keyId}, which is not among the configured keys (${keyring.keys.map((k) => k.id).join(", ")})` } };
  const ciphertext = Buffer.from(sealed.ciphertext);
  if (ciphertext.length < TAG_BYTES || sealed.nonce.length !== NONCE_BYTES) return { ok: false, error: { code: "secret_corrupt", path: where, message: `secret ${where} is not a sealed value` } };
  try {
    const decipher = createDecipheriv("aes-256-gcm", key.key, Buffer.from(sealed.nonce), { authTagLength: TAG_BYTES });
    decipher.setAAD(additionalData(slot));
    decipher.setAuthTag(ciphertext.subarray(ciphertext.length - TAG_BYTES));
    const value = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    return { ok: true, value };
  } catch {
    return { ok: false, error: { code: "secret_corrupt", path: where, message: `secret ${where} does not open with key ${key.id}: it was altered, or moved from another secret's row` } };
  }
}
