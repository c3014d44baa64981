// A webhook body over the limit always gets 413, never a reset connection: nothing of a body with a
// Content-Length over the limit is kept, a chunked body is dropped once it passes the limit, and the answer
// comes once the rest has been read and dropped. 100 declared and 20 chunked posts of 5 MB, ten at a time, on the
// real gateway, over kept-alive connections (where the old early answer reset about 1 in 20).
import { Agent, request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StaticReleases } from "../../server/src/engine/release.ts";
import { Gateway } from "../../server/src/gateway/gateway.ts";
import { registerChannelRoutes, WEBHOOK_BODY_MAX } from "../../server/src/channels/routes.ts";
import { channelBench, type Bench } from "./support.ts";

const FIVE_MB = Buffer.alloc(5 * 1024 * 1024, 0x7b);
// Kept-alive connections, as platforms and most clients use: a socket closed under a refused body resets.
const agent = new Agent({ keepAlive: true, maxSockets: 10 });

let bench: Bench;
let gateway: Gateway;
let base: string;
beforeAll(async () => {
  bench = await channelBench({ platform: "messenger", rules: [] });
  gateway = new Gateway({ engine: bench.h.engine, releases: new StaticReleases([bench.h.release]) });
  registerChannelRoutes(gateway, bench.service, ["messenger"]);
  const { port } = await gateway.listen(0, "127.0.0.1");
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  agent.destroy();
  await gateway.close();
  await bench.close();
});

/** Posts `body` (declared or chunked) and reports the status, or the client error (EPIPE, ECONNRESET). */
function post(body: Buffer, declared: boolean): Promise<number | string> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { "content-type": "application/json", ...(declared ? { "content-length": String(body.length) } : {}) };
    const req = request(`${base}/webhooks/messenger`, { method: "POST", headers, agent }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
      res.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
    req.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    if (declared) req.end(body);
    else {
      // Without Content-Length: chunked, 256 KiB at a time, as a streaming client sends it.
      const step = 256 * 1024;
      const write = (at: number): void => {
        if (at >= body.length) return void req.end();
        if (req.write(body.subarray(at, at + step))) setImmediate(() => write(at + step));
        else req.once("drain", () => write(at + step));
      };
      write(0);
    }
  });
}

async function many(count: number, declared: boolean): Promise<Array<number | string>> {
  const results: Array<number | string> = [];
  for (let at = 0; at < count; at += 10) results.push(...(await Promise.all(Array.from({ length: Math.min(10, count - at) }, () => post(FIVE_MB, declared)))));
  return results;
}

describe("webhook body limit", () => {
  it("100 posts of 5 MB with a Content-Length over the limit all get 413, none is reset", async () => {
    expect(FIVE_MB.length).toBeGreaterThan(WEBHOOK_BODY_MAX);
    const results = await many(100, true);
    expect(results.filter((r) => r !== 413)).toEqual([]);
  });

  it("20 chunked posts of 5 MB without Content-Length all get 413, none is reset", async () => {
    const results = await many(20, false);
    expect(results.filter((r) => r !== 413)).toEqual([]);
  });

  it("a body at the limit is read whole and judged by the glue (a bad signature: 403), nothing stored", async () => {
    const status = await post(Buffer.alloc(WEBHOOK_BODY_MAX, 0x20), true);
    expect(status).toBe(403);
    expect(await bench.store.listInbound()).toEqual([]);
  });
});
