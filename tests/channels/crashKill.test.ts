// Crash replay with a real process death: a process running the engine and the channel glue is killed
// (SIGKILL) after the engine accepted a Messenger message and answered it, before the inbox row was marked
// done. A new process on the same SQLite files replays the row: no second turn, no second reply.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createMessengerAdapter, MESSENGER_CAPABILITIES } from "@caplo/adapters/messenger/index";
import { APP_SECRET, VERIFY_TOKEN } from "@caplo/adapters/testkit";
import { ChannelService } from "../../server/src/channels/channelService.ts";
import { EnginePort } from "../../server/src/channels/enginePort.ts";
import { SqliteInboxStore } from "../../server/src/channels/inbox/index.ts";
import { engineHarness } from "../engine/support/harness.ts";
import { ALL_CHANNELS, agentConfigOf } from "./support.ts";
import { startFakeGraph, type FakeGraph } from "./fakeGraph.ts";
import { MESSENGER_RULES } from "./platformRules.ts";
import { CRASH_RULES } from "./testing/crashShared.ts";
import { RUN_BUNDLED } from "../support/runBundledPath.ts";

let dir: string | undefined;
let graph: FakeGraph | undefined;
afterEach(async () => {
  await graph?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  graph = undefined;
  dir = undefined;
});

function runChild(args: string[]): Promise<{ signal: NodeJS.Signals | null; out: string }> {
  const script = fileURLToPath(new URL("./testing/crashChild.ts", import.meta.url));
  const child = spawn(process.execPath, [RUN_BUNDLED, script, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve) => child.on("exit", (_code, signal) => resolve({ signal, out })));
}

describe("crash replay after a killed process", () => {
  it("Messenger: the process is killed after the engine accepted and answered, before the row was done; the restart replays it with no second turn or reply", async () => {
    dir = mkdtempSync(join(tmpdir(), "caplo-crash-"));
    graph = await startFakeGraph(MESSENGER_RULES);
    const died = await runChild([dir, graph.url, graph.accessToken]);
    expect(died).toMatchObject({ signal: "SIGKILL", out: expect.stringContaining("dying") });
    const replies = () => graph!.sent.filter((s) => s.message?.text === "Hello there.");
    expect(replies()).toHaveLength(1);

    const h = await engineHarness({ rules: CRASH_RULES, dir, channels: ALL_CHANNELS });
    const store = new SqliteInboxStore(join(dir, "channels.db"));
    const { editableFields, forms, questions, files, pages, richText } = MESSENGER_CAPABILITIES;
    const port = new EnginePort({ engine: h.engine, agentFor: () => "shop-agent", agentConfig: agentConfigOf(h), capabilities: () => ({ editableFields, forms, questions, files, pages, richText }) });
    const adapter = createMessengerAdapter({ accessToken: graph.accessToken, graphBaseUrl: graph.url, appSecret: APP_SECRET, verifyToken: VERIFY_TOKEN });
    const service = new ChannelService({ store, port, adapters: [adapter], retry: { attempts: 2, baseMs: 1, maxMs: 2 } });
    try {
      expect((await store.listInbound("processing")).map((r) => r.messageId)).toEqual(["m_crash"]);
      await service.resume(await store.listBindings());
      await service.idle();
      await h.engine.idle();
      await service.idle();
      expect((await store.listInbound()).map((r) => [r.messageId, r.state])).toEqual([["m_crash", "done"]]);
      const conversationId = (await store.listBindings())[0]!.conversationId;
      const events = await h.events(conversationId);
      expect(events.filter((e) => e.type === "text" && e.from === "customer")).toHaveLength(1);
      expect(events.filter((e) => e.type === "text" && e.from === "agent")).toHaveLength(1);
      expect(replies()).toHaveLength(1);
    } finally {
      service.close();
      store.close();
      await h.close();
    }
  });
});
