// Settings of the runner: the Node 24 binary, the sandbox's strength, the egress map and extra CAs for
// local development, and remote MCP servers on private networks. All of them are the operator's only.
import { oneOf, setting, text } from "../setting.ts";

const toolCommands = ["serve", "demo", "tool build", "tool dev", "tool test"] as const;

export const runnerSettings = {
  CAPLO_NODE24: setting(
    { name: "CAPLO_NODE24", rule: "the path of a Node 24 binary", example: "/opt/node24/bin/node", default: "`runtime/node24` of the checkout", commands: toolCommands, doc: "the Node 24 binary that runs tool packages (`npm install` puts one into `runtime/node24` on linux-x64)" },
    text().optional(),
  ),
  CAPLO_SANDBOX: setting(
    {
      name: "CAPLO_SANDBOX",
      rule: "weak",
      example: "weak",
      default: "— (namespaces required)",
      commands: ["tool test"],
      doc: "`weak` lets `caplo tool test` build and run a package in the weaker sandbox (Node's permission model only, as an unprivileged user) where Linux namespaces are unavailable; never the default. `caplo serve` refuses to start with it (`sandbox_weak_refused`)",
    },
    oneOf(["weak"]).optional(),
  ),
  CAPLO_CGROUPS: setting(
    { name: "CAPLO_CGROUPS", rule: "off", example: "off", default: "— (used where available)", commands: toolCommands, doc: "`off` turns off the control groups that cap a package process's whole memory and processes (the V8 heap cap remains)" },
    oneOf(["off"]).optional(),
  ),
  CAPLO_EGRESS_RESOLVE: setting(
    {
      name: "CAPLO_EGRESS_RESOLVE",
      checkedBy: "runner/egressRule.ts (egress_resolve_invalid)",
      rule: "host=address:port entries separated by commas, each address a literal IP",
      example: "shop.caplo.test=127.0.0.1:4100",
      default: "—",
      commands: toolCommands,
      doc: "the operator's map from a package's egress host to an address (see below)",
    },
    text().optional(),
  ),
  CAPLO_EXTRA_CA_CERTS: setting(
    {
      name: "CAPLO_EXTRA_CA_CERTS",
      checkedBy: "runner/toolRunner.ts (extra_ca_certs_invalid)",
      rule: "a PEM file of certificate authorities, at most 1 MiB",
      example: "/etc/caplo/test-ca.pem",
      default: "—",
      commands: toolCommands,
      doc: "for local development: certificate authorities that packages' TLS trusts besides Node's own, so a local test API with its own certificate can be reached over https (with `CAPLO_EGRESS_RESOLVE` mapping its host)",
    },
    text().optional(),
  ),
  CAPLO_FILE_SCAN_CLAMD: setting(
    {
      name: "CAPLO_FILE_SCAN_CLAMD",
      checkedBy: "runner/fileScanner.ts (setting_invalid)",
      rule: "the absolute path of clamd's Unix socket (not with CAPLO_FILE_SCAN_COMMAND)",
      example: "/run/clamav/clamd.ctl",
      default: "— (built-in checks only)",
      commands: ["serve"],
      doc: "scans every file a tool returns with ClamAV's clamd (INSTREAM) after the built-in checks; a threat, an error or no answer in 30 s means the file is not delivered (the visitor and the model are told)",
    },
    text().optional(),
  ),
  CAPLO_FILE_SCAN_COMMAND: setting(
    {
      name: "CAPLO_FILE_SCAN_COMMAND",
      checkedBy: "runner/fileScanner.ts (setting_invalid)",
      rule: "the absolute path of an executable file (not with CAPLO_FILE_SCAN_CLAMD)",
      example: "/usr/local/bin/caplo-scan",
      default: "— (built-in checks only)",
      commands: ["serve"],
      doc: "instead of clamd, a command run once per file with the file on its standard input and CAPLO_FILE_NAME / CAPLO_FILE_TYPE set: exit 0 clean, 1 threat (its first output line is the reason), anything else or no answer in 30 s an error; only a clean file is delivered",
    },
    text().optional(),
  ),
  CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK: setting(
    {
      name: "CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK",
      rule: "1 or 0",
      example: "1",
      default: "0 (https to public addresses only)",
      commands: ["serve", "remote"],
      doc: "`1` lets remote MCP versions (and the team console's remote review) be reached over `http` and at loopback or private addresses: for local development only, never in production",
    },
    oneOf(["0", "1"])
      .transform((value) => value === "1")
      .default(false),
  ),
};
