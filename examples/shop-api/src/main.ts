// Runs the demo shop API from the command line: `npx tsx examples/shop-api/src/main.ts [--port N] [--db FILE]`.
import { parseArgs } from "node:util";
import { startShopApi } from "./server.ts";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "4100" },
    db: { type: "string" },
    "pending-ms": { type: "string", default: "4000" },
    "public-url": { type: "string" },
    "api-key": { type: "string" },
    /** A fixed clock (ISO 8601), so that appointment slots and sign-in ages are the same on every run. */
    now: { type: "string" },
  },
});
const fixed = values.now ? Date.parse(values.now) : undefined;
if (fixed !== undefined && Number.isNaN(fixed)) {
  console.error(`--now must be an ISO 8601 time, not ${values.now}`);
  process.exit(2);
}
// The handlers are in place before the server says it listens: without one, Ctrl-C right after that line would
// end the process at once, with no close. Ctrl-C in a terminal signals the whole process group, so a wrapper
// (tsx, npx) relays a second SIGINT while the first one's close runs: the handlers stay, so a repeat does not kill
// the process mid-close with 130.
let stopping = false;
let close: (() => Promise<void>) | undefined;
const stop = () => {
  if (stopping) return;
  stopping = true;
  if (close) void close().then(() => process.exit(0));
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
const shop = await startShopApi({
  ...(fixed !== undefined ? { now: () => fixed } : {}),
  port: Number(values.port),
  pendingMs: Number(values["pending-ms"]),
  ...(values.db ? { dbFile: values.db } : {}),
  ...(values["public-url"] ? { publicUrl: values["public-url"] } : {}),
  ...(values["api-key"] ? { apiKey: values["api-key"] } : {}),
});
close = () => shop.close();
// Ctrl-C while it started: it stops now, without saying it listens.
if (stopping) await close().then(() => process.exit(0));
console.log(`demo shop API listening on ${shop.url} (API key: ${shop.apiKey === "demo-shop-key" ? "the demo key" : "as given"})`);
