// Misbehaving tools and floods on two real `caplo serve` nodes sharing PostgreSQL and Redis: a tool that
// hangs, one that crashes its sandbox on every call, one that returns 10 MB; a client flooding frames and
// a flood of webhooks. The conversation itself and every other conversation carry on. And a widget that
// reconnects to the other node resumes exactly where it was.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { TestClient } from "../gateway/support/client.ts";
import { AGENT, CaploNode, createDatabase, ORIGIN, publishAgent, scratch, Shop, stopAll } from "./support/cluster.ts";

const work = scratch();
let db: Awaited<ReturnType<typeof createDatabase>>;
let shop: Shop;
let a: CaploNode;
let b: CaploNode;
const clients: TestClient[] = [];

// WhatsApp switched on with made-up credentials: its webhook route exists, nothing is ever sent.
const WHATSAPP = {
  CAPLO_TWILIO_ACCOUNT_SID: `AC${"0".repeat(32)}`,
  CAPLO_TWILIO_AUTH_TOKEN: "1".repeat(32),
  CAPLO_WHATSAPP_FROM: "whatsapp:+15550001111",
  CAPLO_PUBLIC_URL: "https://faults.example",
  CAPLO_TWILIO_API_BASE: "http://127.0.0.1:9",
  CAPLO_WEBHOOKS_PER_SECOND: "20",
};

beforeAll(async () => {
  db = await createDatabase();
  shop = await Shop.start();
  const published = await publishAgent(work.dir);
  [a, b] = (await Promise.all(
    ["a", "b"].map((name) =>
      CaploNode.start({ name, databaseUrl: db.url, shop, redisUrl: "redis://127.0.0.1:6379", ...published, env: WHATSAPP }),
    ),
  )) as [CaploNode, CaploNode];
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await stopAll();
  await shop?.close();
  await db?.drop();
  work.remove();
});

async function customer(node: CaploNode): Promise<TestClient> {
  const client = await TestClient.open(node.wsUrl, ORIGIN);
  clients.push(client);
  await client.hello(AGENT);
  return client;
}

const agentText = (pattern: RegExp) => (frame: ServerFrame) => frame.t === "event" && frame.message.type === "text" && frame.message.from === "agent" && pattern.test(frame.message.text);

/** Say something and wait for the agent's answer matching `pattern`. */
async function ask(client: TestClient, text: string, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  const seen = client.frames.length;
  client.send({ t: "in", ref: `r${seen}`, event: { type: "message", text } });
  const frame = await client.waitFor((candidate) => client.frames.indexOf(candidate) >= seen && agentText(pattern)(candidate), timeoutMs);
  return (frame as { message: { text: string } }).message.text;
}

describe("misbehaving tools", () => {
  it("a tool that hangs is cut off at its timeout, and meanwhile another conversation's tool answers", async () => {
    const stuck = await customer(a);
    const other = await customer(a);
    await ask(other, "echo warm", /^Echo: /); // the echo package's sandbox is up
    const hanging = ask(stuck, "please hang", /^The lookup gave no answer: /);
    let hangSettled = false;
    void hanging.finally(() => (hangSettled = true));
    expect(await ask(other, "echo meanwhile", /^Echo: /)).toContain("meanwhile");
    expect(hangSettled).toBe(false);
    expect(await hanging).toMatch(/timed out/);
    // The conversation that hung carries on.
    expect(await ask(stuck, "echo after", /^Echo: /)).toContain("after");
  });

  it("a tool that crashes its sandbox on every call fails each call clearly; its conversation and others carry on", async () => {
    const crashing = await customer(b);
    const other = await customer(b);
    for (let round = 0; round < 3; round++) {
      expect(await ask(crashing, "crash please", /^The lookup failed: /)).toMatch(/error/i);
      expect(await ask(other, `echo round${round}`, /^Echo: /)).toContain(`round${round}`);
    }
    expect(await ask(crashing, "echo survived", /^Echo: /)).toContain("survived");
  });

  it("a tool returning 10 MB is refused as over the result limit; nothing of it reaches the customer", async () => {
    const client = await customer(a);
    const text = await ask(client, "something big", /^The big lookup: /);
    expect(text, text).toMatch(/over the limit of 262144 bytes/);
    expect(JSON.stringify(client.frames).length).toBeLessThan(100_000);
    expect(await ask(client, "echo small", /^Echo: /)).toContain("small");
    expect(await a.ready()).toMatchObject({ ready: true, store: "ok" });
  });
});

