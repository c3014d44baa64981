// What only the PostgreSQL store does: several nodes migrating one schema at once, under its advisory lock;
// appends made at once committed together, in one statement (group commit), each still on its own.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testPg } from "../../../tests/support/services.ts";
import { PostgresStore } from "./postgresStore.ts";
import { CAPABILITIES, newConversation, text, textOf, type ConversationOverrides } from "./testing/storeHarness.ts";

describe("postgres migrations", () => {
  it("five nodes migrating a schema that does not exist yet all succeed, and each migration applies once", async () => {
    const schema = `caplo_test_${process.pid}_${randomBytes(4).toString("hex")}`;
    const settings = { ...testPg(), schema };
    const nodes = Array.from({ length: 5 }, () => new PostgresStore(settings));
    try {
      const results = await Promise.allSettled(nodes.map((node) => node.migrate()));
      expect(results.filter((result) => result.status === "rejected")).toEqual([]);
      expect(await nodes[0]!.ping()).toBe(true);
    } finally {
      await nodes[0]!.dropSchema();
      await Promise.all(nodes.map((node) => node.close()));
    }
  });
});

describe("postgres group commit", () => {
  const schema = `caplo_test_${process.pid}_${randomBytes(4).toString("hex")}`;
  let store: PostgresStore;
  /** Statements the store sent, by their first words (the store's own pool, wrapped: the real server answers). */
  let sent: string[] = [];
  const appendsSent = () => sent.filter((text) => text.startsWith("WITH c")).length;

  /** The store with every statement it sends noted in `sent`. */
  const counted = (opened: PostgresStore) => {
    const pool = (opened as unknown as { pool: { query: (...args: unknown[]) => unknown } }).pool;
    const query = pool.query.bind(pool);
    pool.query = (...args: unknown[]) => {
      const config = args[0] as string | { text: string };
      sent.push(typeof config === "string" ? config : config.text);
      return query(...args);
    };
    return opened;
  };
  beforeAll(async () => {
    store = counted(new PostgresStore({ ...testPg(), schema }));
    await store.migrate();
  });
  afterAll(async () => {
    await store.dropSchema();
    await store.close();
  });

  const open = (overrides: ConversationOverrides = {}) => newConversation(store, overrides);
  const said = async (id: string) => (await store.listEvents(id, 0)).map((event) => [event.seq, textOf(event.message)]);

  it("appends to many conversations made at once are a few statements (of 16, 8, 4, 2, 1), each append with its own seqs, row and owed turn", async () => {
    const conversations = await Promise.all(Array.from({ length: 30 }, () => open()));
    await store.append(conversations[0]!.id, { events: [text("earlier")] }, 1);
    sent = [];
    const results = await Promise.all(
      conversations.map((conversation, index) =>
        store.append(conversation.id, { events: [text(`hello ${index}`), text(`again ${index}`)], transcript: [{ role: "user", content: `hello ${index}` }], owedBy: "node-a" }, 5),
      ),
    );
    expect(appendsSent()).toBe(4); // 30 = 16 + 8 + 4 + 2
    for (const [index, conversation] of conversations.entries()) {
      const before = index === 0 ? 1 : 0;
      expect(results[index]!.events.map((event) => [event.seq, textOf(event.message)])).toEqual([
        [before + 1, `hello ${index}`],
        [before + 2, `again ${index}`],
      ]);
      expect(results[index]!.conversation).toMatchObject({ id: conversation.id, lastSeq: before + 2, lastTranscriptSeq: 1, owedTurn: { nodeId: "node-a", seq: 1 }, capabilities: CAPABILITIES });
      expect(await said(conversation.id)).toEqual([...(index === 0 ? [[1, "earlier"]] : []), [before + 1, `hello ${index}`], [before + 2, `again ${index}`]]);
      expect((await store.getConversation(conversation.id))!.owedTurn).toEqual({ nodeId: "node-a", seq: 1 });
    }
  });

  it("a conversation's appends made at once are stored in the order they were made, one group after the other", async () => {
    const a = await open();
    const b = await open();
    sent = [];
    await Promise.all([
      store.append(a.id, { events: [text("a1")] }, 1),
      store.append(b.id, { events: [text("b1")] }, 1),
      store.append(a.id, { events: [text("a2")] }, 1),
      store.append(a.id, { events: [text("a3")] }, 1),
      store.append(b.id, { events: [text("b2")] }, 1),
    ]);
    expect(await said(a.id)).toEqual([
      [1, "a1"],
      [2, "a2"],
      [3, "a3"],
    ]);
    expect(await said(b.id)).toEqual([
      [1, "b1"],
      [2, "b2"],
    ]);
    expect(appendsSent()).toBe(3); // {a1, b1}, then {a2, b2}, then a3
  });

  it("a batch PostgreSQL refuses fails on its own: the group runs again one statement per batch, and the others are stored", async () => {
    // A real refusal from the server, for one message's text only.
    const client = new pg.Client({ ...testPg(), options: `-c search_path=${schema}` });
    await client.connect();
    try {
      await client.query(`CREATE FUNCTION refuse_poison() RETURNS trigger AS $$ BEGIN IF NEW.message->>'text' = 'poison' THEN RAISE EXCEPTION 'poison refused'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`);
      await client.query("CREATE TRIGGER refuse_poison BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_poison()");
    } finally {
      await client.end();
    }
    const [x, y, z] = await Promise.all([open(), open(), open()]);
    sent = [];
    const results = await Promise.allSettled([
      store.append(x.id, { events: [text("x1")] }, 1),
      store.append(y.id, { events: [text("fine"), text("poison")] }, 1),
      store.append(z.id, { events: [text("z1")], transcript: [{ role: "user", content: "z1" }] }, 1),
    ]);
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((results[1] as PromiseRejectedResult).reason)).toContain("poison refused");
    expect(appendsSent()).toBe(4); // x and y in one statement, refused, then each on its own; z in one of its own (3 = 2 + 1)
    expect(await said(x.id)).toEqual([[1, "x1"]]);
    expect(await said(y.id)).toEqual([]);
    expect((await store.getConversation(y.id))!.lastSeq).toBe(0);
    expect(await said(z.id)).toEqual([[1, "z1"]]);
  });

  it("two nodes' groups over the same conversations, made in opposite orders, wait for each other instead of deadlocking", async () => {
    const other = counted(new PostgresStore({ ...testPg(), schema }));
    try {
      const conversations = await Promise.all(Array.from({ length: 16 }, () => open()));
      const ids = conversations.map((conversation) => conversation.id);
      sent = [];
      for (let round = 0; round < 30; round++) {
        await Promise.all([
          ...ids.map((id) => store.append(id, { events: [text(`a${round}`)] }, round)),
          ...[...ids].reverse().map((id) => other.append(id, { events: [text(`b${round}`)] }, round)),
        ]);
      }
      // One statement of 16 per round on each node: none refused (a deadlock) and run again one by one.
      expect(appendsSent()).toBe(60);
      for (const id of ids) expect((await said(id)).map(([seq]) => seq)).toEqual(Array.from({ length: 60 }, (_, index) => index + 1));
    } finally {
      await other.close();
    }
  });

  it("in a group, a batch whose resume hash is no longer the conversation's stores nothing and says so; a missing conversation fails; a batch JSON cannot hold fails; the others are stored", async () => {
    const hash = randomBytes(8).toString("hex");
    const [resumed, plain] = await Promise.all([open({ resumeHash: hash }), open()]);
    sent = [];
    const results = await Promise.allSettled([
      store.append(resumed.id, { events: [text("stale")], resumeHash: "not-its-hash" }, 1),
      store.append(plain.id, { events: [text("p1")] }, 1),
      store.append("no-such-conversation", { events: [text("lost")] }, 1),
      store.append(plain.id, { events: [{ ...text("big"), size: 1n } as never] }, 1),
      store.append(resumed.id, { events: [text("current")], resumeHash: hash }, 1),
    ]);
    expect(results[0]).toEqual({ status: "fulfilled", value: undefined });
    expect(results[1]).toMatchObject({ status: "fulfilled" });
    expect(results[2]).toMatchObject({ status: "rejected", reason: { message: "append: no conversation no-such-conversation" } });
    expect(results[3]).toMatchObject({ status: "rejected" });
    expect(results[4]).toMatchObject({ status: "fulfilled", value: { conversation: { id: resumed.id, lastSeq: 1 } } });
    expect(await said(resumed.id)).toEqual([[1, "current"]]);
    expect(await said(plain.id)).toEqual([[1, "p1"]]);
    // {stale, p1, lost} as 2 + 1 statements; then {big, current}: big fails before anything is sent, current alone.
    expect(appendsSent()).toBe(3);
  });
});
