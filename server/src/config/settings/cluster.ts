// Settings of several nodes: this node's id and lease, the event bus between nodes, and the webhooks'
// rate per node. With one SQLite node none of them is needed.
import { setting, text, wholeNumber } from "../setting.ts";

export const clusterSettings = {
  CAPLO_NODE_ID: setting(
    {
      name: "CAPLO_NODE_ID",
      rule: "a name for this node, different on every node",
      example: "edge-1",
      default: "with `postgres://`: `<host name>-<pid>-<6 random hex>`; with SQLite: the host name",
      commands: ["serve"],
      doc: "this node's id in a cluster; with PostgreSQL unique per process by default, with SQLite the host name (its restart recovers its own running writes). If you set it, set it differently on every node",
    },
    text().optional(),
  ),
  CAPLO_NODE_LEASE_MS: setting(
    { name: "CAPLO_NODE_LEASE_MS", rule: "a whole number from 1000 to 600000", example: "15000", default: "15000", commands: ["serve"], doc: "with a `postgres://` store: this node's liveness lease; a node silent this long is taken over by another, which recovers its running writes" },
    wholeNumber(1_000, 600_000).optional(),
  ),
  CAPLO_REDIS_URL: setting(
    {
      name: "CAPLO_REDIS_URL",
      checkedBy: "bus/index.ts (bus_config_invalid)",
      rule: "a redis:// or rediss:// URL",
      example: "redis://127.0.0.1:6379/0",
      default: "— (PostgreSQL LISTEN/NOTIFY with a `postgres://` store, else in-process)",
      commands: ["serve"],
      doc: "share conversation events between nodes through Redis (`rediss://` for TLS)",
    },
    text().optional(),
  ),
  CAPLO_BUS_POLL_MS: setting(
    { name: "CAPLO_BUS_POLL_MS", rule: "a whole number from 50 to 60000", example: "1000", default: "1000", commands: ["serve"], doc: "how often a node whose event bus is degraded (Redis or the listening connection away) reads the store instead" },
    wholeNumber(50, 60_000).optional(),
  ),
  CAPLO_WEBHOOKS_PER_SECOND: setting(
    {
      name: "CAPLO_WEBHOOKS_PER_SECOND",
      rule: "a whole number from 1 to 100000",
      example: "50",
      default: "50",
      commands: ["serve"],
      doc: "messaging webhook requests accepted per second per platform on this node (burst twice that), counting only requests whose signature holds, and as many per client address before the signature is read (so unsigned requests never use up the platform's rate); more get 429 with `Retry-After: 1` (Meta retries them; Twilio only with connection overrides on the webhook URL, see [Running several Caplo nodes](../operators-multi-node.md))",
    },
    wholeNumber(1, 100_000).optional(),
  ),
  CAPLO_CHANNELS_DB: setting(
    {
      name: "CAPLO_CHANNELS_DB",
      rule: "a SQLite file's path",
      example: "/var/caplo/channels.db",
      default: "`channels.db` beside `--db`",
      commands: ["serve"],
      doc: "the messaging channels' state with a SQLite store; with a `postgres://` store it is not used: the channels' state is in PostgreSQL, shared by every node",
    },
    text().optional(),
  ),
  CAPLO_TEST_DATABASE_URL: setting(
    { name: "CAPLO_TEST_DATABASE_URL", rule: "a postgres:// URL", example: "postgres://postgres@127.0.0.1:5432/postgres", default: "the local PostgreSQL", commands: ["tests"], doc: "the PostgreSQL the tests create their schemas in" },
    text().optional(),
  ),
};
