// What only the SQLite store does: its durability setting (CAPLO_SQLITE_SYNCHRONOUS, passed as an option) and
// its group commit (appends of many conversations in one transaction, every caller answered after the commit).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore, sqliteSynchronous } from "./sqliteStore.ts";
import { newConversation, text } from "./testing/storeHarness.ts";

describe("sqlite store: durability setting and group commit", () => {
  const dir = mkdtempSync(join(tmpdir(), "caplo-store-sync-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));


  it("synchronous is normal by default and full when asked (option or CAPLO_SQLITE_SYNCHRONOUS); another value is refused clearly", async () => {
    const path = join(dir, "sync.db");
    // The store takes the setting as an option; the server reads CAPLO_SQLITE_SYNCHRONOUS once and passes it.
    const stores = [new SqliteStore(path), new SqliteStore(path, { synchronous: "full" })];
    try {
      stores.push(new SqliteStore(path, { synchronous: sqliteSynchronous({ CAPLO_SQLITE_SYNCHRONOUS: "full" }) }));
      expect(stores.map((store) => store.synchronous)).toEqual(["normal", "full", "full"]);
      expect(() => new SqliteStore(path, { synchronous: sqliteSynchronous({ CAPLO_SQLITE_SYNCHRONOUS: "off" }) })).toThrow("CAPLO_SQLITE_SYNCHRONOUS must be normal or full, not 'off'");
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it("a burst of appends is committed in bounded groups, each answered with contiguous seqs", async () => {
    const store = new SqliteStore(join(dir, "burst.db"));
    await store.migrate();
    try {
      const conversations = await Promise.all(Array.from({ length: 3 }, () => newConversation(store)));
      const stored = await Promise.all(Array.from({ length: 700 }, (_, i) => store.append(conversations[i % 3]!.id, { events: [text(`e${i}`)] }, i)));
      for (const c of conversations) {
        const seqs = stored.flatMap((batch) => batch.events).filter((event) => event.conversationId === c.id).map((event) => event.seq);
        expect(seqs.sort((a, b) => a - b)).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
        expect((await store.listEvents(c.id, 0, 1000)).length).toBe(seqs.length);
      }
    } finally {
      await store.close();
    }
  });

  it("appends still waiting for their group commit are committed by close, and answered", async () => {
    const path = join(dir, "close.db");
    const store = new SqliteStore(path, { synchronous: "full" });
    await store.migrate();
    const c = await newConversation(store);
    const pending = store.append(c.id, { events: [text("last words")], transcript: [{ role: "user", content: "bye" }] }, 5);
    const more = Array.from({ length: 300 }, (_, i) => store.append(c.id, { events: [text(`more ${i}`)] }, 6)); // beyond one group
    await store.close();
    await expect(pending).resolves.toMatchObject({ events: [{ seq: 1 }], transcript: [{ seq: 1 }] });
    expect((await Promise.all(more)).map((batch) => batch.events[0]!.seq)).toEqual(Array.from({ length: 300 }, (_, i) => i + 2));
    const reopened = new SqliteStore(path);
    try {
      expect((await reopened.listEvents(c.id, 0, 1000)).map((event) => event.seq)).toEqual(Array.from({ length: 301 }, (_, i) => i + 1));
      expect((await reopened.listTranscript(c.id)).map((entry) => entry.message.content)).toEqual(["bye"]);
    } finally {
      await reopened.close();
    }
  });
});
