// Every recorded webhook body in __fixtures__ parses to the channel event it stands for: texts, taps, list
// replies, media, delivery statuses (WhatsApp's 63016 and read, Messenger's delivery and read, Instagram's
// messaging_seen) and Messenger echoes, which are skipped.
import { describe, expect, it } from "vitest";
import { parseMeta } from "./meta/parse.ts";
import { fixture } from "./testkit.ts";
import { parseTwilio } from "./whatsapp/parse.ts";

const form = (name: string) => parseTwilio({ method: "POST", url: "/", headers: { "content-type": "application/x-www-form-urlencoded" }, rawBody: fixture(name) });
const json = (name: string, object: "page" | "instagram") => parseMeta({ method: "POST", url: "/", headers: { "content-type": "application/json" }, rawBody: fixture(name) }, object);

describe("recorded webhook fixtures", () => {
  it("WhatsApp: text, button tap, list reply, photo and an undelivered status with 63016", () => {
    expect(form("whatsapp-text.form")).toMatchObject({ ok: true, events: [{ kind: "message", messageId: "SM11111111111111111111111111111111", from: "whatsapp:+38640111222", to: "whatsapp:+14155238886", profileName: "Ana" }] });
    expect(form("whatsapp-button.form")).toMatchObject({ ok: true, events: [{ payload: "c1.AAAAAAAAAAAAAAAAAAAAAA", payloadTitle: "Confirm", text: "Confirm" }] });
    expect(form("whatsapp-list.form")).toMatchObject({ ok: true, events: [{ payload: "c1.BBBBBBBBBBBBBBBBBBBBBB", payloadTitle: "Ljubljana" }] });
    const media = form("whatsapp-media.form");
    expect(media).toMatchObject({ ok: true, events: [{ kind: "message", media: [{ contentType: "image/jpeg" }] }] });
    expect(media.ok && media.events[0]!.kind === "message" && media.events[0]!.text).toBeFalsy();
    expect(form("whatsapp-status-63016.form")).toMatchObject({
      ok: true,
      events: [{ kind: "status", about: "SM66666666666666666666666666666666", status: "undelivered", errorCode: 63016, messageId: "SM66666666666666666666666666666666:undelivered" }],
    });
  });
  it("Messenger: text, quick reply, postback, delivery; our own echo is skipped", () => {
    expect(json("messenger-text.json", "page")).toMatchObject({ ok: true, events: [{ kind: "message", messageId: "m_AbCdEf0123456789-text", from: "7000000000000001" }] });
    expect(json("messenger-quick-reply.json", "page")).toMatchObject({ ok: true, events: [{ payload: "c1.BBBBBBBBBBBBBBBBBBBBBB", text: "Ljubljana" }] });
    expect(json("messenger-postback.json", "page")).toMatchObject({ ok: true, events: [{ messageId: "m_AbCdEf0123456789-pb", payload: "c1.AAAAAAAAAAAAAAAAAAAAAA" }] });
    expect(json("messenger-delivery.json", "page")).toMatchObject({ ok: true, events: [{ kind: "status", status: "delivered", about: "m_sent0001" }] });
    expect(json("messenger-echo.json", "page")).toEqual({ ok: true, events: [] });
    // message_reads names no message: its watermark covers every one sent before it.
    expect(json("messenger-read.json", "page")).toMatchObject({ ok: true, events: [{ kind: "status", status: "read", about: "", watermark: 1764700008500, from: "7000000000000001", to: "105000000000001" }] });
  });
  it("Instagram messaging_seen names the read message by its mid; a WhatsApp read status callback", () => {
    expect(json("instagram-read.json", "instagram")).toMatchObject({ ok: true, events: [{ kind: "status", status: "read", about: "aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQxNDAwMDAwMDAwMDAx" }] });
    expect(form("whatsapp-status-read.form")).toMatchObject({ ok: true, events: [{ kind: "status", status: "read", about: "SM77777777777777777777777777777777", messageId: "SM77777777777777777777777777777777:read" }] });
  });
  it("Instagram: text, quick reply and postback; a Messenger body on the Instagram endpoint is refused", () => {
    expect(json("instagram-text.json", "instagram")).toMatchObject({ ok: true, events: [{ kind: "message", from: "1780000000000001", text: "Where is my order SO-1002?" }] });
    expect(json("instagram-quick-reply.json", "instagram")).toMatchObject({ ok: true, events: [{ payload: "c1.BBBBBBBBBBBBBBBBBBBBBB" }] });
    expect(json("instagram-postback.json", "instagram")).toMatchObject({ ok: true, events: [{ payload: "c1.AAAAAAAAAAAAAAAAAAAAAA", payloadTitle: "Confirm" }] });
    expect(json("messenger-text.json", "instagram")).toMatchObject({ ok: false, status: 400, error: { code: "body_invalid", path: "object" } });
  });
  it("a postback without mid gets a stable id, so its redelivery is the same event", () => {
    const body = Buffer.from(JSON.stringify({ object: "page", entry: [{ id: "1", time: 5, messaging: [{ sender: { id: "9" }, recipient: { id: "1" }, timestamp: 5, postback: { title: "Confirm", payload: "c1.x" } }] }] }));
    const parse = () => parseMeta({ method: "POST", url: "/", headers: {}, rawBody: body }, "page");
    const a = parse();
    const b = parse();
    expect(a.ok && b.ok && a.events[0]!.messageId).toBe(b.ok && b.events[0]!.messageId);
  });
});
