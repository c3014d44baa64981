// Turning the channels on: the adapters built from the settings (channelSettings.ts reads them from the
// environment), the glue wired to the engine, and the webhooks mounted on the gateway.
import type { ChannelAdapter } from "@caplo/adapters/adapter";
import { createInstagramAdapter, INSTAGRAM_CAPABILITIES } from "@caplo/adapters/instagram/index";
import { createMessengerAdapter, MESSENGER_CAPABILITIES } from "@caplo/adapters/messenger/index";
import type { AdapterCapabilities } from "@caplo/adapters/adapter";
import { createWhatsAppAdapter, WHATSAPP_CAPABILITIES } from "@caplo/adapters/whatsapp/index";
import type { ChannelCapabilities } from "@caplo/shared/channel";
import { ChannelService, type Retention } from "./channelService.ts";
import { storeContentCache } from "./contentCache.ts";
import { currentStatus } from "./deliveryStatus.ts";
import { EnginePort, type DeliveryView, type EngineView } from "./enginePort.ts";
import type { ChannelAgentConfig, InboxStore, OutboxRecord, Platform, TeamAlerts } from "./ports.ts";
import { registerChannelRoutes, type RouteRegistry } from "./routes.ts";
import { SqliteInboxStore } from "./inbox/index.ts";
import { routeAgent, type ChannelSettings } from "./channelSettings.ts";
import { webhookBasePath } from "./workspaceChannels.ts";
import { DEFAULT_WORKSPACE, parseWorkspaceRef, workspaceRef } from "@caplo/shared";

export { channelAgentProblems, parseAccountTokens, parseAgentRoutes, readChannelSettings, routeAgent, webhookUrls, CHANNEL_VARIABLES } from "./channelSettings.ts";
export type { AgentRoutes, ChannelSettings, ChannelSetupError, MetaSettings, WhatsAppSettings } from "./channelSettings.ts";
export { inWorkspaceFile, parseChannelFile, parseWorkspaceChannels, webhookBasePath, WORKSPACE_CHANNELS_VARIABLE } from "./workspaceChannels.ts";

export const ADAPTER_CAPABILITIES: Record<Platform, AdapterCapabilities> = {
  whatsapp: WHATSAPP_CAPABILITIES,
  messenger: MESSENGER_CAPABILITIES,
  instagram: INSTAGRAM_CAPABILITIES,
};

/** The neutral capabilities the engine is told for a platform. */
export function neutralCapabilities(platform: Platform): ChannelCapabilities {
  const { editableFields, forms, questions, files, pages, richText } = ADAPTER_CAPABILITIES[platform];
  return { editableFields, forms, questions, files, pages, richText };
}