describe("floods", () => {
  it("a client flooding frames is rate limited on its own connection; another customer on the node is unaffected", async () => {
    const flooder = await customer(a);
    const calm = await customer(a);
    const before = flooder.frames.length;
    for (let i = 0; i < 300; i++) flooder.send({ t: "ping" });
    const answer = ask(calm, "echo calm", /^Echo: /);
    await flooder.waitFor((frame) => flooder.frames.indexOf(frame) >= before + 299);
    const replies = flooder.frames.slice(before);
    const limited = replies.filter((frame) => frame.t === "error" && frame.code === "rate_limited").length;
    const pongs = replies.filter((frame) => frame.t === "pong").length;
    expect(limited + pongs).toBe(300);
    expect(pongs).toBeGreaterThanOrEqual(15); // the burst (20, less the hello) plus the refill
    expect(limited).toBeGreaterThan(200);
    expect(await answer).toContain("calm");
    expect(calm.frames.some((frame) => frame.t === "error")).toBe(false);
    // The flooder's connection lives on; after a pause its frames are served again.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await ask(flooder, "echo later", /^Echo: /)).toContain("later");
  });

  it("a flood of webhooks gets 429 with Retry-After beyond the node's rate, and the node's customers are unaffected", async () => {
    const calm = await customer(b);
    const statuses = await Promise.all(
      Array.from({ length: 300 }, () =>
        fetch(`${b.url}/webhooks/whatsapp`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "MessageSid=SM1&From=whatsapp%3A%2B15550002222&Body=hi" }).then(
          async (response) => ({ status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.text() }),
        ),
      ),
    );
    const limited = statuses.filter((answer) => answer.status === 429);
    const unsigned = statuses.filter((answer) => answer.status === 403);
    expect(limited.length + unsigned.length).toBe(300);
    expect(limited.length).toBeGreaterThan(200);
    expect(limited.every((answer) => answer.retryAfter === "1" && answer.body.includes("rate_limited"))).toBe(true);
    expect(unsigned.length).toBeGreaterThanOrEqual(40); // the burst reached the signature check
    expect(await ask(calm, "echo webhooks", /^Echo: /)).toContain("webhooks");
    // The other node's webhooks were never limited by this one.
    const elsewhere = await fetch(`${a.url}/webhooks/whatsapp`, { method: "POST", body: "x=1", headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(elsewhere.status).toBe(403);
  });
});

describe("reconnecting to another node", () => {
  it("a tool's question waits on the node that asked it: answered there it works; answered on another node it is refused clearly", async () => {
    const here = await customer(a);
    here.send({ t: "in", ref: "q1", event: { type: "message", text: "please ask me" } });
    const question = (await here.waitFor((frame) => frame.t === "event" && frame.message.type === "question", 30_000)) as { message: { elicitationId: string } };
    here.send({ t: "in", ref: "a1", event: { type: "answer", elicitationId: question.message.elicitationId, action: "accept", content: { word: "banana" } } });
    await here.waitFor(agentText(/^Asked: .*banana/), 30_000);

    const first = await TestClient.open(a.wsUrl, ORIGIN);
    const welcome = await first.hello(AGENT);
    first.send({ t: "in", ref: "q2", event: { type: "message", text: "please ask me" } });
    const asked = (await first.waitFor((frame) => frame.t === "event" && frame.message.type === "question", 30_000)) as { seq: number; message: { elicitationId: string } };
    await first.close();
    // The widget comes back on node b: it sees the question, but its answer cannot reach node a's tool.
    const moved = await TestClient.open(b.wsUrl, ORIGIN);
    clients.push(moved);
    await moved.hello(AGENT, { token: welcome.resumeToken, after: asked.seq - 1 });
    await moved.waitFor((frame) => frame.t === "event" && frame.seq === asked.seq && frame.message.type === "question");
    moved.send({ t: "in", ref: "a2", event: { type: "answer", elicitationId: asked.message.elicitationId, action: "accept", content: { word: "cherry" } } });
    const refused = await moved.waitFor((frame) => frame.t === "error" && frame.ref === "a2");
    expect(refused).toMatchObject({ code: "question_not_open" });
    expect((refused as { message: string }).message).toMatch(/another node/);
    // The conversation carries on on node b.
    expect(await ask(moved, "echo onward", /^Echo: /)).toContain("onward");
  });

  it("a widget that reconnects to the other node resumes exactly after its last event and carries on there", async () => {
    const first = await TestClient.open(a.wsUrl, ORIGIN);
    const welcome = await first.hello(AGENT);
    await ask(first, "say one", /^You said: say one$/);
    await ask(first, "say two", /^You said: say two$/);
    const all = first.events();
    const lastSeen = all[1]!.seq; // it saw only up to "say one"'s answer, say
    await first.close();

    const second = await TestClient.open(b.wsUrl, ORIGIN);
    clients.push(second);
    const resumed = await second.hello(AGENT, { token: welcome.resumeToken, after: lastSeen });
    expect(resumed.conversationId).toBe(welcome.conversationId);
    await second.waitFor((frame) => frame.t === "event" && frame.seq === all.at(-1)!.seq);
    expect(second.events().map((frame) => frame.seq)).toEqual(all.slice(2).map((frame) => frame.seq));
    expect(second.events().map((frame) => frame.message)).toEqual(all.slice(2).map((frame) => frame.message));
    await ask(second, "say three", /^You said: say three$/);
    const seqs = second.events().map((frame) => frame.seq);
    expect(seqs).toEqual(seqs.map((_, index) => lastSeen + 1 + index));
  });
});
