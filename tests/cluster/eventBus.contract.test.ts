// One contract for every EventBus transport (in-process, Redis, PostgreSQL), run against the real
// servers on this machine; the fault cases take away a Redis of the test's own (killed and restarted)
// and, for PostgreSQL, the bus's path to the shared server (a TCP proxy that is cut and restored).
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BUS_CONVERSATION_ID_MAX, MemoryBus, MemoryHub, type BusNotice, type EventBus, type LatestSeqs } from "../../server/src/bus/index.ts";
import { PostgresBus } from "../../server/src/bus/postgresBus.ts";
import { RedisBus } from "../../server/src/bus/redisBus.ts";
import { RedisServer } from "./redisServer.ts";
import { TcpProxy } from "./tcpProxy.ts";
import { REDIS_SERVER_ON_PATH, REDIS_SKIP_REASON, TEST_DATABASE_URL, TEST_REDIS_URL, testPg } from "../support/services.ts";

const REDIS_URL = TEST_REDIS_URL ?? "";
const PG_HOST = { host: testPg().host, port: testPg().port };
/** The test database's URL through another port on the same host (the TCP proxy's). */
const pgUrl = (port: number) => {
  const url = new URL(TEST_DATABASE_URL);
  url.port = String(port);
  return url.toString();
};
const RUN = randomUUID().slice(0, 8);
const FAST = { pollIntervalMs: 50, reconnectMinMs: 20, reconnectMaxMs: 200 };

/**
 * What the engine does, in miniature: events are appended to a store first (here a map of the highest
 * seq per conversation, which is all the bus ever asks of a store), then announced on the bus.
 */
