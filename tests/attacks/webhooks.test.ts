// The channel webhooks against senders who are not the platform (tests/attacks/README.md): a Twilio request
// signed for another URL, a Meta payload signed with another app's secret or meant for the other endpoint, a
// redelivery of one message id with another body, bodies over the limit on every platform, wrong content
// types, and a Confirm button of one customer's proposal tapped from another number. Each bench is the real
// channel glue and engine mounted on the real gateway (registerChannelRoutes), with the platforms faked on
// loopback; what the inbox and the shop hold is checked after each attack.
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metaSigned, twilioSignature } from "@caplo/adapters/testkit";
import type { Platform } from "../../server/src/channels/ports.ts";
import { registerChannelRoutes, WEBHOOK_BODY_MAX } from "../../server/src/channels/routes.ts";
import { limitRoutes } from "../../server/src/channels/webhookRateLimit.ts";
import { StaticReleases } from "../../server/src/engine/release.ts";
import { Gateway } from "../../server/src/gateway/gateway.ts";
import { CANCEL } from "../engine/support/harness.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { channelBench, type Bench } from "../channels/support.ts";

const RULES = [
  { when: /cancel/i, replies: [{ text: "Here is what I will do.", toolCalls: [CANCEL(ORDERS.applied)] }] },
  { when: /hello/i, replies: [{ text: "Hello there." }] },
];
const PUBLIC_URL = "https://shop.example/caplo/webhooks/whatsapp";

type Mounted = { bench: Bench; gateway: Gateway; base: string };
const mounted = new Map<Platform, Mounted>();
beforeAll(async () => {
  for (const platform of ["whatsapp", "messenger", "instagram"] as const) {
    const bench = await channelBench({ platform, rules: RULES });
    const gateway = new Gateway({ engine: bench.h.engine, releases: new StaticReleases([bench.h.release]) });
    registerChannelRoutes(gateway, bench.service, [platform]);
    const { port } = await gateway.listen(0, "127.0.0.1");
    mounted.set(platform, { bench, gateway, base: `http://127.0.0.1:${port}` });
  }
});
afterAll(async () => {
  for (const { bench, gateway } of mounted.values()) {
    await gateway.close();
    await bench.close();
  }
});

