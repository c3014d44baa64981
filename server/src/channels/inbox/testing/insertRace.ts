// A separate process for the race test: opens the store, says "ready", waits for "go" on stdin, then inserts
// the same message ids as its twin process into one SQLite file and prints how many of its inserts were new.
import { SqliteInboxStore } from "../sqliteInboxStore.ts";

const [file, count] = process.argv.slice(2);
const store = new SqliteInboxStore(file!);
process.stdout.write("ready\n");
await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()));
let inserted = 0;
for (let i = 0; i < Number(count); i++) {
  if (await store.insertInbound({ platform: "whatsapp", messageId: `SM${String(i).padStart(32, "0")}`, event: "{}", receivedAt: Date.now() })) inserted++;
}
store.close();
process.stdout.write(`inserted ${inserted}\n`);
process.stdin.pause();
