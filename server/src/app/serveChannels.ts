// The messaging channels of a server, per workspace: the default workspace's from the server's own variables,
// every other workspace's from its file in CAPLO_WORKSPACE_CHANNELS (channels/workspaceChannels.ts). Each is
// checked (credentials, and every agent that would answer served and listing the channel, in that workspace),
// then mounted with its own adapters, its own webhooks (/webhooks/@<workspace>/<platform>) and its own channel
// state (a SQLite file, or a PostgreSQL schema, of its own), so nothing of one workspace's channels is read or
// processed by another's. `caplo serve --check-channels` runs the checks alone (checkChannels).
import { readFileSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import { DEFAULT_WORKSPACE } from "@caplo/shared";
import { readServedReleases } from "../agents/servedReleases.ts";
import {
  channelAgentProblems,
  inWorkspaceFile,
  mountChannels,
  parseChannelFile,
  parseWorkspaceChannels,
  readChannelSettings,
  webhookBasePath,
  webhookUrls,
  WORKSPACE_CHANNELS_VARIABLE,
  type ChannelSettings,
  type ChannelSetupError,
  type MountedChannels,
} from "../channels/channelSetup.ts";
import { PostgresInboxStore } from "../channels/inbox/index.ts";
import type { ChannelAgentConfig, Platform } from "../channels/ports.ts";
import type { EngineView } from "../channels/enginePort.ts";
import type { RouteRegistry } from "../channels/routes.ts";
import { SCHEMA_NAME_PATTERN } from "../cluster/migrationLock.ts";
import { parseAgentRef } from "../engine/release.ts";

/** One workspace's channels as read: its settings and where its webhooks are. */
export type WorkspaceChannels = {
  workspaceId: string;
  settings: ChannelSettings;
  basePath: string;
  /** The agent (its name in the workspace) of each platform without a per-account map (workspaceDefaultAgent). */
  defaultAgents: Partial<Record<Platform, string>>;
  /** Where a workspace other than the default one has its channel variables. */
  file?: string;
};

const PLATFORMS: Platform[] = ["whatsapp", "messenger", "instagram"];

/** What the channel checks need of a served release: its agent, its workspace (absent: default) and its agent.yaml. */
export type ServedAgent = { agent: string; workspaceId?: string; config: ChannelAgentConfig };

/**
 * The agent (its name in the workspace) a platform without a per-account map is answered by:
 * CAPLO_<PLATFORM>_AGENT of the workspace's variables, else the first --agent of that workspace.
 */
export function workspaceDefaultAgent(agents: readonly string[], env: Record<string, string | undefined>, workspaceId: string, platform: string): string | undefined {
  return env[`CAPLO_${platform.toUpperCase()}_AGENT`] ?? agents.map(parseAgentRef).find((ref) => ref.workspaceId === workspaceId)?.agent;
}

/** A workspace's agent.yaml by name: only its own releases (two workspaces may each have an agent `shop`). */
function configIn(releases: readonly ServedAgent[], workspaceId: string): (agent: string) => ChannelAgentConfig | undefined {
  return (agent) => releases.find((release) => (release.workspaceId ?? DEFAULT_WORKSPACE) === workspaceId && release.agent === agent)?.config;
}

/** The Meta app secrets (Messenger, Instagram) of a workspace's settings. */
const metaSecrets = (settings: ChannelSettings) => [settings.messenger?.appSecret, settings.instagram?.appSecret].filter((secret): secret is string => secret !== undefined);

/**
 * Every workspace's channels, and every agent that would answer on them served in that workspace and listing
 * the channel. Two workspaces may not share a Meta app secret: Meta's signature covers the body only, so a
 * webhook of one would verify on the other's webhook too (Twilio's covers the URL, which differs).
 */
export function readServeChannels(
  agents: readonly string[],
  env: Record<string, string | undefined>,
  releases: readonly ServedAgent[],
  readFile: (file: string) => string = (file) => readFileSync(file, "utf8"),
): { ok: true; workspaces: WorkspaceChannels[] } | { ok: false; errors: ChannelSetupError[] } {
  const sources: Array<{ workspaceId: string; env: Record<string, string | undefined>; file?: string }> = [{ workspaceId: DEFAULT_WORKSPACE, env }];
  const listed = env[WORKSPACE_CHANNELS_VARIABLE];
  if (listed !== undefined) {
    const parsed = parseWorkspaceChannels(listed);
    if (!parsed.ok) return { ok: false, errors: [parsed.error] };
    for (const { workspaceId, file } of parsed.files) {
      let text: string;
      try {
        text = readFile(file);
      } catch (error) {
        return { ok: false, errors: [{ code: "channel_config_invalid", path: WORKSPACE_CHANNELS_VARIABLE, message: `${WORKSPACE_CHANNELS_VARIABLE}: workspace ${workspaceId}'s channel file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})` }] };
      }
      const read = parseChannelFile(text, file);
      if (!read.ok) return { ok: false, errors: [inWorkspaceFile(read.error, workspaceId, file)] };
      // The server's public address is every workspace's unless its file says another.
      sources.push({ workspaceId, env: { ...(env.CAPLO_PUBLIC_URL !== undefined && { CAPLO_PUBLIC_URL: env.CAPLO_PUBLIC_URL }), ...read.env }, file });
    }
  }
  const errors: ChannelSetupError[] = [];
  const workspaces: WorkspaceChannels[] = [];
  for (const source of sources) {
    const basePath = webhookBasePath(source.workspaceId);
    const said = (error: ChannelSetupError) => (source.file ? inWorkspaceFile(error, source.workspaceId, source.file) : error);
    const read = readChannelSettings(source.env, basePath);
    if (!read.ok) {
      errors.push(...read.errors.map(said));
      continue;
    }
    const problems = channelAgentProblems(read.settings, configIn(releases, source.workspaceId), {
      agent: (platform) => workspaceDefaultAgent(agents, source.env, source.workspaceId, platform),
      variable: (platform) => (source.env[`CAPLO_${platform.toUpperCase()}_AGENT`] !== undefined ? `CAPLO_${platform.toUpperCase()}_AGENT` : "--agent"),
    });
    errors.push(...problems.map(said));
    const defaultAgents: WorkspaceChannels["defaultAgents"] = {};
    for (const platform of PLATFORMS) {
      const agent = workspaceDefaultAgent(agents, source.env, source.workspaceId, platform);
      if (agent !== undefined) defaultAgents[platform] = agent;
    }
    if (Object.keys(read.settings).length > 0) workspaces.push({ workspaceId: source.workspaceId, settings: read.settings, basePath, defaultAgents, ...(source.file && { file: source.file }) });
  }
  for (const [index, workspace] of workspaces.entries()) {
    const shared = workspaces.slice(0, index).find((other) => metaSecrets(other.settings).some((secret) => metaSecrets(workspace.settings).includes(secret)));
    if (shared) {
      errors.push({
        code: "channel_config_invalid",
        path: workspace.file ?? "CAPLO_META_APP_SECRET",
        message: `workspaces ${shared.workspaceId} and ${workspace.workspaceId} have the same Meta app secret: Meta signs only the body, so a webhook of one would be accepted by the other's; give each workspace a Meta app of its own`,
      });
    }
  }
  return errors.length ? { ok: false, errors } : { ok: true, workspaces };
}

/** The SQLite file of a workspace's channel state: the default one's, or beside it with the workspace in its name. */
export function workspaceChannelsFile(file: string, workspaceId: string): string {
  if (workspaceId === DEFAULT_WORKSPACE) return file;
  const extension = extname(file);
  return join(dirname(file), `${basename(file, extension)}@${workspaceId}${extension}`);
}

/** The PostgreSQL schema of a workspace's channel state: the server's, or `<schema>_ws_<workspace>`. */
export function workspaceChannelsSchema(schema: string, workspaceId: string): string {
  if (workspaceId === DEFAULT_WORKSPACE) return schema;
  const own = `${schema}_ws_${workspaceId.replaceAll("-", "_")}`;
  if (!SCHEMA_NAME_PATTERN.test(own)) throw Object.assign(new Error(`workspace ${workspaceId}'s channel state would be in schema ${own}, which is not a PostgreSQL name of at most 63 characters: use a shorter schema or workspace id`), { code: "channels_unavailable", path: WORKSPACE_CHANNELS_VARIABLE });
  return own;
}

/**
 * Mounts every workspace's channels on the gateway, each with its own store; on a failure the ones mounted
 * are closed and the error thrown. `postgres`: the channel state is shared by the nodes on that database.
 */
export async function mountWorkspaceChannels(options: {
  workspaces: readonly WorkspaceChannels[];
  releases: readonly ServedAgent[];
  engine: EngineView;
  gateway: RouteRegistry;
  file: string;
  synchronous?: "normal" | "full";
  log?: (line: string) => void;
  postgres?: { connectionString: string; schema: string; nodeId: string };
}): Promise<MountedChannels[]> {
  const mounted: MountedChannels[] = [];
  try {
    for (const workspace of options.workspaces) {
      const { workspaceId } = workspace;
      const store = options.postgres
        ? await PostgresInboxStore.open({ connectionString: options.postgres.connectionString, schema: workspaceChannelsSchema(options.postgres.schema, workspaceId), leasesSchema: options.postgres.schema, nodeId: options.postgres.nodeId })
        : undefined;
      try {
        mounted.push(
          await mountChannels({
            ...(store && { store }),
            workspaceId,
            settings: workspace.settings,
            engine: options.engine,
            gateway: options.gateway,
            agentFor: (platform: Platform) => workspace.defaultAgents[platform],
            agentConfig: configIn(options.releases, workspaceId),
            file: workspaceChannelsFile(options.file, workspaceId),
            ...(options.synchronous && { synchronous: options.synchronous }),
            // A line of a workspace's channels says whose they are.
            ...(options.log && { log: workspaceId === DEFAULT_WORKSPACE ? options.log : (line: string) => options.log!(`[workspace ${workspaceId}] ${line}`) }),
          }),
        );
      } catch (error) {
        store?.close();
        throw error;
      }
    }
  } catch (error) {
    await Promise.all(mounted.map((channels) => channels.close()));
    throw error;
  }
  return mounted;
}

/**
 * `caplo serve --check-channels`: reads the releases and the channel variables as a start would, prints
 * every problem (variable, rule, example) or the webhook URL to enter on each platform, and starts nothing.
 */
export async function checkChannels(options: { agents: readonly string[]; releasesDir: string; env: Record<string, string | undefined> }, out: (line: string) => void = console.log): Promise<number> {
  // The releases as a start reads them (agent names, each workspace's own tool versions): what serve refuses, this does.
  const served = await readServedReleases(options);
  if (!served.ok) {
    out(`caplo serve --check-channels: ${served.error.code}${served.error.path ? ` at ${served.error.path}` : ""}: ${served.error.message}`);
    return 1;
  }
  const releases = served.releases;
  const read = readServeChannels(options.agents, options.env, releases);
  if (!read.ok) {
    for (const error of read.errors) out(`caplo serve --check-channels: ${error.code} at ${error.path}: ${error.message}`);
    return 1;
  }
  if (read.workspaces.length === 0) {
    out("caplo serve --check-channels: no messaging channel is configured (set CAPLO_TWILIO_ACCOUNT_SID, CAPLO_MESSENGER_PAGE_TOKEN or CAPLO_INSTAGRAM_TOKEN and the rest; docs/channels.md)");
    return 0;
  }
  for (const workspace of read.workspaces) {
    const webhooks = webhookUrls(workspace.settings, workspace.basePath);
    const whose = workspace.workspaceId === DEFAULT_WORKSPACE ? "" : ` of workspace ${workspace.workspaceId}`;
    out(`channels${whose} ready: ${webhooks.map((w) => w.platform).join(", ")}. Enter these webhook URLs:`);
    for (const webhook of webhooks) out(`  ${webhook.platform}: ${webhook.url}\n    in ${webhook.where}`);
  }
  return 0;
}
