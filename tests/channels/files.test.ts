// Files a read tool returns reach messaging customers: the engine serves them at a path of this server, and
// the platform is sent the public address of that path (WhatsApp and Messenger as media, Instagram as a
// link), which the gateway answers with the file. Without a public address nothing unreachable is sent.
import { afterEach, describe, expect, it } from "vitest";
import { StaticReleases } from "../../server/src/engine/release.ts";
import { Gateway } from "../../server/src/gateway/gateway.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import type { InboxStore } from "../../server/src/channels/ports.ts";
import type { SqliteInboxStore } from "../../server/src/channels/inbox/index.ts";
import { channelBench, PUBLIC_BASE, type Bench } from "./support.ts";

const rules = [{ when: /invoice/i, replies: [{ toolCalls: [{ name: "shop__invoice", args: { orderId: ORDERS.applied } }] }, { text: "Here is your invoice." }] }];

let b: Bench | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  await b?.close();
  gateway = undefined;
  b = undefined;
});
const texts = (bench: Bench) => bench.received().map((m) => m.text);
const FILE_URL = new RegExp(`${PUBLIC_BASE.replace(/[.]/g, "\\.")}/v1/files/f_[A-Za-z0-9_-]{32}`);

describe("files on messaging channels", () => {
  for (const platform of ["whatsapp", "messenger", "instagram"] as const) {
    it(`${platform}: an invoice PDF is sent at the server's public address, which serves it`, async () => {
      b = await channelBench({ platform, rules });
      const bench = b;
      await bench.say("My invoice please");
      await bench.waitFor(() => texts(bench).includes("Here is your invoice."), "the reply");
      const url = bench.received().map((m) => FILE_URL.exec(m.text)?.[0]).find(Boolean);
      expect(url, JSON.stringify(texts(bench))).toBeDefined();
      if (platform === "whatsapp") expect(bench.twilio!.sent.find((s) => s.mediaUrls.length > 0)?.mediaUrls).toEqual([url]);
      if (platform === "messenger") expect(bench.graph!.sent.find((s) => s.message?.attachment)?.message?.attachment).toEqual({ type: "file", payload: { url, is_reusable: false } });
      // Instagram sends no PDF attachment: the file comes as a link the customer opens.
      if (platform === "instagram") expect(texts(bench).some((t) => t.endsWith(`.pdf: ${url}`))).toBe(true);
      expect(bench.violations()).toEqual([]);
      // What the platform fetches: the same path on this server (the proxy strips the public prefix).
      gateway = new Gateway({ engine: bench.h.engine, releases: new StaticReleases([bench.h.release]) });
      const { port } = await gateway.listen(0, "127.0.0.1");
      const served = await fetch(`http://127.0.0.1:${port}${url!.slice(PUBLIC_BASE.length)}`);
      expect(served.status).toBe(200);
      expect(served.headers.get("content-type")).toBe("application/pdf");
      expect((await served.text()).startsWith("%PDF-1.4")).toBe(true);
    });
  }

  it("WhatsApp without a public address: no media is attempted; the customer is told, the team alerted, the history records why", async () => {
    b = await channelBench({ platform: "whatsapp", rules, publicUrl: null });
    const bench = b;
    await bench.say("My invoice please");
    await bench.waitFor(() => texts(bench).includes("Here is your invoice."), "the reply");
    await bench.waitFor(() => texts(bench).some((t) => /^The file .+\.pdf could not be sent here\.$/.test(t)), "the customer's notice");
    expect(bench.twilio!.sent.filter((s) => s.mediaUrls.length > 0)).toEqual([]);
    expect(bench.alerts).toContainEqual(expect.objectContaining({ platform: "whatsapp", code: "file_unreachable" }));
    const conversationId = (await bench.store.listBindings())[0]!.conversationId;
    const note = await bench.waitFor(
      async () => (await bench.h.events(conversationId)).find((e) => e.type === "text" && e.from === "system" && e.id.startsWith("undelivered_")),
      "the history note",
    );
    expect(note.type === "text" && note.text).toContain("set CAPLO_PUBLIC_URL");
  });

  it("without a public address, an attempt repeated after a store failure does not alert or note the history twice", async () => {
    // Each event's first attempt to record that it was sent fails once, so every event is handled twice.
    const failedOnce = new Set<number>();
    const storeFor = (store: SqliteInboxStore): InboxStore =>
      new Proxy(store, {
        get(target, prop) {
          if (prop === "setCursor") {
            return async (...args: Parameters<InboxStore["setCursor"]>) => {
              if (!failedOnce.has(args[1])) {
                failedOnce.add(args[1]);
                throw new Error("database is locked");
              }
              return target.setCursor(...args);
            };
          }
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    b = await channelBench({ platform: "whatsapp", rules, publicUrl: null, storeFor });
    const bench = b;
    await bench.say("My invoice please");
    await bench.waitFor(() => texts(bench).some((t) => /^The file .+\.pdf could not be sent here\.$/.test(t)), "the customer's notice");
    await bench.service.idle();
    await bench.h.engine.idle();
    expect(failedOnce.size).toBeGreaterThan(1); // the store did fail, so the events were handled again
    expect(bench.alerts.filter((alert) => alert.code === "file_unreachable")).toHaveLength(1);
    const conversationId = (await bench.store.listBindings())[0]!.conversationId;
    const notes = (await bench.h.events(conversationId)).filter((e) => e.type === "text" && e.from === "system" && e.id.startsWith("undelivered_"));
    expect(notes).toHaveLength(1);
  });
});
