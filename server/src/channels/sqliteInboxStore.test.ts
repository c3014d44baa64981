// The channel store: an inbound event is stored once per (platform, message id) even when two processes
// insert the same ids at the same moment; bindings, references and failures survive reopening the file.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { sqliteSynchronous } from "../store/sqliteStore.ts";
import { SqliteInboxStore } from "./sqliteInboxStore.ts";
import { checkDeliveryStatuses } from "./testing/deliveryStatusContract.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "caplo-inbox-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Starts a process that opens the store and waits; `go()` lets it insert; resolves its count of new rows. */
function racer(file: string, count: number) {
  const script = fileURLToPath(new URL("./testing/insertRace.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", script, file, String(count)], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes("ready")) onReady();
  });
  const done = new Promise<number>((resolve, reject) =>
    child.on("exit", (code) => (code === 0 ? resolve(Number(/inserted (\d+)/.exec(out)?.[1])) : reject(new Error(`racer exited ${code}`)))),
  );
  return { ready, go: () => child.stdin.write("go\n"), done };
}

describe("SqliteInboxStore", () => {
  it("fsyncs every commit with synchronous full (CAPLO_SQLITE_SYNCHRONOUS=full, as the engine's store); normal by default", () => {
    const level = (store: SqliteInboxStore) => Number(store.db.pragma("synchronous", { simple: true }));
    const normal = new SqliteInboxStore(join(dir, "a.db"), { synchronous: "normal" });
    const full = new SqliteInboxStore(join(dir, "b.db"), { synchronous: "full" });
    expect([level(normal), level(full)]).toEqual([1, 2]);
    normal.close();
    full.close();
    expect(sqliteSynchronous({})).toBe("normal");
    expect(sqliteSynchronous({ CAPLO_SQLITE_SYNCHRONOUS: "full" })).toBe("full");
    expect(() => sqliteSynchronous({ CAPLO_SQLITE_SYNCHRONOUS: "fast" })).toThrow(/normal or full, not 'fast'/);
  });

  it("stores a repeat of the same (platform, message id) once, and the same id on another platform separately", async () => {
    const store = new SqliteInboxStore(join(dir, "a.db"));
    const row = { platform: "whatsapp" as const, messageId: "SM1", event: "{}", receivedAt: 1 };
    expect(await store.insertInbound(row)).toBe(true);
    expect(await store.insertInbound(row)).toBe(false);
    expect(await store.insertInbound({ ...row, platform: "messenger" })).toBe(true);
    expect(await store.listInbound()).toHaveLength(2);
    store.close();
  });

  it("two processes inserting the same ids at the same moment store each id exactly once", async () => {
    const file = join(dir, "race.db");
    new SqliteInboxStore(file).close();
    const racers = [racer(file, 400), racer(file, 400)];
    await Promise.all(racers.map((r) => r.ready));
    for (const r of racers) r.go();
    const [a, b] = await Promise.all(racers.map((r) => r.done));
    expect(a! + b!).toBe(400);
    const store = new SqliteInboxStore(file);
    expect(await store.listInbound()).toHaveLength(400);
    store.close();
  });

  it("claims received rows once, oldest first, and a crash's processing rows go back to received", async () => {
    const store = new SqliteInboxStore(join(dir, "c.db"));
    for (const [id, at] of [["b", 2], ["a", 1], ["c", 3]] as const) await store.insertInbound({ platform: "instagram", messageId: id, event: "{}", receivedAt: at });
    const first = await store.claimInbound(2);
    expect(first.map((r) => r.messageId)).toEqual(["a", "b"]);
    expect((await store.claimInbound(5)).map((r) => r.messageId)).toEqual(["c"]);
    expect(await store.claimInbound(5)).toEqual([]);
    await store.finishInbound("instagram", "a", "done");
    expect(await store.requeueProcessing()).toBe(2);
    expect((await store.claimInbound(5)).map((r) => r.messageId)).toEqual(["b", "c"]);
    await store.finishInbound("instagram", "b", "failed", "engine refused");
    await store.finishInbound("instagram", "b", "done");
    expect((await store.listInbound("failed"))[0]).toMatchObject({ messageId: "b", error: "engine refused" });
    store.close();
  });

  it("binds a customer to one conversation even when bound twice, and keeps state across reopening", async () => {
    const file = join(dir, "d.db");
    const store = new SqliteInboxStore(file);
    const u1 = { platform: "messenger" as const, account: "105000000000001", externalId: "u1" };
    expect((await store.bind(u1, "conv-1", 10)).conversationId).toBe("conv-1");
    expect((await store.bind(u1, "conv-2", 11)).conversationId).toBe("conv-1");
    await store.touchInbound(u1, 50);
    await store.touchInbound(u1, 40);
    await store.putRefs([{ token: "c1.x", platform: "messenger", conversationId: "conv-1", kind: "confirm", targetId: "p1" }]);
    await store.recordOutbox({ platform: "messenger", conversationId: "conv-1", seq: 3, part: 0, state: "failed", attempts: 5, code: "platform_unavailable", message: "503", at: 99 });
    store.close();
    const again = new SqliteInboxStore(file);
    expect(await again.findBinding(u1)).toMatchObject({ conversationId: "conv-1", lastInboundAt: 50, disclosed: false });
    expect(await again.getRef("c1.x")).toEqual({ token: "c1.x", platform: "messenger", conversationId: "conv-1", kind: "confirm", targetId: "p1" });
    expect(await again.listFailures()).toEqual([expect.objectContaining({ seq: 3, code: "platform_unavailable", attempts: 5 })]);
    again.close();
  });

  it("prunes processed rows received before the cutoff, keeps the boundary and every row still waiting; sent records too, never failures", async () => {
    const store = new SqliteInboxStore(join(dir, "p.db"));
    const row = (messageId: string, receivedAt: number) => store.insertInbound({ platform: "messenger", messageId, event: "{}", receivedAt });
    await row("old-done", 99);
    await row("edge-done", 100);
    await row("old-failed", 50);
    await row("old-waiting", 1);
    await row("old-processing", 2);
    expect(await store.claimInbound(5)).toHaveLength(5);
    await store.finishInbound("messenger", "old-done", "done");
    await store.finishInbound("messenger", "edge-done", "done");
    await store.finishInbound("messenger", "old-failed", "failed", "x");
    expect(await store.requeueProcessing()).toBe(2);
    await store.claimInbound(1); // old-waiting back to processing; old-processing stays received
    const out = { platform: "messenger" as const, conversationId: "c", part: 0, attempts: 1 };
    await store.recordOutbox({ ...out, seq: 1, state: "sent", platformId: "mid.1", at: 99 });
    await store.recordOutbox({ ...out, seq: 2, state: "sent", platformId: "mid.2", at: 100 });
    await store.recordOutbox({ ...out, seq: 3, state: "failed", code: "platform_refused", at: 10 });
    expect(await store.prune(100)).toEqual({ inbox: 2, outbox: 1 });
    expect((await store.listInbound()).map((r) => r.messageId).sort()).toEqual(["edge-done", "old-processing", "old-waiting"]);
    expect(await store.getOutbox("messenger", "c", 2, 0)).toMatchObject({ state: "sent" });
    expect(await store.listFailures()).toHaveLength(1);
    // A pruned id is new again (past the redelivery window); a kept one is still a repeat.
    expect(await row("old-done", 200)).toBe(true);
    expect(await row("edge-done", 200)).toBe(false);
    store.close();
  });

  it("a file made before the hand-off column existed gets it on open, and keeps its rows", async () => {
    const file = join(dir, "old.db");
    const db = new Database(file);
    db.exec(`CREATE TABLE channel_inbox (platform TEXT NOT NULL, message_id TEXT NOT NULL, event TEXT NOT NULL, received_at INTEGER NOT NULL,
      state TEXT NOT NULL DEFAULT 'received', error TEXT, PRIMARY KEY (platform, message_id))`);
    db.prepare(`INSERT INTO channel_inbox (platform, message_id, event, received_at) VALUES ('whatsapp', 'SM1', '{}', 1)`).run();
    db.close();
    const store = new SqliteInboxStore(file);
    await store.markHanded("whatsapp", "SM1", '{"type":"message","text":"hi"}');
    expect(await store.listInbound()).toEqual([expect.objectContaining({ messageId: "SM1", state: "received", handed: '{"type":"message","text":"hi"}' })]);
    store.close();
  });

  it("a binding made before accounts were kept is rebuilt with its state and adopted by the account its customer writes to first", async () => {
    const file = join(dir, "bindings-v1.db");
    const db = new Database(file);
    db.exec(`CREATE TABLE channel_binding (platform TEXT NOT NULL, external_id TEXT NOT NULL, conversation_id TEXT NOT NULL UNIQUE,
      last_inbound_at INTEGER NOT NULL, disclosed INTEGER NOT NULL DEFAULT 0, cursor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (platform, external_id))`);
    db.prepare(`INSERT INTO channel_binding VALUES ('whatsapp', 'whatsapp:+38640111222', 'conv-old', 77, 1, 9)`).run();
    db.close();
    const store = new SqliteInboxStore(file);
    const customer = { platform: "whatsapp" as const, externalId: "whatsapp:+38640111222" };
    expect(await store.findBinding({ ...customer, account: "whatsapp:+14155238886" })).toMatchObject({ conversationId: "conv-old", account: "whatsapp:+14155238886", lastInboundAt: 77, disclosed: true, cursor: 9 });
    expect(await store.findBinding({ ...customer, account: "whatsapp:+14155230000" })).toBeUndefined();
    expect((await store.bind({ ...customer, account: "whatsapp:+14155230000" }, "conv-new", 80)).conversationId).toBe("conv-new");
    expect((await store.listBindings()).map((x) => [x.account, x.conversationId]).sort()).toEqual([
      ["whatsapp:+14155230000", "conv-new"],
      ["whatsapp:+14155238886", "conv-old"],
    ]);
    store.close();
  });
});

describe("delivery statuses", () => {
  it("kept once per part and status, listed per conversation by seq and part with their error codes", async () => {
    const store = new SqliteInboxStore(join(dir, "status.db"));
    try {
      await checkDeliveryStatuses(store, "conv-status");
    } finally {
      store.close();
    }
  });
});
