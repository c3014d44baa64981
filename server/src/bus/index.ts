// The event bus seam: the EventBus contract, and `openEventBus` choosing its transport from the
// environment (Redis if CAPLO_REDIS_URL is set, else PostgreSQL LISTEN/NOTIFY if CAPLO_DATABASE_URL is a
// PostgreSQL URL, else in-process). Transports are loaded only when chosen.
import type { BusHealth, EventBus, LatestSeqs } from "./eventBus.ts";
import type { ListenerErrorHandler } from "./localFanout.ts";
import { MemoryBus } from "./memoryBus.ts";

export * from "./eventBus.ts";
export { MemoryBus, MemoryHub } from "./memoryBus.ts";
export { latestSeqsFromStore, type ConversationSeqSource } from "./storeSeqs.ts";

export type BusSettings = {
  redisUrl?: string;
  databaseUrl?: string;
  /** The store's latest seq per conversation; required for Redis and PostgreSQL (their slower path). */
  latestSeqs?: LatestSeqs;
  pollIntervalMs?: number;
  safetyPollMs?: number;
  /** Shared by every node of a deployment: Redis channel prefix / PostgreSQL channel name. */
  namespace?: string;
  onHealthChange?: (health: BusHealth) => void;
  onListenerError?: ListenerErrorHandler;
};

export type BusConfigError = { code: "bus_config_invalid"; path: string; message: string };

/** Read CAPLO_REDIS_URL and CAPLO_DATABASE_URL (empty means unset). */
export function busSettingsFromEnv(env: NodeJS.ProcessEnv): Pick<BusSettings, "redisUrl" | "databaseUrl"> {
  const settings: Pick<BusSettings, "redisUrl" | "databaseUrl"> = {};
  if (env.CAPLO_REDIS_URL) settings.redisUrl = env.CAPLO_REDIS_URL;
  if (env.CAPLO_DATABASE_URL) settings.databaseUrl = env.CAPLO_DATABASE_URL;
  return settings;
}

function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

export async function openEventBus(settings: BusSettings): Promise<{ ok: true; bus: EventBus } | { ok: false; error: BusConfigError }> {
  const common = {
    ...(settings.pollIntervalMs !== undefined ? { pollIntervalMs: settings.pollIntervalMs } : {}),
    ...(settings.safetyPollMs !== undefined ? { safetyPollMs: settings.safetyPollMs } : {}),
    ...(settings.onHealthChange ? { onHealthChange: settings.onHealthChange } : {}),
    ...(settings.onListenerError ? { onListenerError: settings.onListenerError } : {}),
  };
  if (settings.redisUrl) {
    if (!/^rediss?:\/\//.test(settings.redisUrl)) {
      return { ok: false, error: { code: "bus_config_invalid", path: "CAPLO_REDIS_URL", message: "must start with redis:// or rediss://" } };
    }
    if (!settings.latestSeqs) return missingPoll("CAPLO_REDIS_URL");
    const { RedisBus } = await import("./redisBus.ts");
    const prefix = settings.namespace ?? "caplo";
    return { ok: true, bus: new RedisBus({ url: settings.redisUrl, latestSeqs: settings.latestSeqs, prefix, ...common }) };
  }
  if (settings.databaseUrl && isPostgresUrl(settings.databaseUrl)) {
    if (!settings.latestSeqs) return missingPoll("CAPLO_DATABASE_URL");
    const { PostgresBus } = await import("./postgresBus.ts");
    const channel = settings.namespace ?? "caplo_events";
    return { ok: true, bus: new PostgresBus({ connectionString: settings.databaseUrl, latestSeqs: settings.latestSeqs, channel, ...common }) };
  }
  return { ok: true, bus: new MemoryBus(settings.onListenerError ? { onListenerError: settings.onListenerError } : {}) };
}

function missingPoll(path: string): { ok: false; error: BusConfigError } {
  return { ok: false, error: { code: "bus_config_invalid", path, message: "a shared bus needs the store's latestSeqs to fall back on when it is down" } };
}
