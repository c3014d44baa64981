// The team API and the console's routes against callers who are not the team (tests/attacks/README.md):
// missing, malformed and forged tokens, bodies over every limit (a 413 the sender can read, never a reset),
// a console session used from another site (CSRF), and a follow-up outcome recorded twice or on a write that
// is not waiting for one. Real gateway on a loopback port, real HTTP; what the store holds is checked after.
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ORDERS } from "../engine/support/shopTools.ts";
import { TestClient } from "../gateway/support/client.ts";
import { ORIGIN, SHOP_RULES, startStack, type Stack } from "../gateway/support/stack.ts";
import { CANCEL } from "../engine/support/harness.ts";

const ANA = "team-secret-token";
let stack: Stack;
let own: string;

beforeAll(async () => {
  stack = await startStack({
    statusCheckBaseMs: 5,
    checkPollMs: 10,
    rules: [{ when: /cancel unknown (SO-\d{4})/i, replies: [{ text: "Please review.", toolCalls: [{ ...CANCEL("$1") }] }] }, ...SHOP_RULES],
  });
  own = new URL(stack.base).origin;
});
afterAll(async () => stack?.close());

type Answer = { status: number; body: string; error?: string };
/**
 * One request with node:http, so a reset connection is seen as one (fetch would hide it in a TypeError):
 * `error` is the socket's error when the server did not answer.
 */
