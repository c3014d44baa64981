// The webhook answers once the event is stored, never after the agent: processing happens later, from the
// store. With the engine stuck, a signed webhook still gets its 200 and the event waits in the inbox.
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { adapterCases, metaSigned } from "@caplo/adapters/testkit";
import { ChannelService } from "./channelService.ts";
import { quietPort } from "./testing/quietPort.ts";
import { SqliteInboxStore } from "./inbox/index.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe("webhook answer", () => {
  it("is 200 as soon as the event is stored, while the engine has not even opened the conversation; released, the event is processed once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "caplo-webhook-"));
    const store = new SqliteInboxStore(join(dir, "channels.db"));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const received: string[] = [];
    const stuckPort = quietPort({
      openConversation: async () => {
        await gate;
        return { conversationId: "conv-1" };
      },
      receive: async (_id, inbound) => {
        received.push(inbound.type === "message" ? inbound.text : inbound.type);
        return { ok: true };
      },
    });
    const messenger = adapterCases().find((c) => c.name === "messenger")!.adapter;
    const service = new ChannelService({ store, port: stuckPort, adapters: [messenger], log: () => {} });
    cleanups.push(() => {
      service.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const raw = Buffer.from(JSON.stringify({ object: "page", entry: [{ id: "1", time: 1, messaging: [{ sender: { id: "42" }, recipient: { id: "1" }, timestamp: 1, message: { mid: "m_stuck_1", text: "hello" } }] }] }));
    const signed = metaSigned(raw);
    const req = { method: "POST", url: "/webhooks/messenger", headers: signed.headers } as unknown as IncomingMessage;
    const answer = await service.webhook("messenger")(req, raw);
    expect(answer.status).toBe(200);
    expect(received).toEqual([]);
    const rows = await store.listInbound();
    expect(rows.map((r) => [r.messageId, r.state === "received" || r.state === "processing"])).toEqual([["m_stuck_1", true]]);
    // The platform's retry of the same event meanwhile is answered 200 too and stores nothing new.
    expect((await service.webhook("messenger")(req, raw)).status).toBe(200);
    expect(await store.listInbound()).toHaveLength(1);
    release();
    await service.idle();
    expect(received).toEqual(["hello"]);
    expect((await store.listInbound()).map((r) => r.state)).toEqual(["done"]);
  });
});