/** The team's view of failed sends: one entry per undelivered message (its first failed part), newest first, at most 200. */
function undeliveredFor(failures: OutboxRecord[]) {
  const seen = new Set<string>();
  const out = [];
  for (const f of failures) {
    const key = `${f.platform}|${f.conversationId}|${f.seq}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ conversationId: f.conversationId, channel: f.platform, code: f.code ?? "undelivered", message: f.message ?? "Not delivered.", at: f.at });
    if (out.length === 200) break;
  }
  return out;
}

function deliveryView(record: OutboxRecord): DeliveryView {
  const statuses = record.statuses ?? [];
  const current = currentStatus(statuses);
  return {
    seq: record.seq,
    part: record.part,
    channel: record.platform,
    state: record.state,
    ...(current ? { status: current.status } : {}),
    ...(record.platformId ? { platformId: record.platformId } : {}),
    attempts: record.attempts,
    ...(record.code ? { code: record.code } : {}),
    ...(record.message ? { message: record.message } : {}),
    at: record.at,
    statuses,
  };
}

export interface MountedChannels {
  service: ChannelService;
  /** The channel state, e.g. `store.listFailures()` for messages that could not be delivered. */
  store: InboxStore & { close(): void };
  platforms: Platform[];
  /** Stops taking and sending; what is being sent finishes (CLOSE_WAIT_MS at most) before the state closes. */
  close(): Promise<void>;
}

/** How long closing the channels waits for sends under way before it closes their state under them. */
export const CLOSE_WAIT_MS = 10_000;

/**
 * Builds the configured adapters, wires the glue to the engine and mounts `/webhooks/{platform}` on the
 * gateway. `agentFor` names the agent that answers on a platform (one whose release lists the channel).
 */
export async function mountChannels(options: {
  settings: ChannelSettings;
  engine: EngineView;
  gateway: RouteRegistry;
  /**
   * The workspace whose channels these are (default `default`): the settings' agent names are its agents' names,
   * so its channels answer only with its own agents, and its webhooks are at webhookBasePath (/webhooks/@<workspace>).
   */
  workspaceId?: string;
  /** The agent (its name in the workspace) of a platform without a per-account map (settings.routes); see routeAgent. */
  agentFor: (platform: Platform) => string | undefined;
  /** The agent.yaml of each of the workspace's agents the server serves, by name: an agent answers only on the channels it lists. */
  agentConfig: (agent: string) => ChannelAgentConfig | undefined;
  /** The SQLite file of the channel state. */
  file: string;
  /** That file's durability (CAPLO_SQLITE_SYNCHRONOUS); normal by default. */
  synchronous?: "normal" | "full";
  /** The channel state shared by several nodes (PostgreSQL) instead of the SQLite file. */
  store?: InboxStore & { close(): void };
  alerts?: TeamAlerts;
  retention?: Partial<Retention>;
  /** How often stored events are looked for without a webhook (a lost node's claim ended); 5 s by default. */
  sweepMs?: number;
  /** The operator's log lines (an inbound no agent answers, a failed read); console.warn by default. */
  log?: (line: string) => void;
}): Promise<MountedChannels> {
  const store = options.store ?? new SqliteInboxStore(options.file, { ...(options.synchronous && { synchronous: options.synchronous }) });
  const adapters: ChannelAdapter[] = [];
  const { whatsapp, messenger, instagram } = options.settings;
  if (whatsapp) adapters.push(createWhatsAppAdapter({ ...whatsapp, contentCache: storeContentCache(store) }));
  if (messenger) adapters.push(createMessengerAdapter(messenger));
  if (instagram) adapters.push(createInstagramAdapter(instagram));
  const routes = options.settings.routes;
  const workspaceId = options.workspaceId ?? DEFAULT_WORKSPACE;
  const port = new EnginePort({
    engine: options.engine,
    // Names in the settings are the workspace's agents; the engine is given their references (acme/shop).
    agentFor: (platform, account) => {
      const name = routeAgent(routes, platform, account, options.agentFor);
      return name === undefined ? undefined : workspaceRef(workspaceId, name);
    },
    capabilities: neutralCapabilities,
    ...(options.log && { log: options.log }),
    // Only the workspace's own agents: another workspace's agent (or conversation) has no config here.
    agentConfig: (ref) => {
      const agent = parseWorkspaceRef(ref);
      return agent.workspaceId === workspaceId ? options.agentConfig(agent.name) : undefined;
    },
  });
  // Without a team inbox to tell, undelivered messages are at least logged (they are always in the store).
  const alerts: TeamAlerts = options.alerts ?? { alert: (a) => console.warn(`caplo channels: ${a.platform} ${a.code}${a.conversationId ? ` in ${a.conversationId}` : ""}: ${a.message}`) };
  const service = new ChannelService({
    store,
    port,
    adapters,
    alerts,
    ...(options.log && { log: options.log }),
    ...(options.retention ? { retention: options.retention } : {}),
    ...(options.settings.publicUrl ? { publicUrl: options.settings.publicUrl } : {}),
  });
  const platforms = adapters.map((a) => a.platform);
  registerChannelRoutes(options.gateway, service, platforms, webhookBasePath(workspaceId));
  // The team's follow-up list shows the messages that never reached their customer.
  const removeSource = options.engine.addUndeliveredSource?.(async () => undeliveredFor(await store.listFailures()));
  // The team API shows on each outbound event how it went out and what the platform reported since.
  const removeDeliveries = options.engine.addDeliverySource?.(async (conversationId) => (await store.listOutbox(conversationId)).map(deliveryView));
  await service.resume(await store.listBindings());
  service.startPruning();
  service.startSweeping(options.sweepMs ?? 5_000);
  return {
    service,
    store,
    platforms,
    close: async () => {
      removeSource?.();
      removeDeliveries?.();
      service.close();
      // A reply still going out (the Send API not yet answered) is recorded as sent, or failed, before the
      // state closes: a stop that closed it at once logged send_failed for a message the customer got, and
      // its record was lost. Closed, the service starts nothing new and a send's next retry gives up.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([service.idle(), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)))]);
      clearTimeout(timer);
      store.close();
    },
  };
}
