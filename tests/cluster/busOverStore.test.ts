// Two nodes on the real PostgreSQL store and a Redis of the test's own: node A appends events and
// publishes notices, node B sends them on as a gateway connection does (read from the store after its
// cursor on every notice). Redis is killed mid-traffic and restarted; every event must reach B exactly
// once, in order.
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChannelCapabilities } from "@caplo/shared";
import { latestSeqsFromStore, type EventBus } from "../../server/src/bus/index.ts";
import { RedisBus } from "../../server/src/bus/redisBus.ts";
import { PostgresStore } from "../../server/src/store/index.ts";
import { RedisServer } from "./redisServer.ts";
import { REDIS_SERVER_ON_PATH, REDIS_SKIP_REASON, TEST_DATABASE_URL } from "../support/services.ts";

const schema = `caplo_bus_test_${randomBytes(5).toString("hex")}`;
const settings = { connectionString: TEST_DATABASE_URL, schema, max: 4 };
const capabilities: ChannelCapabilities = { editableFields: true, forms: true, questions: true, files: false, pages: false, richText: true };

/** What a gateway connection does with notices: send every stored event after the last one sent. */
class Receiver {
  readonly sent: number[] = [];
  #flushing = false;
  #again = false;
  readonly store: PostgresStore;
  readonly conversationId: string;
  constructor(store: PostgresStore, conversationId: string) {
    this.store = store;
    this.conversationId = conversationId;
  }
  async flush(): Promise<void> {
    if (this.#flushing) {
      this.#again = true;
      return;
    }
    this.#flushing = true;
    try {
      do {
        this.#again = false;
        const events = await this.store.listEvents(this.conversationId, this.sent.at(-1) ?? 0);
        for (const event of events) this.sent.push(event.seq);
      } while (this.#again);
    } finally {
      this.#flushing = false;
    }
  }
}

async function waitFor(what: string, predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// Redis is killed and restarted mid-traffic: a redis-server of the test's own.
if (!REDIS_SERVER_ON_PATH) describe.skip(`event bus over the PostgreSQL store: ${REDIS_SKIP_REASON}`, () => it("is not run", () => undefined));

describe.skipIf(!REDIS_SERVER_ON_PATH)("event bus over the PostgreSQL store", () => {
  let redis: RedisServer;
  let storeA: PostgresStore;
  let storeB: PostgresStore;
  let busA: EventBus;
  let busB: EventBus;

  beforeAll(async () => {
    redis = await RedisServer.start();
    storeA = new PostgresStore(settings);
    await storeA.migrate();
    storeB = new PostgresStore(settings);
    const prefix = `caplo-test-${randomUUID().slice(0, 8)}`;
    const fast = { pollIntervalMs: 50, reconnectMinMs: 20, reconnectMaxMs: 200, prefix, url: redis.url };
    busA = new RedisBus({ ...fast, latestSeqs: latestSeqsFromStore(storeA) });
    busB = new RedisBus({ ...fast, latestSeqs: latestSeqsFromStore(storeB) });
    await waitFor("both buses healthy", () => busA.health().state === "healthy" && busB.health().state === "healthy");
  });

  afterAll(async () => {
    await Promise.allSettled([busA?.close(), busB?.close()]);
    await redis?.kill();
    await storeA?.dropSchema();
    await Promise.allSettled([storeA?.close(), storeB?.close()]);
  });

  it("delivers every event of a conversation once and in order while Redis is killed and restarted mid-traffic", async () => {
    const conversation = await storeA.createConversation({
      id: `conv_${randomUUID()}`,
      workspaceId: "default",
      agent: "shop",
      releaseId: "rel_1",
      channel: "web",
      externalId: null,
      resumeHash: null,
      ownerId: "owner_1",
      capabilities,
      createdAt: Date.now(),
    });
    const receiver = new Receiver(storeB, conversation.id);
    const off = busB.subscribe(conversation.id, () => void receiver.flush());
    await off.ready;
    await receiver.flush();

    let failedNotices = 0;
    const emit = async (n: number) => {
      for (let i = 0; i < n; i += 1) {
        const event = await storeA.appendEvent(conversation.id, { type: "text", id: `m_${randomUUID()}`, from: "agent", text: `event ${i}` }, Date.now());
        const published = await busA.publish(conversation.id, { seq: event.seq });
        if (!published.ok) failedNotices += 1;
      }
    };

    await emit(20);
    await redis.kill();
    await waitFor("node B degraded", () => busB.health().state === "degraded");
    await emit(20); // notices fail; events are stored
    await waitFor("the events stored during the outage, by polling", () => receiver.sent.length === 40);
    await redis.start();
    await waitFor("both buses healthy again", () => busA.health().state === "healthy" && busB.health().state === "healthy");
    await emit(20);
    await waitFor("all 60 events", () => receiver.sent.length === 60);

    expect(receiver.sent).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(failedNotices).toBeGreaterThan(0); // the outage really cost notices
    off();
  });
});
