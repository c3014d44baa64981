// Numbers past what the store can hold (tests/attacks/README.md), on a gateway whose engine keeps its
// conversations in PostgreSQL: an event seq is a 32-bit column there, an audit id a 64-bit one. A team API
// `after` or a widget's rate `seq` beyond them was passed to the store, which refused the query, and the
// caller got 500 internal_error (an error frame) instead of a located refusal. Each is now refused by code
// at its path before the store is asked, and the same request at the bound is answered normally.
// Text jsonb cannot hold (a NUL, a lone surrogate) in a customer's message or edit was internal_error on every
// try; it is now stored, as on SQLite, with U+FFFD in their place, and the write runs with what was stored.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVENT_SEQ_MAX } from "@caplo/shared";
import { teamMember } from "../../server/src/gateway/teamMembers.ts";
import { postgresHarness, type StoreHarness } from "../../server/src/store/testing/storeHarness.ts";
import { answerTo, isT, proposeCancel, TestClient } from "../gateway/support/client.ts";
import { ORIGIN, SHOP_RULES, startStack, type Stack } from "../gateway/support/stack.ts";
import { shopVersion } from "../engine/support/shopTools.ts";

const TOKEN = "ct_bounds-team-token-0123456789abcdef";
let harness: StoreHarness;
let stack: Stack | undefined;
let base = "";

beforeAll(async () => {
  harness = postgresHarness("caplo_attacks");
  // The gateway tests' server (the composition root's, as caplo serve's) on this PostgreSQL schema.
  const store = await harness.open();
  stack = await startStack({ store: () => store, rules: SHOP_RULES, nodeId: "bounds", gateway: { teamMembers: [teamMember("ana", TOKEN)] } });
  base = stack.base;
}, 60_000);
afterAll(async () => {
  await stack?.close();
  await harness?.cleanup();
});