class SeqStore {
  #latest = new Map<string, number>();
  /** How often a bus asked (only while degraded or catching up). */
  polls = 0;
  append(conversationId: string): number {
    const seq = (this.#latest.get(conversationId) ?? 0) + 1;
    this.#latest.set(conversationId, seq);
    return seq;
  }
  latestSeqs: LatestSeqs = async (ids) => {
    this.polls += 1;
    return new Map(ids.flatMap((id) => (this.#latest.has(id) ? [[id, this.#latest.get(id)!] as const] : [])));
  };
}

/** Everything one listener saw, and a way to wait for a seq. */
class Inbox {
  readonly seen: number[] = [];
  readonly listener = (_id: string, notice: BusNotice) => void this.seen.push(notice.seq);
  get highest(): number {
    return Math.max(0, ...this.seen);
  }
}

async function waitFor(what: string, predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Let in-flight notices land, so a test can state that something did NOT arrive. */
async function settle(bus: EventBus, other: EventBus): Promise<void> {
  // A marker published after the notices under test arrives after them (one ordered connection).
  const marker = `marker-${randomUUID()}`;
  const inbox = new Inbox();
  const off = other.subscribe(marker, inbox.listener);
  await off.ready;
  await bus.publish(marker, { seq: 1 });
  await waitFor("the marker notice", () => inbox.seen.length > 0);
  off();
}

type Faults = {
  /** Open a bus whose transport the test can take away. */
  open(store: SeqStore, pollIntervalMs?: number): EventBus;
  down(): Promise<void>;
  up(): Promise<void>;
  dispose(): Promise<void>;
};

type Transport = {
  name: "memory" | "redis" | "postgres";
  /** Two nodes of one deployment on the machine's shared servers. */
  pair(store: SeqStore): [EventBus, EventBus];
  faults?: () => Promise<Faults>;
};

const transports: Transport[] = [
  {
    name: "memory",
    pair: () => {
      const hub = new MemoryHub();
      return [new MemoryBus({ hub }), new MemoryBus({ hub })];
    },
  },
  {
    name: "redis",
    pair: (store) => {
      const prefix = `caplo-test-${RUN}`;
      const open = () => new RedisBus({ url: REDIS_URL, prefix, latestSeqs: store.latestSeqs, ...FAST });
      return [open(), open()];
    },
    // Killing and restarting a Redis of the test's own needs redis-server on the PATH.
    faults: !REDIS_SERVER_ON_PATH ? undefined : async () => {
      const server = await RedisServer.start();
      return {
        open: (store, pollIntervalMs = FAST.pollIntervalMs) =>
          new RedisBus({ url: server.url, prefix: `caplo-test-${RUN}`, latestSeqs: store.latestSeqs, ...FAST, pollIntervalMs }),
        down: () => server.kill(),
        up: () => server.start(),
        dispose: () => server.kill(),
      };
    },
  },
  {
    name: "postgres",
    pair: (store) => {
      const channel = `caplo_test_${RUN}`;
      const open = () => new PostgresBus({ connectionString: pgUrl(PG_HOST.port), channel, latestSeqs: store.latestSeqs, ...FAST });
      return [open(), open()];
    },
    faults: async () => {
      const proxy = await TcpProxy.start(PG_HOST);
      return {
        open: (store, pollIntervalMs = FAST.pollIntervalMs) =>
          new PostgresBus({ connectionString: pgUrl(proxy.port), channel: `caplo_test_${RUN}`, latestSeqs: store.latestSeqs, connectTimeoutMs: 500, ...FAST, pollIntervalMs }),
        down: () => proxy.stop(),
        up: () => proxy.start(),
        dispose: () => proxy.stop(),
      };
    },
  },
];

if (!TEST_REDIS_URL) describe.skip(`EventBus over redis: ${REDIS_SKIP_REASON}`, () => it("is not run", () => undefined));
else if (!REDIS_SERVER_ON_PATH) console.warn(`EventBus over redis, when the transport is lost: ${REDIS_SKIP_REASON}`);

describe.each(transports.filter((transport) => transport.name !== "redis" || TEST_REDIS_URL))("EventBus over $name", (transport) => {
  let store: SeqStore;
  let a: EventBus;
  let b: EventBus;
  const id = () => `conv-${randomUUID()}`;

  beforeAll(async () => {
    store = new SeqStore();
    [a, b] = transport.pair(store);
    await waitFor("both nodes healthy", () => a.health().state === "healthy" && b.health().state === "healthy");
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  it("delivers a notice published on one node to a subscriber on another", async () => {
    const conversation = id();
    const inbox = new Inbox();
    const off = b.subscribe(conversation, inbox.listener);
    await off.ready;
    const result = await a.publish(conversation, { seq: store.append(conversation) });
    expect(result).toEqual({ ok: true });
    await waitFor("seq 1 on node b", () => inbox.highest === 1);
    off();
  });

  it("delivers to the publishing node's own subscribers", async () => {
    const conversation = id();
    const inbox = new Inbox();
    const off = a.subscribe(conversation, inbox.listener);
    await off.ready;
    await a.publish(conversation, { seq: store.append(conversation) });
    await waitFor("seq 1 on node a", () => inbox.highest === 1);
    await settle(a, a);
    expect(inbox.seen).toEqual([1]); // the transport's echo of a local notice is not delivered again
    off();
  });

  it("hands each listener a seq once and never an older seq after a newer one", async () => {
    const conversation = id();
    const first = new Inbox();
    const second = new Inbox();
    const offFirst = b.subscribe(conversation, first.listener);
    const offSecond = b.subscribe(conversation, second.listener);
    await Promise.all([offFirst.ready, offSecond.ready]);
    for (const seq of [1, 2, 2, 5, 3, 5]) await a.publish(conversation, { seq });
    await waitFor("seq 5", () => first.highest === 5 && second.highest === 5);
    await settle(a, b);
    expect(first.seen).toEqual([1, 2, 5]);
    expect(second.seen).toEqual([1, 2, 5]);
    offFirst();
    offSecond();
  });

  it("stops delivering to a listener once it unsubscribes, and keeps delivering to the others", async () => {
    const conversation = id();
    const leaving = new Inbox();
    const staying = new Inbox();
    const offLeaving = b.subscribe(conversation, leaving.listener);
    const offStaying = b.subscribe(conversation, staying.listener);
    await Promise.all([offLeaving.ready, offStaying.ready]);
    await a.publish(conversation, { seq: 1 });
    await waitFor("seq 1 to both", () => leaving.highest === 1 && staying.highest === 1);
    offLeaving();
    offLeaving(); // idempotent
    await a.publish(conversation, { seq: 2 });
    await waitFor("seq 2 to the one staying", () => staying.highest === 2);
    await settle(a, b);
    expect(leaving.seen).toEqual([1]);
    offStaying();
  });

  it("stops delivering a conversation to a node once its last listener unsubscribed", async () => {
    const conversation = id();
    const inbox = new Inbox();
    const off = b.subscribe(conversation, inbox.listener);
    await off.ready;
    off();
    await a.publish(conversation, { seq: 1 });
    await settle(a, b);
    expect(inbox.seen).toEqual([]);
    // And subscribing again works (the Redis transport unsubscribed and subscribes anew).
    const again = b.subscribe(conversation, inbox.listener);
    await again.ready;
    await a.publish(conversation, { seq: 2 });
    await waitFor("seq 2 after subscribing again", () => inbox.highest === 2);
    again();
  });

  it("delivers a conversation's notices only to that conversation's listeners", async () => {
    const mine = id();
    const other = id();
    const inbox = new Inbox();
    const off = b.subscribe(mine, inbox.listener);
    await off.ready;
    await a.publish(other, { seq: 7 });
    await a.publish(mine, { seq: 1 });
    await waitFor("seq 1", () => inbox.highest === 1);
    await settle(a, b);
    expect(inbox.seen).toEqual([1]);
    off();
  });

  it("refuses an invalid notice with a code and path, at the id and seq boundaries", async () => {
    const at = (length: number) => "c".repeat(length);
    expect(await a.publish(at(BUS_CONVERSATION_ID_MAX), { seq: 1 })).toEqual({ ok: true });
    expect(await a.publish(at(BUS_CONVERSATION_ID_MAX + 1), { seq: 1 })).toMatchObject({ ok: false, error: { code: "bus_notice_invalid", path: "conversationId" } });
    expect(await a.publish("", { seq: 1 })).toMatchObject({ ok: false, error: { code: "bus_notice_invalid", path: "conversationId" } });
    expect(await a.publish("has space", { seq: 1 })).toMatchObject({ ok: false, error: { code: "bus_notice_invalid", path: "conversationId" } });
    expect(await a.publish(id(), { seq: 0 })).toMatchObject({ ok: false, error: { code: "bus_notice_invalid", path: "notice.seq" } });
    expect(await a.publish(id(), { seq: 1.5 })).toMatchObject({ ok: false, error: { code: "bus_notice_invalid", path: "notice.seq" } });
    const extra = { seq: 1, event: "no payloads on the bus" } as unknown as BusNotice;
    expect(await a.publish(id(), extra)).toMatchObject({ ok: false, error: { code: "bus_notice_invalid", path: "notice" } });
  });

  it("keeps other listeners going when one listener throws", async () => {
    const conversation = id();
    const errors: string[] = [];
    const hub = transport.name === "memory" ? new MemoryHub() : undefined;
    // A bus of its own, to capture listener errors instead of printing them.
    const onListenerError = (error: unknown) => void errors.push(String(error));
    const bus: EventBus = hub ? new MemoryBus({ hub, onListenerError }) : transport.name === "redis"
      ? new RedisBus({ url: REDIS_URL, prefix: `caplo-test-${RUN}`, latestSeqs: store.latestSeqs, onListenerError, ...FAST })
      : new PostgresBus({ connectionString: pgUrl(PG_HOST.port), channel: `caplo_test_${RUN}`, latestSeqs: store.latestSeqs, onListenerError, ...FAST });
    await waitFor("healthy", () => bus.health().state === "healthy");
    const inbox = new Inbox();
    const offBad = bus.subscribe(conversation, () => {
      throw new Error("listener bug");
    });
    const offGood = bus.subscribe(conversation, inbox.listener);
    await Promise.all([offBad.ready, offGood.ready]);
    await bus.publish(conversation, { seq: 1 });
    await waitFor("seq 1 to the good listener", () => inbox.highest === 1);
    expect(errors).toEqual(["Error: listener bug"]);
    await bus.close();
  });

  if (transport.name !== "memory") {
    it("finds an event whose notice was never sent by a look at the store while healthy (the safety poll)", async () => {
      const options = { latestSeqs: store.latestSeqs, ...FAST, safetyPollMs: 1_000 };
      const bus: EventBus = transport.name === "redis"
        ? new RedisBus({ url: REDIS_URL, prefix: `caplo-test-${RUN}`, ...options })
        : new PostgresBus({ connectionString: pgUrl(PG_HOST.port), channel: `caplo_test_${RUN}`, ...options });
      try {
        await waitFor("healthy", () => bus.health().state === "healthy");
        const conversation = id();
        const inbox = new Inbox();
        const off = bus.subscribe(conversation, inbox.listener);
        await off.ready;
        store.append(conversation); // stored by a node whose notice never left it
        await waitFor("seq 1 from the safety poll", () => inbox.highest === 1);
        expect(bus.health()).toMatchObject({ state: "healthy", polling: false });
        off();
      } finally {
        await bus.close();
      }
    });
  }

  it("refuses to publish after close and reports itself closed", async () => {
    const [c] = transport.pair(store);
    await waitFor("healthy", () => c.health().state === "healthy");
    await c.close();
    await c.close(); // idempotent
    expect(c.health()).toMatchObject({ state: "closed", transport: transport.name, polling: false });
    expect(await c.publish(id(), { seq: 1 })).toMatchObject({ ok: false, error: { code: "bus_closed" } });
  });

  if (transport.faults) describe("when the transport is lost", () => {
    let faults: Faults;
    let x: EventBus;
    let y: EventBus;
    let faultStore: SeqStore;
    const healths: string[] = [];

    beforeAll(async () => {
      faults = await transport.faults!();
      faultStore = new SeqStore();
      x = faults.open(faultStore);
      y = faults.open(faultStore);
      await waitFor("both nodes healthy", () => x.health().state === "healthy" && y.health().state === "healthy");
    });
    afterEach(() => void healths.splice(0));
    afterAll(async () => {
      await Promise.all([x?.close(), y?.close()]);
      await faults?.dispose();
    });

    it("reports degraded, still delivers by polling the store, and recovers when the transport returns", async () => {
      const conversation = id();
      const inbox = new Inbox();
      const off = y.subscribe(conversation, inbox.listener);
      await off.ready;
      await x.publish(conversation, { seq: faultStore.append(conversation) });
      await waitFor("seq 1 over the transport", () => inbox.highest === 1);

      await faults.down();
      await waitFor("both nodes degraded", () => x.health().state === "degraded" && y.health().state === "degraded");
      expect(y.health()).toMatchObject({ transport: transport.name, state: "degraded", polling: true });
      expect(y.health().reason).toBeTruthy();

      // The engine appends to the store, then publishes: the notice is lost, the event is not.
      const seq = faultStore.append(conversation);
      const result = await x.publish(conversation, { seq });
      expect(result).toMatchObject({ ok: false, error: { code: "bus_unavailable" } });
      await waitFor("seq 2 by polling while the transport is down", () => inbox.highest === 2);
      expect(y.health().state).toBe("degraded");

      // A conversation subscribed during the outage is covered by polling as well.
      const late = id();
      const lateInbox = new Inbox();
      const offLate = y.subscribe(late, lateInbox.listener);
      await offLate.ready;
      faultStore.append(late);
      await waitFor("the late conversation by polling", () => lateInbox.highest === 1);

      await faults.up();
      await waitFor("both nodes healthy again", () => x.health().state === "healthy" && y.health().state === "healthy", 10_000);
      expect(y.health()).toMatchObject({ state: "healthy", polling: false });

      // Delivered over the transport again: this seq is not in the store, so polling could not find it.
      expect(await x.publish(conversation, { seq: 3 })).toEqual({ ok: true });
      await waitFor("seq 3 over the reconnected transport", () => inbox.highest === 3);
      expect(await x.publish(late, { seq: 2 })).toEqual({ ok: true });
      await waitFor("the late conversation over the transport", () => lateInbox.highest === 2);
      off();
      offLate();
    });

    it("listens over the transport for conversations subscribed while it was reconnecting", async () => {
      await faults.down();
      await waitFor("degraded", () => y.health().state === "degraded");
      const subscriptions: { conversation: string; inbox: Inbox; off: () => void }[] = [];
      const add = () => {
        const conversation = id();
        const inbox = new Inbox();
        subscriptions.push({ conversation, inbox, off: y.subscribe(conversation, inbox.listener) });
      };
      add();
      await faults.up();
      // Keep subscribing (and dropping every third) until the node is healthy again.
      while (y.health().state !== "healthy") {
        add();
        if (subscriptions.length % 3 === 0) subscriptions.splice(subscriptions.length - 2, 1)[0]!.off();
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await waitFor("node x healthy", () => x.health().state === "healthy", 10_000);
      // Not in the store: only the transport can bring these.
      for (const { conversation } of subscriptions) expect(await x.publish(conversation, { seq: 1 })).toEqual({ ok: true });
      await waitFor("every subscription made during the reconnect", () => subscriptions.every(({ inbox }) => inbox.highest === 1));
      for (const { off } of subscriptions) off();
    });

    it("catches up on events stored while it was down as soon as it reconnects", async () => {
      // A node that polls only once a minute while degraded: what it receives before then came from
      // the look at the store it takes when the transport returns.
      const slowStore = new SeqStore();
      const slow = faults.open(slowStore, 60_000);
      try {
        await waitFor("healthy", () => slow.health().state === "healthy");
        const conversation = id();
        const inbox = new Inbox();
        const off = slow.subscribe(conversation, inbox.listener);
        await off.ready;
        await faults.down();
        await waitFor("degraded", () => slow.health().state === "degraded");
        await waitFor("the first degraded poll", () => slowStore.polls >= 1);
        const pollsBefore = slowStore.polls;
        slowStore.append(conversation); // stored while down; its notice never went anywhere
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(inbox.seen).toEqual([]); // the next degraded poll is a minute away
        expect(slowStore.polls).toBe(pollsBefore);
        await faults.up();
        await waitFor("healthy again", () => slow.health().state === "healthy", 10_000);
        await waitFor("seq 1 from the catch-up", () => inbox.highest === 1);
        off();
      } finally {
        await slow.close();
      }
      // The shared pair recovers too (the next test in this file relies on nothing else).
      await waitFor("both nodes healthy again", () => x.health().state === "healthy" && y.health().state === "healthy", 10_000);
    });
  });
});
