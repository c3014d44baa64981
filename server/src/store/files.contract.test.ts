// The delivered files' contract (FilePort), on SQLite and on PostgreSQL: a file's bytes come back exactly by
// its id, and retention drops the bytes of files past the cutoff only, keeping the row marked purged.
import { expect, it } from "vitest";
import { describeEachStore, uid } from "./testing/storeHarness.ts";

describeEachStore("Files contract", ({ store, second, conversation }) => {
  it("a file's bytes come back exactly, by its id only", async () => {
    const c = await conversation();
    const bytes = new Uint8Array([0x25, 0x50, 0x44, 0x46, 0x2d, 0x00, 0xff, 0x10]);
    const id = uid("f");
    await store.putFile({ id, conversationId: c.id, name: "invoice.pdf", mimeType: "application/pdf", size: bytes.length, bytes, createdAt: 5 });
    const file = await second.getFile(id);
    expect(file).toMatchObject({ id, conversationId: c.id, name: "invoice.pdf", mimeType: "application/pdf", size: 8, createdAt: 5 });
    expect([...file!.bytes]).toEqual([...bytes]);
    expect(await store.getFile("f_missing")).toBeUndefined();
  });

  it("purging files drops their bytes after the cutoff only, keeps the row marked purged, and is idempotent", async () => {
    const c = await conversation();
    const base = 60_000_000;
    const bytes = new Uint8Array([1, 2, 3, 4]);
    const oldId = uid("f");
    const newId = uid("f");
    await store.putFile({ id: oldId, conversationId: c.id, name: "old.pdf", mimeType: "application/pdf", size: 4, bytes, createdAt: base });
    await store.putFile({ id: newId, conversationId: c.id, name: "new.pdf", mimeType: "application/pdf", size: 4, bytes, createdAt: base + 1 });
    expect((await store.getFile(oldId))?.purgedAt).toBeNull();
    expect(await store.purgeFiles(base, base + 99, 1000)).toBeGreaterThanOrEqual(1);
    const purged = await second.getFile(oldId);
    expect(purged).toMatchObject({ id: oldId, name: "old.pdf", size: 4, purgedAt: base + 99 });
    expect(purged!.bytes.length).toBe(0);
    const kept = await second.getFile(newId);
    expect(kept?.purgedAt).toBeNull();
    expect([...kept!.bytes]).toEqual([1, 2, 3, 4]);
    expect(await store.purgeFiles(base, base + 100, 1000)).toBe(0);
    expect((await store.getFile(oldId))?.purgedAt).toBe(base + 99);
  });
});
