// An engine on a real SQLite file, the shop's real MCP server (in memory, on the real runner), the scripted
// model and a manual clock, started by the composition root as a server (its gateway listening at `base`),
// with helpers that read back what the customer and the model were told.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChannelCapabilities, Outbound, OutboundOf } from "@caplo/shared";
import { releaseFromVersions, type AgentRelease } from "../../../server/src/engine/release.ts";
import type { GatewayOptions } from "../../../server/src/gateway/gateway.ts";
import { ScriptedModel, type ScriptedRule } from "../../../server/src/model/scripted.ts";
import { startTestServer } from "../../support/testServer.ts";
import { ShopBackend, shopRunner, shopVersion } from "./shopTools.ts";

export const WEB: ChannelCapabilities = { editableFields: true, forms: true, questions: true, files: true, pages: true, richText: true };
export const WHATSAPP: ChannelCapabilities = { editableFields: false, forms: false, questions: true, files: true, pages: false, richText: false };

export type HarnessOptions = {
  rules: ScriptedRule[];
  capabilities?: ChannelCapabilities;
  channels?: AgentRelease["config"]["channels"];
  dir?: string;
  backend?: ShopBackend;
  /** How long a tool's question waits for its answer (EngineOptions.elicitTimeoutMs). */
  elicitTimeoutMs?: number;
  /** When a running read is shown working (EngineOptions.progressShownAfterMs). */
  progressShownAfterMs?: number;
  /** The gateway's options over the server's (for example the team's members). */
  gateway?: Partial<GatewayOptions>;
};

export async function engineHarness(options: HarnessOptions) {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "caplo-engine-"));
  const clock = { now: Date.parse("2026-03-01T10:00:00.000Z") };
  const backend = options.backend ?? new ShopBackend();
  const { runner, requests } = shopRunner(backend);
  const release = releaseFromVersions({
    agent: "shop-agent",
    instructions: "You help customers of the shop.",
    origins: ["https://shop.example"],
    versions: [shopVersion()],
    ...(options.channels && { channels: options.channels }),
  });
  // Started by the composition root, as caplo serve starts (app/server.ts), on its start/stop stack: stopped
  // last-first. The engine runs no timers: a test runs what is due with `advance`.
  const server = await startTestServer(
    dir,
    {
      agents: [release.agent],
      nodeId: "node-test",
      statusCheckBaseMs: 1000,
      env: {},
      runner,
      given: {
        releases: [release],
        model: new ScriptedModel(options.rules, { fallback: "I can help with orders." }),
        engine: {
          now: () => clock.now,
          scheduler: false,
          ...(options.elicitTimeoutMs !== undefined && { elicitTimeoutMs: options.elicitTimeoutMs }),
          ...(options.progressShownAfterMs !== undefined && { progressShownAfterMs: options.progressShownAfterMs }),
        },
        ...(options.gateway && { gateway: options.gateway }),
      },
    },
    !options.dir,
  );
  const { store, engine } = server;
  const conversation = await engine.openConversation({ agent: "shop-agent", channel: "web", capabilities: options.capabilities ?? WEB, ownerId: "owner-1" });

  const events = async (conversationId = conversation.id): Promise<Outbound[]> => (await store.listEvents(conversationId, 0)).map((event) => event.message);
  const ofType = async <T extends Outbound["type"]>(type: T, conversationId = conversation.id): Promise<OutboundOf<T>[]> =>
    (await events(conversationId)).filter((message): message is OutboundOf<T> => message.type === type);

  return {
    dir,
    clock,
    store,
    backend,
    runner,
    /** Every tool call and status check that reached the shop's server, in order. */
    requests,
    release,
    engine,
    /** The gateway's address (http://127.0.0.1:PORT). */
    base: server.url,
    conversation,
    events,
    ofType,
    say: (text: string, conversationId = conversation.id, owner = "owner-1") => engine.handle(conversationId, owner, { type: "message", text }),
    confirm: (proposalId: string, edits?: Record<string, string>, conversationId = conversation.id, owner = "owner-1") =>
      engine.handle(conversationId, owner, { type: "confirm", proposalId, ...(edits && { edits }) }),
    decline: (proposalId: string) => engine.handle(conversation.id, "owner-1", { type: "decline", proposalId }),
    lastReview: async () => (await ofType("review")).at(-1)!,
    modelNotes: async (conversationId = conversation.id) =>
      (await store.listTranscript(conversationId)).map((entry) => entry.message).filter((message) => message.role === "tool" || message.role === "system").map((message) => message.content),
    /** Advance the manual clock and run whatever status checks are due. */
    advance: async (ms: number) => {
      clock.now += ms;
      return engine.runDueChecks();
    },
    close: async () => {
      await server.close();
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type Harness = Awaited<ReturnType<typeof engineHarness>>;

/** Scripted rules for the shop: customer phrases that make the model call tools. */
export const CANCEL = (orderId: string, extra: Record<string, unknown> = {}) => ({
  name: "shop__cancel_order",
  args: { orderId, reason: "Changed my mind", speed: "standard", card: "4111111111111234", ...extra },
});
