// Benchmark (run: npx tsx tests/channels/webhookBench.ts): how fast a signed webhook is verified, stored
// and answered 200 over real HTTP, and how fast each adapter renders a review and a 20-item result.
// Processing goes to a port that only counts, so the figures are the channel layer's own.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adapterCases, metaSigned, recordingRefs } from "@caplo/adapters/testkit";
import type { Outbound } from "@caplo/shared/messages";
import { ChannelService } from "../../server/src/channels/channelService.ts";
import { quietPort } from "../../server/src/channels/testing/quietPort.ts";
import { SqliteInboxStore } from "../../server/src/channels/inbox/index.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-bench-"));
let received = 0;
const countingPort = quietPort({
  openConversation: async () => ({ conversationId: "c-bench" }),
  receive: async () => {
    received++;
    return { ok: true };
  },
});
const store = new SqliteInboxStore(join(dir, "bench.db"));
const messenger = adapterCases().find((c) => c.name === "messenger")!.adapter;
const service = new ChannelService({ store, port: countingPort, adapters: [messenger] });
const handle = service.webhook("messenger");
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", async () => {
    const answer = await handle(req, Buffer.concat(chunks));
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  });
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/messenger`;

const N = 500;
const times: number[] = [];
for (let i = 0; i < N; i++) {
  const raw = Buffer.from(JSON.stringify({ object: "page", entry: [{ id: "1", time: i, messaging: [{ sender: { id: "42" }, recipient: { id: "1" }, timestamp: i, message: { mid: `m_bench_${i}`, text: "hello" } }] }] }));
  const signed = metaSigned(raw);
  const start = performance.now();
  const response = await fetch(url, { method: "POST", headers: signed.headers as Record<string, string>, body: new Uint8Array(raw) });
  await response.text();
  times.push(performance.now() - start);
}
await service.idle();
times.sort((a, b) => a - b);
const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!.toFixed(2);
console.log(`webhook verify+store+200 over HTTP, ${N} sequential: p50 ${pct(50)} ms, p95 ${pct(95)} ms, p99 ${pct(99)} ms, max ${times.at(-1)!.toFixed(2)} ms`);
console.log(`processed from the store: ${received} of ${N}`);

const review: Outbound = { type: "review", id: "e", proposalId: "p", tool: "shop/cancel_order", title: "Cancel order", state: "proposed", fields: [{ path: "/orderId", label: "Order", display: "plain", value: "SO-1002", editable: false }] };
const result: Outbound = {
  type: "result", id: "r", callId: "c", layout: "cards", title: "Stores",
  columns: [{ key: "name", label: "Name", display: "plain", role: "title" }, { key: "address", label: "Address", display: "plain", role: "address" }],
  items: Array.from({ length: 20 }, (_, i) => ({ name: `Store ${i}`, address: `Main street ${i}` })),
};
for (const c of adapterCases()) {
  const rounds = 5000;
  const start = performance.now();
  for (let i = 0; i < rounds; i++) {
    c.adapter.render(review, { refs: recordingRefs() });
    c.adapter.render(result, { refs: recordingRefs() });
  }
  const ms = performance.now() - start;
  console.log(`${c.name}: ${Math.round((rounds * 2) / (ms / 1000))} renders/s (review + 20-card result)`);
}
server.close();
service.close();
store.close();
rmSync(dir, { recursive: true, force: true });
