// `caplo serve`: its flags and environment into the composition root's options (server/src/app/server.ts
// starts and stops the server; app/serveChannels.ts checks the channels for `--check-channels`).
import { hostname } from "node:os";
import { isPostgres, startServer, type ServeError, type ServeOptions } from "../app/server.ts";
import { checkChannels } from "../app/serveChannels.ts";
import { uniqueNodeId } from "../cluster/clusterNode.ts";
import { parseSetting } from "../config/index.ts";
import { flagsHelp, settingsHelp } from "../config/help.ts";
import { parseTeamMembers } from "../gateway/teamMembers.ts";
import { storeLocation } from "./operator.ts";

// The server's start is the composition root's; these names stay for the tests that start servers.
export { startServer as startServe, type RunningServer, type ServeError, type ServeOptions } from "../app/server.ts";

export const help = `caplo serve [options]

Starts the Caplo server: the widget's WebSocket at /v1/ws, the widget's files (/widget.js, /widget/...),
/schemas/*.json, /healthz, /readyz and the team API (/v1/team/...), with each agent's latest release.

Options (each has an environment variable; a flag wins):
${flagsHelp("serve")}
  --check-channels
      check the messaging channels' settings and agents, print the webhook URLs to enter on each platform,
      and exit without starting (0: ready, 1: a problem, printed)

Environment: every setting caplo serve reads (docs/operators/configuration.md has the same, from the same
schema). CAPLO_SANDBOX=weak is refused: the weak sandbox is for caplo tool test only.

${settingsHelp("serve")}
`;

/** Flags and environment into options, or the first problem. */
export function parseServeArgs(args: string[], env: Record<string, string | undefined>): { ok: true; options: ServeOptions } | { ok: false; error: ServeError } {
  const values: Record<string, string[]> = {};
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === "--check-channels") {
      (values["check-channels"] ??= []).push("1");
      continue;
    }
    const match = /^--(port|host|db|releases|agent|script|widget-dir)(?:=(.*))?$/.exec(arg);
    if (!match) return { ok: false, error: { code: "option_unknown", path: arg, message: `unknown option ${arg} (see caplo serve --help)` } };
    const value = match[2] ?? args[++index];
    if (value === undefined) return { ok: false, error: { code: "option_value_missing", path: arg, message: `${arg} needs a value` } };
    (values[match[1]!] ??= []).push(value);
  }
  const last = (name: string) => values[name]?.at(-1);
  // The weak sandbox (no namespaces: raw network, links followed) is for a tool author's caplo tool test.
  if (env.CAPLO_SANDBOX === "weak") {
    return { ok: false, error: { code: "sandbox_weak_refused", path: "CAPLO_SANDBOX", message: "CAPLO_SANDBOX=weak is for caplo tool test only: caplo serve runs packages only in the isolated sandbox (Linux namespaces; a user namespace when not root); unset it" } };
  }
  // What the options need now is read here by its setting's schema (a flag's value by the same one); the
  // rest of the configuration is read once when the server starts (startServe).
  const flagPort = last("port");
  const port = parseSetting("CAPLO_PORT", flagPort ?? env.CAPLO_PORT, flagPort === undefined ? "CAPLO_PORT" : "--port");
  if (!port.ok) return { ok: false, error: { ...port.error, code: "port_invalid" } };
  const agents = values.agent ?? parseSetting("CAPLO_AGENTS", env.CAPLO_AGENTS);
  const names = Array.isArray(agents) ? agents : agents.ok ? (agents.value ?? []) : [];
  if (names.length === 0) return { ok: false, error: { code: "agent_required", path: "--agent", message: "name at least one agent to serve (--agent NAME or CAPLO_AGENTS)" } };
  const settings = (["CAPLO_STATUS_CHECK_BASE_MS", "CAPLO_NODE_LEASE_MS", "CAPLO_BUS_POLL_MS", "CAPLO_WEBHOOKS_PER_SECOND", "CAPLO_TEAM_TOKEN"] as const).map((name) => parseSetting(name, env[name]));
  const settingError = settings.find((setting) => !setting.ok);
  if (settingError && !settingError.ok) return { ok: false, error: settingError.error };
  const [statusCheckBaseMs, nodeLeaseMs, busPollMs, webhooksPerSecond] = settings.map((setting) => (setting.ok ? setting.value : undefined)) as (number | undefined)[];
  const db = storeLocation(last("db"), env);
  const team = parseTeamMembers(env.CAPLO_TEAM_MEMBERS);
  if (!team.ok) return { ok: false, error: team.error };
  const script = last("script") ?? env.CAPLO_SCRIPT;
  const widgetDir = last("widget-dir") ?? env.CAPLO_WIDGET_DIR;
  return {
    ok: true,
    options: {
      port: port.value ?? 8080,
      host: last("host") ?? (env.CAPLO_HOST || "127.0.0.1"),
      db,
      releasesDir: last("releases") ?? (env.CAPLO_RELEASES_DIR || ".caplo/releases"),
      agents: names,
      ...(script && { script }),
      ...(widgetDir && { widgetDir }),
      ...(values["check-channels"] && { checkChannels: true }),
      ...(team.members.length > 0 && { teamMembers: team.members }),
      // On PostgreSQL a restarted node's old running writes are recovered by liveness takeover, so a fresh id
      // per process is safe; on SQLite (one node per file) a stable id lets the restart recover them at once.
      nodeId: env.CAPLO_NODE_ID || (isPostgres(db) ? uniqueNodeId() : hostname()),
      ...(nodeLeaseMs !== undefined && { nodeLeaseMs }),
      ...(busPollMs !== undefined && { busPollMs }),
      ...(webhooksPerSecond !== undefined && { webhooksPerSecond }),
      ...(statusCheckBaseMs !== undefined && { statusCheckBaseMs }),
      env,
    },
  };
}

/** A second Ctrl-C this long after the first, while the server still starts, ends the process at once. */
const FORCE_AFTER_MS = 1000;

export async function run(args: string[]): Promise<number> {
  const parsed = parseServeArgs(args, process.env);
  if (!parsed.ok) {
    console.error(`caplo serve: ${parsed.error.code} at ${parsed.error.path}: ${parsed.error.message}`);
    return 2;
  }
  if (parsed.options.checkChannels) return checkChannels(parsed.options);
  // The handlers are in place before the server says it listens, so Ctrl-C at any moment after that line stops
  // it cleanly (without one, a signal ends the process at once, with no close). They stay until the server is
  // closed: Ctrl-C signals the terminal's whole process group, so a wrapper (npx, tsx) relays a second SIGINT
  // while the first one's close runs, which would otherwise end the process with 130 in the middle of it.
  // Ctrl-C while it starts stops it once started; Ctrl-C again a second later (a start that hangs, say on a
  // database that does not answer) ends the process at once, as the terminal's default would.
  let askedAt: number | undefined;
  let running = false;
  let wake: () => void = () => undefined;
  const stop = () => {
    if (!running && askedAt !== undefined && Date.now() - askedAt >= FORCE_AFTER_MS) process.exit(130);
    askedAt ??= Date.now();
    wake();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  const started = await startServer(parsed.options);
  if (!started.ok) {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    console.error(`caplo serve: ${started.error.code}${started.error.path ? ` at ${started.error.path}` : ""}: ${started.error.message}`);
    return 1;
  }
  running = true;
  if (askedAt === undefined) await new Promise<void>((resolve) => (wake = resolve));
  await started.server.close();
  process.off("SIGINT", stop);
  process.off("SIGTERM", stop);
  return 0;
}
