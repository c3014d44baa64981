// The channel webhooks mounted on the real gateway: a signed Messenger webhook is answered 200 and the
// customer gets the agent's reply; the handshake works over GET; an oversized body is refused with 413.
import { afterEach, describe, expect, it } from "vitest";
import { metaSigned } from "@caplo/adapters/testkit";
import { StaticReleases } from "../../server/src/engine/release.ts";
import { Gateway } from "../../server/src/gateway/gateway.ts";
import { registerChannelRoutes, WEBHOOK_BODY_MAX } from "../../server/src/channels/routes.ts";
import { channelBench, type Bench } from "./support.ts";

let b: Bench | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  await b?.close();
  gateway = undefined;
  b = undefined;
});

describe("channel webhooks on the gateway", () => {
  it("routes /webhooks/messenger to the glue: handshake, signed message, size limit", async () => {
    b = await channelBench({ platform: "messenger", rules: [{ when: /hello/i, replies: [{ text: "Hello from the gateway." }] }] });
    const bench = b;
    gateway = new Gateway({ engine: bench.h.engine, releases: new StaticReleases([bench.h.release]) });
    registerChannelRoutes(gateway, bench.service, ["messenger"]);
    const { port } = await gateway.listen(0, "127.0.0.1");
    const base = `http://127.0.0.1:${port}`;
    const shake = await fetch(`${base}/webhooks/messenger?hub.mode=subscribe&hub.verify_token=verify-token-for-tests&hub.challenge=4242`);
    expect([shake.status, await shake.text()]).toEqual([200, "4242"]);
    const signed = metaSigned(bench.body({ text: "hello" }));
    const posted = await fetch(`${base}/webhooks/messenger`, { method: "POST", headers: signed.headers as Record<string, string>, body: new Uint8Array(signed.rawBody) });
    expect(posted.status).toBe(200);
    await bench.waitFor(() => bench.received().some((m) => m.text === "Hello from the gateway."), "the reply");
    const huge = Buffer.alloc(WEBHOOK_BODY_MAX + 1, 32);
    const refused = await fetch(`${base}/webhooks/messenger`, { method: "POST", headers: { "content-type": "application/json" }, body: huge });
    expect(refused.status).toBe(413);
  });
});
