// The options of `caplo demo` from its flags and environment, or the first problem with them.
import { resolve } from "node:path";
import { parseSetting, type SettingKey } from "../config/index.ts";

export type DemoOptions = {
  /** The demo page's port (the one URL printed). */
  port: number;
  /** The demo shop API's port (0: a free one); the help articles' page origins follow it. */
  shopPort: number;
  /**
   * The gateway's port (WebSocket, team API, messaging webhooks): fixed by default, so a tunnel (ngrok,
   * cloudflared) pointed at it keeps working across restarts; 0 picks a free one.
   */
  gatewayPort: number;
  /** Where the demo keeps its SQLite store, releases and shop state. */
  dataDir: string;
  /** How long the shop takes to finish a pending (202) cancellation, ms. */
  pendingMs: number;
  /** Gap before a pending write's first status check, ms. */
  statusCheckBaseMs: number;
  verbose: boolean;
  env: Record<string, string | undefined>;
};

export type DemoError = { code: string; path: string; message: string };

const FLAGS = /^--(port|shop-port|gateway-port|data-dir|pending-ms|status-check-ms)(?:=(.*))?$/;
/** The demo gateway's default port: where `/webhooks/<platform>` is reached (through a tunnel) in the demo. */
export const DEMO_GATEWAY_PORT = 4200;

/** A number from its flag, else its variable, else the demo's default, checked by the setting's schema. */
function whole(flag: string | undefined, key: SettingKey & `CAPLO_${string}`, env: Record<string, string | undefined>, path: string, fallback: number): number | DemoError {
  const text = flag ?? env[key];
  const parsed = parseSetting(key, text, flag === undefined ? key : path);
  if (!parsed.ok) return { ...parsed.error, code: "option_invalid" };
  return typeof parsed.value === "number" ? parsed.value : fallback;
}

export function parseDemoArgs(args: string[], env: Record<string, string | undefined>, cwd = process.cwd()): { ok: true; options: DemoOptions } | { ok: false; error: DemoError } {
  const values: Record<string, string> = {};
  let verbose = false;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === "--verbose") {
      verbose = true;
      continue;
    }
    const match = FLAGS.exec(arg);
    if (!match) return { ok: false, error: { code: "option_unknown", path: arg, message: `unknown option ${arg} (see caplo demo --help)` } };
    const value = match[2] ?? args[++index];
    if (value === undefined) return { ok: false, error: { code: "option_value_missing", path: arg, message: `${arg} needs a value` } };
    values[match[1]!] = value;
  }
  const port = whole(values.port, "CAPLO_PORT", env, "--port", 4300);
  if (typeof port !== "number") return { ok: false, error: port };
  const shopPort = whole(values["shop-port"], "CAPLO_DEMO_SHOP_PORT", env, "--shop-port", 4100);
  if (typeof shopPort !== "number") return { ok: false, error: shopPort };
  const gatewayPort = whole(values["gateway-port"], "CAPLO_DEMO_GATEWAY_PORT", env, "--gateway-port", DEMO_GATEWAY_PORT);
  if (typeof gatewayPort !== "number") return { ok: false, error: gatewayPort };
  const pendingMs = whole(values["pending-ms"], "CAPLO_DEMO_PENDING_MS", env, "--pending-ms", 3000);
  if (typeof pendingMs !== "number") return { ok: false, error: pendingMs };
  const statusCheckBaseMs = whole(values["status-check-ms"], "CAPLO_STATUS_CHECK_BASE_MS", env, "--status-check-ms", 4000);
  if (typeof statusCheckBaseMs !== "number") return { ok: false, error: statusCheckBaseMs };
  return {
    ok: true,
    options: { port, shopPort, gatewayPort, pendingMs, statusCheckBaseMs, verbose, env, dataDir: resolve(cwd, values["data-dir"] ?? (env.CAPLO_DEMO_DIR || ".caplo/demo")) },
  };
}
