// Each workspace's own messaging channels: CAPLO_WORKSPACE_CHANNELS names, per workspace, a file of the same
// channel variables the server reads from its environment (its own Twilio account, Meta app, numbers, pages
// and agents). The server's own variables are the default workspace's channels. Each workspace's webhooks
// are mounted under /webhooks/@<workspace>/<platform>, checked with its own credentials only, and its agent
// names are names in that workspace: a workspace's channels can only ever reach its own agents.
import { DEFAULT_WORKSPACE, WORKSPACE_ID_PATTERN } from "@caplo/shared";
import { CHANNEL_VARIABLES, type ChannelSetupError } from "./channelSettings.ts";
import type { Platform } from "./ports.ts";

/** The variable naming the workspaces' channel files. */
export const WORKSPACE_CHANNELS_VARIABLE = "CAPLO_WORKSPACE_CHANNELS";
const EXAMPLE = `${WORKSPACE_CHANNELS_VARIABLE}=acme=/etc/caplo/acme-channels.env,globex=/etc/caplo/globex-channels.env`;

/** Where a workspace's webhooks are: `/webhooks` for the default workspace, `/webhooks/@<workspace>` for another. */
export function webhookBasePath(workspaceId: string): string {
  return workspaceId === DEFAULT_WORKSPACE ? "/webhooks" : `/webhooks/@${workspaceId}`;
}

const PLATFORMS: Platform[] = ["whatsapp", "messenger", "instagram"];
/** The variables a workspace's channel file may set: the channel variables, the per-account tokens and the agents. */
export const WORKSPACE_CHANNEL_FILE_VARIABLES: ReadonlySet<string> = new Set([
  ...Object.keys(CHANNEL_VARIABLES),
  "CAPLO_MESSENGER_PAGE_TOKENS",
  "CAPLO_INSTAGRAM_TOKENS",
  ...PLATFORMS.flatMap((platform) => [`CAPLO_${platform.toUpperCase()}_AGENT`, `CAPLO_${platform.toUpperCase()}_AGENTS`]),
]);

const invalid = (path: string, message: string): ChannelSetupError => ({ code: "channel_config_invalid", path, message });

/** `acme=/path,globex=/path`: each workspace once, never the default one (its channels are the server's own variables). */
export function parseWorkspaceChannels(value: string): { ok: true; files: Array<{ workspaceId: string; file: string }> } | { ok: false; error: ChannelSetupError } {
  const files: Array<{ workspaceId: string; file: string }> = [];
  const entries = value.split(",").map((entry) => entry.trim()).filter(Boolean);
  if (entries.length === 0) return { ok: false, error: invalid(WORKSPACE_CHANNELS_VARIABLE, `${WORKSPACE_CHANNELS_VARIABLE} is empty: list workspace=file pairs separated by commas; for example ${EXAMPLE}`) };
  for (const entry of entries) {
    const at = entry.indexOf("=");
    const workspaceId = at > 0 ? entry.slice(0, at).trim() : "";
    const file = at > 0 ? entry.slice(at + 1).trim() : "";
    if (!WORKSPACE_ID_PATTERN.test(workspaceId) || !file) {
      return { ok: false, error: invalid(WORKSPACE_CHANNELS_VARIABLE, `${WORKSPACE_CHANNELS_VARIABLE} entry "${entry}" is not workspace=file (a workspace id is lowercase letters, digits and dashes, starting with a letter); for example ${EXAMPLE}`) };
    }
    if (workspaceId === DEFAULT_WORKSPACE) {
      return { ok: false, error: invalid(WORKSPACE_CHANNELS_VARIABLE, `${WORKSPACE_CHANNELS_VARIABLE} names the default workspace: its channels are the server's own variables (CAPLO_TWILIO_ACCOUNT_SID and the rest), so leave it out of the list`) };
    }
    if (files.some((listed) => listed.workspaceId === workspaceId)) return { ok: false, error: invalid(WORKSPACE_CHANNELS_VARIABLE, `${WORKSPACE_CHANNELS_VARIABLE} names workspace ${workspaceId} twice: each workspace once`) };
    files.push({ workspaceId, file });
  }
  return { ok: true, files };
}

/**
 * A workspace's channel file: `NAME=value` lines (a value may be quoted with "" or ''), blank lines and `#`
 * comments. Only channel variables, each once; an error names the file and line, never a value.
 */
export function parseChannelFile(text: string, file: string): { ok: true; env: Record<string, string> } | { ok: false; error: ChannelSetupError } {
  const env: Record<string, string> = {};
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const where = `${file}:${index + 1}`;
    const match = /^(?:export\s+)?([A-Z][A-Z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) return { ok: false, error: invalid(where, `${where} is not NAME=value (a channel variable such as CAPLO_TWILIO_AUTH_TOKEN=...)`) };
    const name = match[1]!;
    let value = match[2]!;
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) value = value.slice(1, -1);
    if (!WORKSPACE_CHANNEL_FILE_VARIABLES.has(name)) {
      return { ok: false, error: invalid(where, `${where} sets ${name}, which is not a channel variable: a workspace's channel file holds only ${[...WORKSPACE_CHANNEL_FILE_VARIABLES].join(", ")}`) };
    }
    if (name in env) return { ok: false, error: invalid(where, `${where} sets ${name} a second time: each variable once`) };
    env[name] = value;
  }
  return { ok: true, env };
}

/** A workspace's channel setting error, said with the workspace and the file it comes from. */
export function inWorkspaceFile(error: ChannelSetupError, workspaceId: string, file: string): ChannelSetupError {
  const path = error.path.startsWith(file) ? error.path : `${file}:${error.path}`;
  return { ...error, path, message: `workspace ${workspaceId} (${file}): ${error.message}` };
}