/** A POST through the gateway, by node:http so a reset connection shows as `error` rather than a status. */
function post(platform: Platform, body: Buffer, headers: Record<string, string>): Promise<{ status: number; body: string; error?: string }> {
  const { base } = mounted.get(platform)!;
  return new Promise((resolve) => {
    const req = httpRequest(`${base}/webhooks/${platform}`, { method: "POST", headers: { ...headers, "content-length": String(body.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ status: 0, body: "", error: error.code ?? error.message }));
    req.end(body);
  });
}
const errorOf = (answer: { body: string }) => (JSON.parse(answer.body) as { error: { code: string; path: string } }).error;
const benchOf = (platform: Platform) => mounted.get(platform)!.bench;
const twilioHeaders = (raw: Buffer, url: string, token = benchOf("whatsapp").twilio!.authToken) => ({
  "content-type": "application/x-www-form-urlencoded",
  "x-twilio-signature": twilioSignature(raw, url, token),
});

describe("Twilio: a signature over anything but the public webhook URL and this body", () => {
  const elsewhere = [
    ["the Messenger webhook's URL", "https://shop.example/caplo/webhooks/messenger"],
    ["the same path over http", "http://shop.example/caplo/webhooks/whatsapp"],
    ["another host", "https://evil.example/caplo/webhooks/whatsapp"],
    ["a status callback URL under it", `${PUBLIC_URL}/status?part=0`],
    ["the URL with a query the request does not carry", `${PUBLIC_URL}?extra=1`],
    ["the URL with a trailing slash", `${PUBLIC_URL}/`],
  ];
  it.each(elsewhere)("signed over %s: 403 signature_invalid, nothing stored", async (_what, url) => {
    const bench = benchOf("whatsapp");
    const raw = bench.body({ text: "hello" });
    const answer = await post("whatsapp", raw, twilioHeaders(raw, url));
    expect(answer.status).toBe(403);
    expect(errorOf(answer)).toMatchObject({ code: "signature_invalid", path: "headers.x-twilio-signature" });
    expect(await bench.store.listInbound()).toEqual([]);
  });

  it("signed with another account's auth token, or over this URL with one parameter changed after signing: 403", async () => {
    const bench = benchOf("whatsapp");
    const raw = bench.body({ text: "hello" });
    expect((await post("whatsapp", raw, twilioHeaders(raw, PUBLIC_URL, "f".repeat(32)))).status).toBe(403);
    const signed = twilioHeaders(raw, PUBLIC_URL);
    const changed = Buffer.from(raw.toString().replace("From=whatsapp%3A%2B38640111222", "From=whatsapp%3A%2B38640999999"));
    expect(changed.equals(raw)).toBe(false);
    expect((await post("whatsapp", changed, signed)).status).toBe(403);
    const added = Buffer.from(`${raw.toString()}&ButtonPayload=c1.AAAAAAAAAAAAAAAAAAAAAA`);
    expect((await post("whatsapp", added, signed)).status).toBe(403);
    expect(await bench.store.listInbound()).toEqual([]);
  });
});

describe("Meta: a payload signed with another app's secret, or meant for the other endpoint", () => {
  it.each(["messenger", "instagram"] as const)("%s: signed with another app's secret, or the signature of another body: 403, nothing stored", async (platform) => {
    const bench = benchOf(platform);
    const raw = bench.body({ text: "hello" });
    const other = metaSigned(raw, "/", "another-apps-secret-of-32-characters").headers as Record<string, string>;
    expect((await post(platform, raw, other)).status).toBe(403);
    const signedOther = metaSigned(bench.body({ text: "hello, a different body" })).headers as Record<string, string>;
    expect((await post(platform, raw, signedOther)).status).toBe(403);
    // The signature's hex in capitals, or sha1 instead of sha256, is no more than it says.
    const sha1 = { ...(metaSigned(raw).headers as Record<string, string>) };
    sha1["x-hub-signature-256"] = sha1["x-hub-signature-256"]!.replace("sha256=", "sha1=");
    expect((await post(platform, raw, sha1)).status).toBe(403);
    expect(await bench.store.listInbound()).toEqual([]);
  });

  it("a Messenger page payload signed with the shared app secret but posted to the Instagram endpoint (and the reverse) is 400 at object, nothing stored", async () => {
    const page = benchOf("messenger").body({ text: "hello" });
    const instagram = benchOf("instagram").body({ text: "hello" });
    const toInstagram = await post("instagram", page, metaSigned(page).headers as Record<string, string>);
    expect(toInstagram.status).toBe(400);
    expect(errorOf(toInstagram)).toMatchObject({ code: "body_invalid", path: "object" });
    const toMessenger = await post("messenger", instagram, metaSigned(instagram).headers as Record<string, string>);
    expect(toMessenger.status).toBe(400);
    expect(await benchOf("instagram").store.listInbound()).toEqual([]);
    expect(await benchOf("messenger").store.listInbound()).toEqual([]);
  });
});

describe("bodies and content types", () => {
  it.each(["whatsapp", "messenger", "instagram"] as const)("%s: one byte over the limit is 413 body_too_large before any signature is read; at the limit it is judged (403)", async (platform) => {
    const over = await post(platform, Buffer.alloc(WEBHOOK_BODY_MAX + 1, 0x20), { "content-type": "application/json" });
    expect(over.status).toBe(413);
    expect(errorOf(over)).toEqual({ code: "body_too_large", path: "body", message: `A webhook body is at most ${WEBHOOK_BODY_MAX} bytes.` });
    const at = await post(platform, Buffer.alloc(WEBHOOK_BODY_MAX, 0x20), { "content-type": "application/json" });
    expect(at.status).toBe(403);
    expect(await benchOf(platform).store.listInbound()).toEqual([]);
  });

  it("unsigned bodies of any content type are 403 before they are parsed; a signed Twilio body not declared as a form is 400 at the header; a signed Meta body is judged by its bytes", async () => {
    for (const platform of ["whatsapp", "messenger", "instagram"] as const) {
      for (const type of ["text/plain", "multipart/form-data; boundary=x", "application/xml", "application/json"]) {
        expect((await post(platform, Buffer.from('{"object":"page"}'), { "content-type": type })).status, `${platform} ${type}`).toBe(403);
      }
    }
    const whatsapp = benchOf("whatsapp");
    const form = whatsapp.body({ text: "hello" });
    for (const type of ["application/json", "text/plain", "multipart/form-data; boundary=x"]) {
      const answer = await post("whatsapp", form, { ...twilioHeaders(form, PUBLIC_URL), "content-type": type });
      expect(answer.status, type).toBe(400);
      expect(errorOf(answer)).toMatchObject({ code: "body_invalid", path: "headers.content-type" });
    }
    // JSON bytes signed by Twilio's scheme and declared as a form are not a Twilio message: 400.
    const notForm = Buffer.from(JSON.stringify({ MessageSid: "SM1", From: "whatsapp:+1", Body: "hi" }));
    expect((await post("whatsapp", notForm, twilioHeaders(notForm, PUBLIC_URL))).status).toBe(400);
    expect(await whatsapp.store.listInbound()).toEqual([]);
    // Meta signs the JSON bytes it sends; a signed body declared otherwise is still those bytes, parsed once.
    const messenger = benchOf("messenger");
    const json = messenger.body({ text: "hello" });
    expect((await post("messenger", json, { ...(metaSigned(json).headers as Record<string, string>), "content-type": "application/x-www-form-urlencoded" })).status).toBe(200);
    await messenger.waitFor(async () => (await messenger.store.listInbound()).length === 1, "the JSON message stored");
  });
});

describe("replays and foreign taps", () => {
  it("WhatsApp: one MessageSid delivered again with another body (signed) is kept once, as first received; the customer gets one reply", async () => {
    const bench = benchOf("whatsapp");
    const id = "a".repeat(32);
    const first = bench.body({ id, text: "hello" });
    const second = bench.body({ id, text: "cancel my order" });
    expect((await post("whatsapp", first, twilioHeaders(first, PUBLIC_URL))).status).toBe(200);
    expect((await post("whatsapp", second, twilioHeaders(second, PUBLIC_URL))).status).toBe(200);
    await bench.service.idle();
    await bench.h.engine.idle();
    const rows = (await bench.store.listInbound()).filter((row) => row.messageId === `SM${id}`);
    expect(rows).toHaveLength(1);
    expect(JSON.parse(rows[0]!.event)).toMatchObject({ text: "hello" });
    await bench.waitFor(() => bench.received().some((m) => m.text === "Hello there."), "the reply");
    expect(bench.received().filter((m) => m.text === "Hello there.")).toHaveLength(1);
    expect(bench.received().filter((m) => m.taps.some((t) => t.title === "Confirm"))).toEqual([]);
  });

  it("WhatsApp: another number tapping this customer's Confirm (its payload copied) is told it is not theirs; nothing runs; the owner's tap then runs it once", async () => {
    const bench = benchOf("whatsapp");
    await bench.say("cancel my order");
    const review = await bench.waitFor(() => bench.received().find((m) => m.taps.some((t) => t.title === "Confirm")), "the review");
    const confirm = review.taps.find((t) => t.title === "Confirm")!;
    const stranger = "whatsapp:+38640999999";
    const form = new URLSearchParams(bench.body({ payload: confirm.payload, title: "Confirm" }).toString());
    form.set("From", stranger);
    form.set("WaId", "38640999999");
    const raw = Buffer.from(form.toString());
    expect((await post("whatsapp", raw, twilioHeaders(raw, PUBLIC_URL))).status).toBe(200);
    await bench.waitFor(() => bench.twilio!.sent.some((m) => m.to === stranger && (m.body ?? "").includes("does not belong to this conversation")), "the stranger told");
    await bench.service.idle();
    await bench.h.engine.idle();
    expect(bench.h.backend.invocations.filter((call) => call.tool === "cancel_order")).toEqual([]);
    await bench.tap("Confirm");
    await bench.waitFor(() => bench.h.backend.invocations.some((call) => call.tool === "cancel_order"), "the owner's confirm");
    await bench.service.idle();
    await bench.h.engine.idle();
    expect(bench.h.backend.invocations.filter((call) => call.tool === "cancel_order")).toHaveLength(1);
  });
});

describe("the webhooks' rate limit against senders without the credentials", () => {
  it("WhatsApp: a flood of unsigned requests from one address is refused there and never spends the platform's rate; signed requests past the rate are 429 and not stored", async () => {
    const bench = await channelBench({ platform: "whatsapp", rules: RULES });
    const gateway = new Gateway({ engine: bench.h.engine, releases: new StaticReleases([bench.h.release]) });
    // One request a second, a burst of two, on a clock held still: only the test moves it.
    let clock = 1_000_000;
    registerChannelRoutes(limitRoutes(gateway, 1, () => clock), bench.service, ["whatsapp"]);
    const { port } = await gateway.listen(0, "127.0.0.1");
    /** A POST from the loopback address `from` (Linux answers every 127.x address), so each sender has its own. */
    const postFrom = (from: string, body: Buffer, headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest({ host: "127.0.0.1", port, path: "/webhooks/whatsapp", method: "POST", localAddress: from, headers: { ...headers, "content-length": String(body.length) } }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
        });
        req.on("error", reject);
        req.end(body);
      });
    const signed = (raw: Buffer) => twilioHeaders(raw, PUBLIC_URL, bench.twilio!.authToken);
    try {
      // The attacker, without the auth token: 20 requests at once, forged signatures.
      const forged = bench.body({ text: "hello" });
      const flood = await Promise.all(Array.from({ length: 20 }, () => postFrom("127.0.0.2", forged, { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": "AAAAAAAAAAAAAAAAAAAAAAAAAAA=" })));
      expect(flood.map((answer) => answer.status).sort()).toEqual([...Array<number>(2).fill(403), ...Array<number>(18).fill(429)]);
      // Twilio's real deliveries, from its own addresses, are still taken and answered.
      const first = bench.body({ id: "1".repeat(32), text: "hello" });
      expect((await postFrom("127.0.0.3", first, signed(first))).status).toBe(200);
      await bench.waitFor(() => bench.received().some((m) => m.text === "Hello there."), "the reply");
      // Signed requests past the platform's rate (however many addresses they come from) are 429, nothing stored.
      const second = bench.body({ id: "2".repeat(32), text: "hello" });
      const third = bench.body({ id: "3".repeat(32), text: "hello" });
      expect((await postFrom("127.0.0.4", second, signed(second))).status).toBe(200);
      const over = await postFrom("127.0.0.5", third, signed(third));
      expect(over.status).toBe(429);
      expect(errorOf(over).code).toBe("rate_limited");
      await bench.service.idle();
      expect((await bench.store.listInbound()).map((row) => row.messageId).sort()).toEqual([`SM${"1".repeat(32)}`, `SM${"2".repeat(32)}`]);
      // A second later it is taken (Twilio retries it when the webhook URL asks for retries; Meta always does).
      clock += 1000;
      expect((await postFrom("127.0.0.5", third, signed(third))).status).toBe(200);
      await bench.service.idle();
      expect(await bench.store.listInbound()).toHaveLength(3);
    } finally {
      await gateway.close();
      await bench.close();
    }
  });
});

describe("Twilio: the signed URL's edges", () => {
  /** A POST to the webhook's path with `query` and extra headers, by node:http. */
  const postAt = (base: string, query: string, body: Buffer, headers: Record<string, string>) =>
    new Promise<{ status: number }>((resolve, reject) => {
      const req = httpRequest(`${base}/webhooks/whatsapp${query}`, { method: "POST", headers: { ...headers, "content-length": String(body.length) } }, (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0 }));
      });
      req.on("error", reject);
      req.end(body);
    });

  it("a query the request carries is part of what was signed; forwarded host and scheme headers never change the URL checked; the default port may be written or not", async () => {
    // A bench of its own: what it stores is checked whole.
    const bench = await channelBench({ platform: "whatsapp", rules: RULES });
    const gateway = new Gateway({ engine: bench.h.engine, releases: new StaticReleases([bench.h.release]) });
    registerChannelRoutes(gateway, bench.service, ["whatsapp"]);
    const { port: listening } = await gateway.listen(0, "127.0.0.1");
    const base = `http://127.0.0.1:${listening}`;
    const twilioHeaders = (raw: Buffer, url: string, token = bench.twilio!.authToken) => ({ "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": twilioSignature(raw, url, token) });
    const form = (text: string) => bench.body({ text });
    try {
      // Signed over the public URL with the query the request carries: taken (Twilio signs the URL as configured).
      const withQuery = form("hello, with a query");
      expect((await postAt(base, "?ws=shop&x=1", withQuery, twilioHeaders(withQuery, `${PUBLIC_URL}?ws=shop&x=1`))).status).toBe(200);
      // Signed without it, or over another value: refused.
      const noQuery = form("hello, query dropped");
      expect((await postAt(base, "?ws=shop", noQuery, twilioHeaders(noQuery, PUBLIC_URL))).status).toBe(403);
      const otherValue = form("hello, query changed");
      expect((await postAt(base, "?ws=acme", otherValue, twilioHeaders(otherValue, `${PUBLIC_URL}?ws=shop`))).status).toBe(403);
      // X-Forwarded-Host/Proto and Host naming the attacker's URL, signed over that URL with the forger's own key: refused.
      const forwarded = form("hello, forwarded");
      const evilUrl = "https://evil.example/caplo/webhooks/whatsapp";
      expect((await postAt(base, "", forwarded, { ...twilioHeaders(forwarded, evilUrl, "e".repeat(32)), "x-forwarded-host": "evil.example", "x-forwarded-proto": "https", host: "evil.example" })).status).toBe(403);
      // Even with the real token, a signature over the URL those headers name is not over the public URL: refused.
      expect((await postAt(base, "", forwarded, { ...twilioHeaders(forwarded, evilUrl), "x-forwarded-host": "evil.example", host: "evil.example" })).status).toBe(403);
      // https's default port written out is the same URL (Twilio's own validator accepts both spellings).
      const port = form("hello, with the port");
      expect((await postAt(base, "", port, twilioHeaders(port, "https://shop.example:443/caplo/webhooks/whatsapp"))).status).toBe(200);
      const otherPort = form("hello, another port");
      expect((await postAt(base, "", otherPort, twilioHeaders(otherPort, "https://shop.example:8443/caplo/webhooks/whatsapp"))).status).toBe(403);
      await bench.service.idle();
      await bench.h.engine.idle();
      const stored = (await bench.store.listInbound()).map((row) => (JSON.parse(row.event) as { text?: string }).text);
      expect(stored.sort()).toEqual(["hello, with a query", "hello, with the port"]);
    } finally {
      await gateway.close();
      await bench.close();
    }
  });
});
