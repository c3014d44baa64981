// What only the SQLite inbox does (the rest is inboxStore.contract.test.ts): its durability setting, and an
// inbound event stored once per (platform, message id) even when two processes insert the same ids at once.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sqliteSynchronous } from "../../store/sqliteStore.ts";
import { SqliteInboxStore } from "./sqliteInboxStore.ts";

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
});
