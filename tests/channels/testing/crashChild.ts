// The process that dies in the crash test: the real engine and channel glue on SQLite files in `dir`; it
// processes one stored Messenger message, lets the engine finish the turn and the reply go out, and is
// killed (SIGKILL) at the moment it would mark the inbox row done.
import { join } from "node:path";
import { createMessengerAdapter, MESSENGER_CAPABILITIES } from "@caplo/adapters/messenger/index";
import { APP_SECRET, VERIFY_TOKEN } from "@caplo/adapters/testkit";
import { ChannelService } from "../../../server/src/channels/channelService.ts";
import { EnginePort } from "../../../server/src/channels/enginePort.ts";
import type { InboxStore } from "../../../server/src/channels/ports.ts";
import { SqliteInboxStore } from "../../../server/src/channels/inbox/index.ts";
import { engineHarness } from "../../engine/support/harness.ts";
import { ALL_CHANNELS, agentConfigOf } from "../support.ts";
import { CRASH_RULES, crashEvent } from "./crashShared.ts";

const [dir, graphUrl, accessToken] = process.argv.slice(2) as [string, string, string];
const h = await engineHarness({ rules: CRASH_RULES, dir, channels: ALL_CHANNELS });
const real = new SqliteInboxStore(join(dir, "channels.db"));
const adapter = createMessengerAdapter({ accessToken, graphBaseUrl: graphUrl, appSecret: APP_SECRET, verifyToken: VERIFY_TOKEN });
const { editableFields, forms, questions, files, pages, richText } = MESSENGER_CAPABILITIES;
const port = new EnginePort({ engine: h.engine, agentFor: () => "shop-agent", agentConfig: agentConfigOf(h), capabilities: () => ({ editableFields, forms, questions, files, pages, richText }) });

const store = new Proxy(real, {
  get(target, prop) {
    if (prop === "finishInbound") {
      return async (...args: Parameters<InboxStore["finishInbound"]>) => {
        if (args[2] !== "done") return target.finishInbound(...args);
        // The engine has accepted the message: let its turn end and the reply go out, then die here.
        for (let i = 0; i < 1000; i++) {
          await h.engine.idle();
          const [binding] = await target.listBindings();
          const conversation = binding && (await h.store.getConversation(binding.conversationId));
          const answered = conversation && (await h.store.listEvents(conversation.id, 0)).some((e) => e.message.type === "text" && e.message.from === "agent");
          if (answered && binding!.cursor >= conversation.lastSeq) break;
          await new Promise((r) => setTimeout(r, 10));
        }
        process.stdout.write("dying\n");
        process.kill(process.pid, "SIGKILL");
        await new Promise(() => {});
      };
    }
    const value = Reflect.get(target, prop, target) as unknown;
    return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
  },
});
const service = new ChannelService({ store, port, adapters: [adapter], retry: { attempts: 2, baseMs: 1, maxMs: 2 } });
await real.insertInbound({ platform: "messenger", messageId: "m_crash", event: JSON.stringify(crashEvent()), receivedAt: Date.now() });
await service.drain();
