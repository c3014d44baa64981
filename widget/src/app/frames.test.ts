import { describe, expect, test } from "vitest";
import { PROTOCOL_VERSION as SHARED_VERSION, serverFrameSchema, WS_PATH as SHARED_PATH } from "@caplo/shared/protocol";
import { PROTOCOL_VERSION, readServerFrame, WS_PATH } from "./frames.ts";

const valid = [
  { t: "welcome", v: 1, conversationId: "c1", resumeToken: "tok", verified: false },
  { t: "welcome", v: 1, conversationId: "c1", resumeToken: "tok", verified: true, ratings: [{ seq: 2, rating: "up" }] },
  { t: "event", seq: 1, at: "2026-01-01T00:00:00Z", message: { type: "text", id: "m1", from: "agent", text: "Hi" } },
  { t: "event", seq: 2, at: "x", message: { type: "progress", id: "m2", callId: "c", state: "start", label: "Looking up your order" } },
  { t: "event", seq: 3, at: "x", message: { type: "review", id: "m3", proposalId: "p", tool: "a/b", title: "T", fields: [], state: "proposed" } },
  { t: "event", seq: 4, at: "x", message: { type: "outcome", id: "m4", proposalId: "p", state: "applied", message: "ok", receipt: [{ label: "a", value: "b" }] } },
  { t: "event", seq: 4, at: "x", message: { type: "outcome", id: "m4", proposalId: "p", state: "applied", title: "Add order note", message: "ok" } },
  { t: "event", seq: 5, at: "x", message: { type: "result", id: "m5", callId: "c", layout: "list", title: "T", columns: [], items: [{ a: 1 }] } },
  { t: "event", seq: 6, at: "x", message: { type: "question", id: "m6", elicitationId: "e", style: "form", message: "?", fields: [] } },
  { t: "event", seq: 7, at: "x", message: { type: "file", id: "m7", name: "a.pdf", mimeType: "application/pdf", size: 10, url: "/f" } },
  { t: "event", seq: 8, at: "x", message: { type: "handoff", id: "m8", state: "requested", text: "A person will answer" } },
  { t: "event", seq: 9, at: "x", message: { type: "step_up", id: "m9", level: "high", text: "Verify again" } },
  { t: "ack", ref: "r1" },
  { t: "error", code: "bad_frame", message: "nope", path: "/t" },
  { t: "typing", on: true },
  { t: "pong" },
];

describe("reading server frames in the browser", () => {
  test("the widget's protocol constants are the shared ones", () => {
    expect(PROTOCOL_VERSION).toBe(SHARED_VERSION);
    expect(WS_PATH).toBe(SHARED_PATH);
  });

  test("every frame the shared schema accepts is read", () => {
    for (const frame of valid) {
      expect(serverFrameSchema.safeParse(frame).success, JSON.stringify(frame)).toBe(true);
      expect(readServerFrame(JSON.stringify(frame)), JSON.stringify(frame)).not.toBeNull();
    }
  });

  test("a welcome's ratings are read as sent; a malformed rating is left out, not the welcome", () => {
    const read = (ratings: unknown) => readServerFrame(JSON.stringify({ t: "welcome", v: 1, conversationId: "c1", resumeToken: "tok", verified: false, ratings }));
    expect(read([{ seq: 2, rating: "up" }, { seq: 4, rating: "down" }])).toMatchObject({ ratings: [{ seq: 2, rating: "up" }, { seq: 4, rating: "down" }] });
    expect(read([{ seq: 0, rating: "up" }, { seq: 3, rating: "meh" }, "x", { seq: 5, rating: "down" }])).toMatchObject({ ratings: [{ seq: 5, rating: "down" }] });
    expect(read(undefined)).not.toHaveProperty("ratings");
  });

  test("malformed frames are dropped instead of crashing the app", () => {
    for (const bad of ["not json", "null", "[]", '{"t":"nope"}', '{"t":"event","seq":0,"message":{}}', '{"t":"event","seq":1,"message":{"type":"text","id":"m"}}', '{"t":"event","seq":1,"message":{"type":"result","id":"m","callId":"c","layout":"list","title":"t","columns":[],"items":[1]}}', '{"t":"ack"}', '{"t":"event","seq":1,"message":{"type":"outcome","id":"m","proposalId":"p","state":"applied","message":"ok","title":{"x":1}}}']) {
      expect(readServerFrame(bad), bad).toBeNull();
    }
  });
});