const team = async (path: string) => {
  const answer = await fetch(`${base}/v1/team${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: answer.status, body: (await answer.json()) as { error?: { code: string; path: string; message: string }; events?: unknown[] } };
};

describe("numbers past the store's columns, on PostgreSQL", () => {
  it(`the team API's events after ${EVENT_SEQ_MAX} are none; after ${EVENT_SEQ_MAX + 1}, 1e308 or 2^63 it is 400 after_invalid, not 500`, async () => {
    const c = await TestClient.open(base.replace("http", "ws") + "/v1/ws", ORIGIN);
    const { conversationId } = await c.hello("shop-agent");
    await c.close();
    expect(await team(`/conversations/${conversationId}/events?after=${EVENT_SEQ_MAX}`)).toMatchObject({ status: 200, body: { events: [] } });
    for (const after of [String(EVENT_SEQ_MAX + 1), "1e308", "9223372036854775808", "-1", "1.5", "x"]) {
      const answer = await team(`/conversations/${conversationId}/events?after=${after}`);
      expect(answer.status, after).toBe(400);
      expect(answer.body.error).toEqual({ code: "after_invalid", path: "after", message: `after is a whole number from 0 to ${EVENT_SEQ_MAX}` });
    }
  });

  it(`the audit after ${Number.MAX_SAFE_INTEGER} is empty; after 2^53, 1e308 or 2^63 it is 400 after_invalid, not 500`, async () => {
    expect(await team(`/audit?after=${Number.MAX_SAFE_INTEGER}`)).toMatchObject({ status: 200, body: { events: [] } });
    for (const after of ["9007199254740992", "1e308", "9223372036854775808"]) {
      const answer = await team(`/audit?after=${after}`);
      expect(answer.status, after).toBe(400);
      expect(answer.body.error?.code).toBe("after_invalid");
    }
  });

  it(`a rate frame for seq ${EVENT_SEQ_MAX} is not_rateable; for ${EVENT_SEQ_MAX + 1} it is frame_invalid at seq; the socket lives on`, async () => {
    const c = await TestClient.open(base.replace("http", "ws") + "/v1/ws", ORIGIN);
    await c.hello("shop-agent");
    c.send({ t: "rate", ref: "at", seq: EVENT_SEQ_MAX, rating: "up" });
    expect(await c.waitFor((frame) => frame.t === "error" && frame.ref === "at")).toMatchObject({ code: "not_rateable", path: "seq" });
    c.send({ t: "rate", ref: "past", seq: EVENT_SEQ_MAX + 1, rating: "up" });
    expect(await c.waitFor((frame) => frame.t === "error" && frame.ref === "past")).toMatchObject({ code: "frame_invalid", path: "seq" });
    c.send({ t: "in", ref: "hi", event: { type: "message", text: "hello" } });
    await c.waitFor((frame) => frame.t === "event" && frame.message.type === "text" && frame.message.from === "agent");
    expect(c.frames.some((frame) => frame.t === "error" && frame.code === "internal_error")).toBe(false);
    await c.close();
  });

  it("a message and an edit holding a lone surrogate (text cut inside an emoji) or a NUL are stored with U+FFFD, not refused as internal_error; the write runs once with what was stored", async () => {
    const c = await TestClient.open(base.replace("http", "ws") + "/v1/ws", ORIGIN);
    const { conversationId } = await c.hello("shop-agent");
    // A browser's JSON.stringify sends a lone surrogate as the escape \ud83d; jsonb refused it (and \u0000).
    c.send(`{"t":"in","ref":"cut","event":{"type":"message","text":"hello, a smile cut in half \\ud83d and a nul \\u0000."}}`);
    expect(await c.waitFor(answerTo("cut"))).toEqual({ t: "ack", ref: "cut" });
    await c.waitFor(isT("event", (frame) => frame.message.type === "text" && frame.message.from === "agent"));
    const texts = async () => (await stack!.engine.eventsAfter(conversationId, 0, 100)).flatMap((event) => (event.message.type === "text" && event.message.from === "customer" ? [event.message.text] : []));
    expect(await texts()).toEqual(["hello, a smile cut in half \ufffd and a nul \ufffd."]);
    // The same event as sent on the socket: what the customer sees is what the store holds.
    expect(c.events().find((frame) => frame.message.type === "text" && frame.message.from === "customer")?.message).toMatchObject({ text: "hello, a smile cut in half \ufffd and a nul \ufffd." });
    const proposalId = await proposeCancel(c, "SO-8901");
    c.send(`{"t":"in","ref":"edit","event":{"type":"confirm","proposalId":"${proposalId}","edits":{"/reason":"too late \\ud83d\\u0000"}}}`);
    expect(await c.waitFor(answerTo("edit"))).toEqual({ t: "ack", ref: "edit" });
    await c.waitFor(isT("event", (frame) => frame.message.type === "outcome" && frame.message.state === "applied"));
    const ran = stack!.backend.cancels("SO-8901");
    expect(ran.map((call) => call.args.reason)).toEqual(["too late \ufffd\ufffd"]);
    expect((await stack!.store.getWrite(proposalId))?.finalArgs).toMatchObject({ reason: "too late \ufffd\ufffd" });
    expect(c.frames.some((frame) => frame.t === "error")).toBe(false);
    await c.close();
  });

  it("a NUL in a team API id is no conversation or write (404, as one that does not exist), not 500; a search for it looks for U+FFFD; in a note or an outcome's note it is kept as U+FFFD", async () => {
    const send = async (method: string, path: string, body?: unknown) => {
      const answer = await fetch(`${base}/v1/team${path}`, { method, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, ...(body !== undefined && { body: JSON.stringify(body) }) });
      return { status: answer.status, body: (await answer.json()) as { error?: { code: string; path: string; message: string } } & Record<string, unknown> };
    };
    const c = await TestClient.open(base.replace("http", "ws") + "/v1/ws", ORIGIN);
    const { conversationId } = await c.hello("shop-agent");
    await c.close();
    const before = await stack!.store.getConversation(conversationId);
    const missing = await send("GET", "/conversations/c_does_not_exist/events");
    for (const id of ["%00", `${conversationId}%00`, "a%00b"]) {
      for (const [method, path, body] of [
        ["GET", `/conversations/${id}/events`, undefined],
        ["GET", `/conversations/${id}/record`, undefined],
        ["GET", `/conversations/${id}/invocations`, undefined],
        ["POST", `/conversations/${id}/takeover`, {}],
        ["POST", `/conversations/${id}/notes`, { text: "x" }],
        ["POST", `/conversations/${id}/read`, { seq: 1 }],
      ] as const) {
        expect(await send(method, path, body), `${method} ${path}`).toEqual(missing);
      }
      const outcome = await send("POST", `/follow-ups/${id}/outcome`, { outcome: "applied", note: "checked" });
      expect(outcome).toEqual(await send("POST", "/follow-ups/w_does_not_exist/outcome", { outcome: "applied", note: "checked" }));
      expect(outcome.status).toBe(404);
    }
    expect(await stack!.store.getConversation(conversationId)).toEqual(before);
    // A search for a NUL looks for what is stored in its place (the messages above kept U+FFFD): 200, as for U+FFFD.
    const searched = await send("GET", "/inbox?q=%00");
    expect(searched.status).toBe(200);
    expect(searched).toEqual(await send("GET", `/inbox?q=${encodeURIComponent("\ufffd")}`));
    // A note and a follow-up's note holding a NUL are kept, with U+FFFD in its place.
    const note = await send("POST", `/conversations/${conversationId}/notes`, { text: "called the \u0000 shop" });
    expect(note.status).toBe(200);
    expect((await stack!.engine.teamNotes(conversationId)).map((kept) => kept.text)).toEqual(["called the \ufffd shop"]);
    const write = await stack!.store.insertWrite({
      id: "w_bounds_followup", conversationId, turnId: "t", callId: "c", toolRef: "shop/cancel_order", modelName: "shop__cancel_order",
      packageVersionId: shopVersion().id, tool: "cancel_order", args: { orderId: "SO-1" }, state: "proposed", confirmation: "required", ownerId: "visitor", subjectId: null, createdAt: 1,
    });
    await stack!.store.transitionWrite(write.id, { states: ["proposed"] }, { state: "unknown", followUp: true }, 2);
    expect((await send("POST", `/follow-ups/${write.id}/outcome`, { outcome: "not_applied", note: "shop says \u0000 no" })).status).toBe(200);
    expect((await stack!.store.getWrite(write.id))?.state).toBe("not_applied");
    expect((await stack!.engine.transitions(write.id)).at(-1)?.note).toContain("shop says \ufffd no");
  });
});
