// Settings of the server as a whole: where it listens, its store and releases, which agents it serves,
// the secrets' values and the scripted model's rules. A flag of `caplo serve` wins over its variable.
import { SECRET_NAME_PATTERN } from "@caplo/shared";
import { oneOf, setting, text, wholeNumber } from "../setting.ts";

export const PORT_MAX = 65_535;

export const serveSettings = {
  CAPLO_PORT: setting(
    { name: "CAPLO_PORT", flag: "--port N", rule: `a whole number from 0 to ${PORT_MAX}`, example: "8080", default: "8080 (serve), 4300 (demo)", commands: ["serve", "demo"], doc: "the port to listen on (0 picks a free one); for `caplo demo`, the demo page's port" },
    wholeNumber(0, PORT_MAX).optional(),
  ),
  CAPLO_HOST: setting(
    { name: "CAPLO_HOST", flag: "--host ADDR", rule: "an address to listen on", example: "0.0.0.0", default: "127.0.0.1", commands: ["serve"], doc: "the address to listen on" },
    text().default("127.0.0.1"),
  ),
  CAPLO_DATABASE_URL: setting(
    { name: "CAPLO_DATABASE_URL", flag: "--db PATH|URL", rule: "a SQLite file's path, or a postgres:// URL", example: "postgres://caplo@db.internal:5432/caplo", default: "`CAPLO_DB`", commands: ["serve", "agent publish", "secret", "member"], doc: "the store: a SQLite file (nothing to install), or `postgres://…`; several nodes need PostgreSQL. `caplo agent publish`, `caplo secret set` and `caplo member add` (and their other subcommands) change the same store: the workspace's audit, secrets and members" },
    text().optional(),
  ),
  CAPLO_DB: setting(
    { name: "CAPLO_DB", flag: "--db PATH|URL", rule: "a SQLite file's path, or a postgres:// URL", example: ".caplo/caplo.db", default: "`.caplo/caplo.db`", commands: ["serve", "agent publish", "secret", "member"], doc: "the store, when `CAPLO_DATABASE_URL` is not set" },
    text().default(".caplo/caplo.db"),
  ),
  CAPLO_RELEASES_DIR: setting(
    { name: "CAPLO_RELEASES_DIR", flag: "--releases DIR", rule: "a folder", example: "/var/caplo/releases", default: "`.caplo/releases`", commands: ["serve", "agent publish"], doc: "where `caplo agent publish` keeps releases" },
    text().default(".caplo/releases"),
  ),
  CAPLO_AGENTS: setting(
    { name: "CAPLO_AGENTS", flag: "--agent NAME (repeatable)", rule: "agent names, comma-separated", example: "shop,help-desk", default: "required", commands: ["serve"], doc: "which agents to serve, each with its latest release" },
    text()
      .transform((value) => value.split(",").map((name) => name.trim()).filter(Boolean))
      .optional(),
  ),
  CAPLO_SCRIPT: setting(
    { name: "CAPLO_SCRIPT", flag: "--script FILE", rule: "a JSON file of scripted-model rules", example: "rules.json", default: "—", commands: ["serve"], doc: "rules for the scripted model, used when no real model is configured" },
    text().optional(),
  ),
  CAPLO_WIDGET_DIR: setting(
    { name: "CAPLO_WIDGET_DIR", flag: "--widget-dir DIR", rule: "a folder holding the widget's build", example: "widget/dist", default: "`widget/dist`", commands: ["serve"], doc: "the widget's build" },
    text().optional(),
  ),
  CAPLO_SECRET_: setting(
    {
      name: "CAPLO_SECRET_<NAME>",
      family: "CAPLO_SECRET_",
      rule: `a value for workspace secret NAME (NAME matching ${SECRET_NAME_PATTERN.source})`,
      example: "sk_live_0123456789",
      default: "—",
      commands: ["serve", "demo"],
      doc: "the value of workspace secret `NAME`: tool secrets (for example `CAPLO_SECRET_SHOP_API_KEY`) and HS256 identity keys. Read when a call needs it, never logged",
    },
    text().optional(),
  ),
  CAPLO_SECRETS_KEY_FILE: setting(
    {
      name: "CAPLO_SECRETS_KEY_FILE",
      rule: "a file holding one key per line (44 base64 characters or 64 hex digits, 32 random bytes), the first sealing",
      example: "/etc/caplo/secrets.key",
      default: "—",
      commands: ["serve", "secret"],
      checkedBy: "secrets/secretBox.ts (secrets_key_invalid, secrets_key_unreadable)",
      doc: "the operator's key sealing workspace secrets at rest (AES-256-GCM); make one with `openssl rand -base64 32`. Further lines are older keys still opening values during a rotation (`caplo secret rotate-key`). A server whose store holds secrets stops with `secrets_key_missing` without it and `secrets_key_wrong` with another key. See [Workspaces and secrets](workspaces.md)",
    },
    text().optional(),
  ),
  CAPLO_SECRETS_KEY: setting(
    {
      name: "CAPLO_SECRETS_KEY",
      rule: "keys (44 base64 characters or 64 hex digits each) separated by commas, the first sealing",
      example: "q3Jx0bq3g4tq1Xj2o3C8sJH7c3gqk8iB1a0cN9eW5Ys=",
      default: "—",
      commands: ["serve", "secret"],
      checkedBy: "secrets/secretBox.ts (secrets_key_invalid)",
      doc: "the secrets key given in the environment instead of `CAPLO_SECRETS_KEY_FILE` (not both); a file is safer, since a process's environment is easier to read than a file only its user can",
    },
    text().optional(),
  ),
  CAPLO_SQLITE_SYNCHRONOUS: setting(
    { name: "CAPLO_SQLITE_SYNCHRONOUS", rule: "normal or full", example: "full", default: "normal", commands: ["serve", "demo", "agent publish", "secret", "member"], doc: "the durability of every SQLite file Caplo writes (the store, the channels' inbox): `normal` survives a process crash, `full` also an OS crash or power loss (an fsync per commit)" },
    oneOf(["normal", "full"]).default("normal"),
  ),
  CAPLO_INVOCATION_LOG: setting(
    {
      name: "CAPLO_INVOCATION_LOG",
      rule: "a file's path",
      example: "/var/log/caplo/invocations.jsonl",
      default: "`invocations.jsonl` beside the SQLite `--db`; `.caplo/invocations.jsonl` with `postgres://`",
      commands: ["serve", "tool logs"],
      doc: "the file keeping every tool call's record and log lines, secrets redacted; with `postgres://` each node keeps its own, so look on the node that ran the call. Read it with `caplo tool logs --db PATH`; see [The runner](../runner.md#invocation-logs)",
    },
    text().optional(),
  ),
  CAPLO_INVOCATION_LOG_MAX_MB: setting(
    { name: "CAPLO_INVOCATION_LOG_MAX_MB", rule: "a whole number of MiB from 1 to 102400", example: "64", default: "64", commands: ["serve"], doc: "the invocation log's bound in MiB: past half of it the file becomes `FILE.1`, replacing the older one" },
    wholeNumber(1, 102_400).default(64), // DEFAULT_LOG_MAX_BYTES of runner/logStore.ts
  ),
};
