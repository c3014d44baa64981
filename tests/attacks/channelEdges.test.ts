// The Meta webhooks at their edges (tests/attacks/README.md): a signed batch mixing our own echoed message,
// delivery and read receipts and a customer's message; one Confirm tapped twice at the same moment (two
// postbacks, and a redelivery of one, all in flight at once); the subscription handshake with a script for a
// challenge or the verify token given twice. Real channel glue and engine on the bench's loopback webhook, the
// platform faked on loopback; the inbox, the engine's store and the shop are checked after each.
import { afterEach, describe, expect, it } from "vitest";
import { CANCEL } from "../engine/support/harness.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { channelBench, type Bench } from "../channels/support.ts";

const RULES = [
  { when: /cancel/i, replies: [{ text: "Here is what I will do.", toolCalls: [CANCEL(ORDERS.applied)] }] },
  { when: /hello/i, replies: [{ text: "Hello there." }] },
];
const PAGE = "105000000000001";
const CUSTOMER = "7000000000000001";

let bench: Bench | undefined;
afterEach(async () => {
  await bench?.close();
  bench = undefined;
});

async function settled(b: Bench): Promise<void> {
  await b.service.idle();
  await b.h.engine.idle();
  await b.service.idle();
}

describe("Messenger: what is not a customer's message starts no turn", () => {
  it("a signed batch of our own echoed message, a delivery and a read receipt and one customer message: one turn, one reply, the echo never stored", async () => {
    bench = await channelBench({ platform: "messenger", rules: RULES });
    const b = bench;
    const ts = Date.now();
    const batch = Buffer.from(
      JSON.stringify({
        object: "page",
        entry: [
          {
            id: PAGE,
            time: ts,
            messaging: [
              // What the page itself sent (by the team in Meta's inbox, or by us) comes back as an echo: were it
              // taken as the customer's, "cancel my order" would propose a write nobody asked for.
              { sender: { id: PAGE }, recipient: { id: CUSTOMER }, timestamp: ts, message: { mid: "m_echo_1", is_echo: true, text: "cancel my order" } },
              { sender: { id: CUSTOMER }, recipient: { id: PAGE }, timestamp: ts, delivery: { mids: ["m_ours_1"], watermark: ts } },
              { sender: { id: CUSTOMER }, recipient: { id: PAGE }, timestamp: ts, read: { watermark: ts } },
            ],
          },
          { id: PAGE, time: ts, messaging: [{ sender: { id: CUSTOMER }, recipient: { id: PAGE }, timestamp: ts + 1, message: { mid: "m_hello_1", text: "hello" } }] },
        ],
      }),
    );
    expect((await b.post(batch)).status).toBe(200);
    await b.waitFor(() => b.received().some((m) => m.text === "Hello there."), "the reply");
    await settled(b);
    const inbound = await b.store.listInbound();
    expect(inbound.map((row) => row.messageId).sort()).toEqual(["delivered_m_ours_1", `read_${CUSTOMER}_${ts}`, "m_hello_1"].sort());
    expect(b.received().filter((m) => m.text === "Hello there.")).toHaveLength(1);
    expect(b.received().filter((m) => m.taps.some((t) => t.title === "Confirm"))).toEqual([]);
    // One conversation, and the customer's one message is all it holds of them.
    const conversations = (await b.h.engine.listConversations({ workspaceId: "default", limit: 10 })).filter((c) => c.channel === "messenger");
    expect(conversations).toHaveLength(1);
    const customerTexts = (await b.h.store.listEvents(conversations[0]!.id, 0)).flatMap((event) => (event.message.type === "text" && event.message.from === "customer" ? [event.message.text] : []));
    expect(customerTexts).toEqual(["hello"]);
    expect(await b.h.store.listWrites(conversations[0]!.id)).toEqual([]);
  });
});

describe("Messenger: one Confirm tapped twice at the same moment", () => {
  it("two postbacks of the same Confirm and a redelivery of the first, all in flight at once: the write runs once, the inbox keeps two taps", async () => {
    bench = await channelBench({ platform: "messenger", rules: RULES });
    const b = bench;
    await b.say("cancel my order");
    const review = await b.waitFor(() => b.received().find((m) => m.taps.some((t) => t.title === "Confirm")), "the review");
    const confirm = review.taps.find((t) => t.title === "Confirm")!;
    await settled(b);
    const first = b.body({ id: "tap-one", payload: confirm.payload, title: "Confirm" });
    const second = b.body({ id: "tap-two", payload: confirm.payload, title: "Confirm" });
    const answers = await Promise.all([b.post(first), b.post(second), b.post(first)]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    await b.waitFor(() => b.h.backend.invocations.some((call) => call.tool === "cancel_order"), "the confirm");
    await settled(b);
    expect(b.h.backend.invocations.filter((call) => call.tool === "cancel_order")).toHaveLength(1);
    expect((await b.store.listInbound()).filter((row) => row.messageId.startsWith("m_tap-")).map((row) => row.messageId).sort()).toEqual(["m_tap-one", "m_tap-two"]);
    const [conversation] = (await b.h.engine.listConversations({ workspaceId: "default", limit: 10 })).filter((c) => c.channel === "messenger");
    const writes = await b.h.store.listWrites(conversation!.id);
    expect(writes.map((write) => write.state)).toEqual(["applied"]);
  });
});

describe("Meta's subscription handshake", () => {
  it("a script for a challenge, the verify token given twice, another mode or no token: 403, and the challenge is never echoed", async () => {
    bench = await channelBench({ platform: "messenger", rules: RULES });
    const right = "verify-token-for-tests";
    const script = encodeURIComponent("<script>alert(1)</script>");
    const attempts = [
      `hub.mode=subscribe&hub.verify_token=${right}&hub.challenge=${script}`,
      `hub.mode=subscribe&hub.verify_token=${right}&hub.challenge=${encodeURIComponent("1\r\nSet-Cookie: x=1")}`,
      `hub.mode=subscribe&hub.verify_token=${right}&hub.challenge=${"9".repeat(257)}`,
      `hub.mode=subscribe&hub.verify_token=wrong&hub.verify_token=${right}&hub.challenge=12345`,
      `hub.mode=unsubscribe&hub.verify_token=${right}&hub.challenge=12345`,
      "hub.mode=subscribe&hub.challenge=12345",
      "hub.mode=subscribe&hub.verify_token=&hub.challenge=12345",
    ];
    for (const query of attempts) {
      const answer = await bench.get(`/webhooks/messenger?${query}`);
      expect(answer.status, query).toBe(403);
      expect(answer.body, query).not.toContain("<script");
      expect(answer.body, query).not.toContain("12345");
    }
    expect(await bench.get(`/webhooks/messenger?hub.mode=subscribe&hub.verify_token=${right}&hub.challenge=12345`)).toEqual({ status: 200, body: "12345" });
    // A POST carrying the handshake's query is a webhook like any other: unsigned, 403, nothing stored.
    expect((await bench.post(Buffer.from("{}"), { signature: null, path: `/webhooks/messenger?hub.mode=subscribe&hub.verify_token=${right}&hub.challenge=12345` })).status).toBe(403);
    expect(await bench.store.listInbound()).toEqual([]);
  });
});
