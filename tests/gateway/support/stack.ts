// A whole server for gateway tests, started by the composition root as caplo serve's: SQLite file store, the
// shop's MCP server in memory on the real runner, the scripted model, the engine and the gateway on a free
// loopback port.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { IdentitySettings, PackageVersion } from "@caplo/shared";
import { agentRef, releaseFromVersions, workspaceOf, type AgentRelease, type InMemoryReleaseInput } from "../../../server/src/engine/release.ts";
import type { GatewayOptions } from "../../../server/src/gateway/index.ts";
import type { Model } from "../../../server/src/model/model.ts";
import { ScriptedModel, type ScriptedRule } from "../../../server/src/model/scripted.ts";
import { teamMember } from "../../../server/src/gateway/teamMembers.ts";
import { startTestServer } from "../../support/testServer.ts";
import type { Store } from "../../../server/src/store/store.ts";
import type { EventBus } from "../../../server/src/bus/eventBus.ts";
import { CANCEL } from "../../engine/support/harness.ts";
import { ORDERS, ShopBackend, shopRunner, shopVersion } from "../../engine/support/shopTools.ts";

export const ORIGIN = "https://shop.example";
export const OTHER_ORIGIN = "https://other.example";

/** The shop agent's release: the shop's tools for ORIGIN, and what a test adds (an identity, a widget). */
export const shopRelease = (version: PackageVersion, extra: Partial<InMemoryReleaseInput> = {}): AgentRelease =>
  releaseFromVersions({ agent: "shop-agent", instructions: "Help shop customers.", origins: [ORIGIN], versions: [version], ...extra });

/** Another site's agent on OTHER_ORIGIN, with the same tools. */
export const otherSiteRelease = (version: PackageVersion, extra: Partial<InMemoryReleaseInput> = {}): AgentRelease =>
  releaseFromVersions({ agent: "other-agent", instructions: "Another site.", origins: [OTHER_ORIGIN], versions: [version], ...extra });

/** Identity tokens signed HS256 with the secret named `secret` (the gateway's `secrets` gives its value), at most 10 minutes old. */
export const hs256Identity = (secret: string, audience?: string): IdentitySettings => ({ algorithm: "HS256", secret, maxTokenAgeSeconds: 600, defaultLevel: "low", ...(audience && { audience }) });

export const SHOP_RULES: ScriptedRule[] = [
  { when: /cancel (SO-\d{4})/i, replies: [{ text: "Please review.", toolCalls: [{ ...CANCEL(ORDERS.applied), args: { ...CANCEL(ORDERS.applied).args, orderId: "$1" } }] }] },
  { when: /order (SO-\d{4})/i, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: "Your order is on its way." }] },
  { when: "hello", replies: [{ text: "Hi! How can I help?" }] },
  { whenNote: /outcome: applied/, replies: [{ text: "Done: your order is cancelled." }] },
];

/**
 * "slowly, order SO-n": the read answers at once and the model then writes its answer slowly (its first word,
 * a pause, the rest), so a test can kill the process while the read's step is held, not yet stored.
 */
export const SLOW_ANSWER = "Your order is on its way, slowly.";
export const SLOW_RULE: ScriptedRule = { when: /slowly, order (SO-\d{4})/i, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: SLOW_ANSWER, pauseMs: 2_000 }] };

export type StackOptions = {
  dir?: string;
  backendFile?: string;
  rules?: ScriptedRule[];
  gateway?: Partial<GatewayOptions>;
  releases?: (version: ReturnType<typeof shopVersion>) => AgentRelease[];
  statusCheckBaseMs?: number;
  checkPollMs?: number;
  nodeId?: string;
  /** A model of the test's own instead of the scripted rules (for example one that writes slowly). */
  model?: Model;
  /** The store instead of a SQLite file in `dir` (for example a PostgreSQL schema two nodes share); migrated here. */
  store?: () => Store;
  /** The event bus between nodes (for example a MemoryBus on a hub two stacks share); default one of its own. */
  bus?: EventBus;
  /** The engine's clock (when each event is stored), for a conversation that spans days. */
  now?: () => number;
  /** CAPLO_* settings besides the stack's own, as `caplo serve` reads them from the environment. */
  env?: Record<string, string>;
};

export async function startStack(options: StackOptions = {}) {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "caplo-gateway-"));
  const backend = new ShopBackend(options.backendFile);
  const { runner } = shopRunner(backend);
  const version = shopVersion();
  const releases = options.releases?.(version) ?? [shopRelease(version), otherSiteRelease(version)];
  // Started by the composition root, as caplo serve starts (app/server.ts), with the test's parts: stopped
  // last-first, and a start that fails part way leaves nothing running. The console's remote review keeps
  // versions beside the releases (DIR/releases), as caplo serve's.
  const server = await startTestServer(
    dir,
    {
      agents: releases.map((release) => agentRef(workspaceOf(release), release.agent)),
      nodeId: options.nodeId ?? "test-node",
      statusCheckBaseMs: options.statusCheckBaseMs ?? 5000,
      // Tests and benchmarks open many sockets from 127.0.0.1: the per-address limits are tested on their own.
      env: { CAPLO_WIDGET_SOCKETS_PER_ADDRESS: "100000", CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE: "1000000", ...options.env },
      runner,
      given: {
        ...(options.store && { store: options.store() }),
        ...(options.bus && { bus: options.bus }),
        releases,
        model: options.model ?? new ScriptedModel(options.rules ?? SHOP_RULES, { fallback: "I can help with orders." }),
        engine: { checkPollMs: options.checkPollMs ?? 1000, ...(options.now && { now: options.now }) },
        // The team members are this gateway's own, not recorded in the store: a start records configured
        // members with audit entries, which the tests of the audit would see.
        gateway: { teamMembers: [teamMember("ana", "team-secret-token"), teamMember("ben", "ben-secret-token")], ...options.gateway },
      },
    },
    !options.dir,
  );
  const { store, engine, gateway } = server;
  const port = new URL(server.url).port;
  return {
    dir,
    store,
    backend,
    runner,
    engine,
    gateway,
    releases: server.releases,
    base: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/v1/ws`,
    close: async () => {
      await server.close();
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type Stack = Awaited<ReturnType<typeof startStack>>;