function send(method: string, path: string, headers: Record<string, string>, body?: Buffer | string, chunked = false): Promise<Answer> {
  return new Promise((resolve) => {
    const data = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body);
    const req = httpRequest(`${stack.base}${path}`, { method, headers: { ...headers, ...(data && !chunked ? { "content-length": String(data.length) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ status: 0, body: "", error: error.code ?? error.message }));
    if (data && chunked) {
      // In 64 KiB pieces, as a slow client would.
      for (let at = 0; at < data.length; at += 65_536) req.write(data.subarray(at, at + 65_536));
    } else if (data) req.write(data);
    req.end();
  });
}
const json = (answer: Answer) => JSON.parse(answer.body) as { error?: { code: string; path: string; message: string } } & Record<string, unknown>;

async function conversation(): Promise<string> {
  const c = await TestClient.open(stack.wsUrl, ORIGIN);
  const welcome = await c.hello("shop-agent");
  await c.close();
  return welcome.conversationId;
}

describe("who may call", () => {
  const forged: Array<[string, Record<string, string>]> = [
    ["no Authorization header", {}],
    ["an empty bearer", { authorization: "Bearer " }],
    ["a wrong token", { authorization: "Bearer team-secret-tokem" }],
    ["the token with a character more", { authorization: `Bearer ${ANA}x` }],
    ["the token cut short", { authorization: `Bearer ${ANA.slice(0, -1)}` }],
    ["the token as Basic credentials", { authorization: `Basic ${Buffer.from(`ana:${ANA}`).toString("base64")}` }],
    ["the token without its scheme", { authorization: ANA }],
    ["the token in a cookie", { cookie: `caplo_console=${ANA}` }],
    ["a console cookie that was never issued", { cookie: "caplo_console=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }],
  ];
  it.each(forged)("%s: 401 unauthorized on a read and on a change, and nothing changes", async (_what, headers) => {
    const id = await conversation();
    const before = await stack.store.getConversation(id);
    for (const [method, path, body] of [
      ["GET", "/v1/team/conversations", undefined],
      ["GET", `/v1/team/conversations/${id}/events`, undefined],
      ["POST", `/v1/team/conversations/${id}/takeover`, "{}"],
      ["POST", `/v1/team/conversations/${id}/notes`, JSON.stringify({ text: "forged" })],
    ] as const) {
      const answer = await send(method, path, { ...headers, "content-type": "application/json" }, body);
      expect(answer.status, `${method} ${path}`).toBe(401);
      expect(json(answer).error).toEqual({ code: "unauthorized", path: "authorization", message: "a valid team member's bearer token is required" });
    }
    expect(await stack.store.getConversation(id)).toEqual(before);
    expect(await stack.engine.teamNotes(id)).toEqual([]);
  });

  it("a wrong bearer token next to a valid console session is refused: the token, when sent, is what counts", async () => {
    const jar = await sessionCookie();
    const answer = await send("GET", "/v1/team/conversations", { cookie: jar.cookie, authorization: "Bearer nope" });
    expect(answer.status).toBe(401);
    expect((await send("GET", "/v1/team/conversations", { cookie: jar.cookie })).status).toBe(200);
  });
});

/** A fresh console session for ana: its cookie and CSRF token. */
async function sessionCookie(): Promise<{ cookie: string; csrf: string }> {
  const answer = await fetch(`${stack.base}/v1/team/session`, { method: "POST", headers: { origin: own, "content-type": "application/json" }, body: JSON.stringify({ token: ANA }) });
  expect(answer.status).toBe(200);
  const cookie = /caplo_console=[^;]+/.exec(answer.headers.get("set-cookie") ?? "")![0];
  return { cookie, csrf: ((await answer.json()) as { csrf: string }).csrf };
}

describe("a console session used from another site (CSRF)", () => {
  it("a change with the cookie but without its CSRF token, with another session's token, from another origin or with no origin is 403 csrf_failed; with both it is made", async () => {
    const id = await conversation();
    const mine = await sessionCookie();
    const theirs = await sessionCookie();
    const note = JSON.stringify({ text: "from a session" });
    const attempts: Record<string, string>[] = [
      { cookie: mine.cookie },
      { cookie: mine.cookie, origin: own },
      { cookie: mine.cookie, origin: own, "x-caplo-csrf": theirs.csrf },
      { cookie: mine.cookie, origin: "https://evil.example", "x-caplo-csrf": mine.csrf },
      { cookie: mine.cookie, origin: "null", "x-caplo-csrf": mine.csrf },
      { cookie: mine.cookie, "x-caplo-csrf": mine.csrf },
      { cookie: mine.cookie, origin: own, "x-caplo-csrf": `${mine.csrf}x` },
    ];
    for (const headers of attempts) {
      const answer = await send("POST", `/v1/team/conversations/${id}/notes`, { ...headers, "content-type": "application/json" }, note);
      expect(answer.status, JSON.stringify(headers)).toBe(403);
      expect(json(answer).error?.code).toBe("csrf_failed");
    }
    // Signing out is a change too.
    expect((await send("DELETE", "/v1/team/session", { cookie: mine.cookie })).status).toBe(403);
    expect(await stack.engine.teamNotes(id)).toEqual([]);
    const made = await send("POST", `/v1/team/conversations/${id}/notes`, { cookie: mine.cookie, origin: own, "x-caplo-csrf": mine.csrf, "content-type": "application/json" }, note);
    expect(made.status).toBe(200);
    expect((await stack.engine.teamNotes(id)).map((n) => [n.member, n.text])).toEqual([["ana", "from a session"]]);
  });

  it("signing in from another site's page (login CSRF) is refused before the token is looked at", async () => {
    const answer = await send("POST", "/v1/team/session", { origin: "https://evil.example", "content-type": "application/json" }, JSON.stringify({ token: ANA }));
    expect(answer.status).toBe(403);
    expect(json(answer).error?.code).toBe("origin_refused");
  });
});

describe("bodies over every limit are answered 413 before they are parsed, and the sender reads the answer", () => {
  const FIVE_MB = Buffer.alloc(5 * 1024 * 1024, 0x20);
  const routes: Array<[string, string, Record<string, string>]> = [
    ["a team message (16 KiB)", "/conversations/ID/messages", { authorization: `Bearer ${ANA}` }],
    ["a takeover (16 KiB)", "/conversations/ID/takeover", { authorization: `Bearer ${ANA}` }],
    ["a console note (16 KiB)", "/conversations/ID/notes", { authorization: `Bearer ${ANA}` }],
    ["a follow-up outcome (16 KiB)", "/follow-ups/w_none/outcome", { authorization: `Bearer ${ANA}` }],
    ["a console sign-in (4 KiB)", "/session", {}],
  ];
  it.each(routes)("%s: 5 MB with a Content-Length, and 5 MB chunked, get 413 body_too_large; nothing is stored", async (_what, route, auth) => {
    const id = await conversation();
    const headers = { ...auth, origin: own, "content-type": "application/json" };
    for (const chunked of [false, true]) {
      const answer = await send("POST", `/v1/team${route.replace("ID", id)}`, headers, FIVE_MB, chunked);
      expect(answer, chunked ? "chunked" : "with Content-Length").toMatchObject({ status: 413 });
      expect(json(answer).error?.code).toBe("body_too_large");
    }
    expect((await stack.store.listEvents(id, 0)).filter((event) => event.message.type === "text")).toEqual([]);
    expect((await stack.store.getConversation(id))?.handoff).toBeNull();
  });

  it("a body at the team API's limit is read and judged by its schema (400 at the field, not 413)", async () => {
    const id = await conversation();
    const text = "x".repeat(16 * 1024 - JSON.stringify({ text: "" }).length);
    const answer = await send("POST", `/v1/team/conversations/${id}/messages`, { authorization: `Bearer ${ANA}`, "content-type": "application/json" }, JSON.stringify({ text }));
    expect(answer.status).toBe(400);
    expect(json(answer).error).toMatchObject({ code: "body_invalid", path: "text" });
  });
});

describe("follow-up outcomes", () => {
  async function unknownWrite(orderId: string): Promise<{ conversationId: string; proposalId: string }> {
    const c = await TestClient.open(stack.wsUrl, ORIGIN);
    const welcome = await c.hello("shop-agent");
    c.send({ t: "in", ref: "m", event: { type: "message", text: `cancel unknown ${orderId}` } });
    const review = await c.waitFor((frame) => frame.t === "event" && frame.message.type === "review");
    const proposalId = (review as { message: { proposalId: string } }).message.proposalId;
    c.send({ t: "in", ref: "c", event: { type: "confirm", proposalId } });
    await c.waitFor((frame) => frame.t === "ack" && frame.ref === "c");
    await c.close();
    return { conversationId: welcome.conversationId, proposalId };
  }
  const outcome = (proposalId: string, body: unknown) => send("POST", `/v1/team/follow-ups/${proposalId}/outcome`, { authorization: `Bearer ${ANA}`, "content-type": "application/json" }, JSON.stringify(body));

  it("recorded twice (one after the other, and two at once): the first is kept, the others are 409 write_not_follow_up; one outcome event, one audit entry", async () => {
    const { conversationId, proposalId } = await unknownWrite(ORDERS.unknownForever);
    // Every status check answered unknown: listed for the team once the last one is done.
    for (let waited = 0; !(await stack.store.getWrite(proposalId))?.followUp; waited++) {
      if (waited > 400) throw new Error(`never listed for follow-up: ${JSON.stringify(await stack.store.getWrite(proposalId))}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const first = await outcome(proposalId, { outcome: "not_applied", note: "Checked the shop: still open" });
    expect(first.status).toBe(200);
    const again = await Promise.all([outcome(proposalId, { outcome: "applied", note: "I think it went" }), outcome(proposalId, { outcome: "not_applied", note: "again" })]);
    for (const answer of again) {
      expect(answer.status).toBe(409);
      expect(json(answer).error).toEqual({ code: "write_not_follow_up", path: "proposalId", message: "this write is not applied and not waiting for a follow-up: nothing was changed" });
    }
    expect((await stack.store.getWrite(proposalId))?.state).toBe("not_applied");
    const outcomes = (await stack.store.listEvents(conversationId, 0)).filter((event) => event.message.type === "outcome");
    expect(outcomes.map((event) => (event.message as { state: string }).state)).toEqual(["unknown", "not_applied"]);
    const audit = (await (await fetch(`${stack.base}/v1/team/audit`, { headers: { authorization: `Bearer ${ANA}` } })).json()) as { events: { action: string; target: string }[] };
    expect(audit.events.filter((event) => event.target === proposalId).map((event) => event.action)).toEqual(["follow_up.listed", "follow_up.resolved"]);
  });

  it("on a write that is still proposed or already applied, nothing is recorded: 409 write_not_follow_up; an unknown id 404; a bad outcome 400", async () => {
    const c = await TestClient.open(stack.wsUrl, ORIGIN);
    await c.hello("shop-agent");
    c.send({ t: "in", ref: "m", event: { type: "message", text: `please cancel ${ORDERS.applied}` } });
    const review = await c.waitFor((frame) => frame.t === "event" && frame.message.type === "review");
    const proposed = (review as { message: { proposalId: string } }).message.proposalId;
    const refusedWhileProposed = await outcome(proposed, { outcome: "applied", note: "sure" });
    expect(refusedWhileProposed.status).toBe(409);
    expect(json(refusedWhileProposed).error?.code).toBe("write_not_follow_up");
    c.send({ t: "in", ref: "c", event: { type: "confirm", proposalId: proposed } });
    await c.waitFor((frame) => frame.t === "event" && frame.message.type === "outcome" && frame.message.state === "applied");
    await c.close();
    const refusedApplied = await outcome(proposed, { outcome: "not_applied", note: "I say it was not" });
    expect(refusedApplied.status).toBe(409);
    expect(json(refusedApplied).error?.code).toBe("write_not_follow_up");
    expect((await stack.store.getWrite(proposed))?.state).toBe("applied");
    expect((await outcome("w_never_was", { outcome: "applied", note: "x" })).status).toBe(404);
    const badOutcome = await outcome(proposed, { outcome: "pending", note: "x" });
    expect(badOutcome.status).toBe(400);
    expect(json(badOutcome).error).toMatchObject({ code: "body_invalid", path: "outcome" });
    const noNote = await outcome(proposed, { outcome: "applied", note: "   " });
    expect(noNote.status).toBe(400);
    expect(json(noNote).error).toMatchObject({ code: "body_invalid", path: "note" });
  });
});

describe("signing in to the console", () => {
  it("over https the session cookie is Secure, HttpOnly and SameSite=Strict; over the local http address it is not Secure; nothing names an unknown member apart from a wrong token", async () => {
    const behindHttps = await startStack({ gateway: { publicOrigins: ["https://caplo.shop.example"] } });
    try {
      const signIn = (origin: string, token = ANA) =>
        fetch(`${behindHttps.base}/v1/team/session`, { method: "POST", headers: { origin, "content-type": "application/json" }, body: JSON.stringify({ token }) });
      const https = await signIn("https://caplo.shop.example");
      expect(https.status).toBe(200);
      const cookie = https.headers.get("set-cookie") ?? "";
      expect(cookie).toMatch(/^caplo_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/);
      const local = await signIn(new URL(behindHttps.base).origin);
      expect(local.status).toBe(200);
      expect(local.headers.get("set-cookie")).not.toMatch(/Secure/);
      // The page is told nothing about why a token is refused: one answer for every wrong token.
      const [unknown, almost] = await Promise.all([signIn("https://caplo.shop.example", "ct_nobody-has-this-token"), signIn("https://caplo.shop.example", `${ANA}x`)]);
      expect([unknown.status, almost.status]).toEqual([401, 401]);
      expect(await unknown.json()).toEqual(await almost.json());
      expect(unknown.headers.get("set-cookie")).toBeNull();
    } finally {
      await behindHttps.close();
    }
  });

  it("an X-Forwarded-For the server does not trust gives no new address: the 11th attempt a minute from one client is 429 whatever it claims, and the right token then signs in nobody", async () => {
    const node = await startStack({});
    try {
      const origin = new URL(node.base).origin;
      const attempt = (token: string, claimed: string) =>
        fetch(`${node.base}/v1/team/session`, { method: "POST", headers: { origin, "content-type": "application/json", "x-forwarded-for": claimed }, body: JSON.stringify({ token }) });
      for (let i = 0; i < 10; i++) expect((await attempt(`wrong-${i}`, `198.51.100.${i}`)).status).toBe(401);
      const limited = await attempt(ANA, "198.51.100.200");
      expect(limited.status).toBe(429);
      expect(limited.headers.get("set-cookie")).toBeNull();
      expect(((await limited.json()) as { error: { code: string } }).error.code).toBe("sign_in_rate_limited");
    } finally {
      await node.close();
    }
  });
});
