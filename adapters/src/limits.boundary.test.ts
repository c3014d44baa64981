// Every platform limit of issue 6 at its boundary: the renderer keeps the value that fits and degrades the
// one past it, and the fake platforms' rules accept the first and refuse the second.
import { describe, expect, it } from "vitest";
import * as C from "@caplo/shared/channels";
import type { Outbound } from "@caplo/shared/messages";
import { checkContentCreate, checkResolvedContent, checkSendBody, INSTAGRAM_RULES, MESSENGER_RULES } from "../../tests/channels/platformRules.ts";
import type { RenderWarning } from "./adapter.ts";
import { shorten, splitText, uniqueLabels, utf8Bytes } from "./common/text.ts";
import { renderInstagram } from "./instagram/format.ts";
import type { GraphMessage } from "./meta/api.ts";
import { metaChoices } from "./meta/format.ts";
import { MESSENGER_LIMITS, renderMessenger } from "./messenger/format.ts";
import { INSTAGRAM_LIMITS } from "./instagram/format.ts";
import { recordingRefs, whatsappTaps } from "./testkit.ts";
import { choiceMessages, renderWhatsApp, type WhatsAppMessage } from "./whatsapp/format.ts";

const s = (n: number, c = "a") => c.repeat(n);
const opts = (n: number, label = (i: number) => `Option ${i + 1}`) => Array.from({ length: n }, (_, i) => ({ label: label(i), payload: `c1.${String(i).padStart(22, "0")}` }));
const wa = (body: string, n: number, label?: (i: number) => string) => {
  const warnings: RenderWarning[] = [];
  return { messages: choiceMessages(body, opts(n, label), "Choose:", warnings), warnings };
};
const meta = (body: string, n: number, limits = MESSENGER_LIMITS, label?: (i: number) => string) => {
  const warnings: RenderWarning[] = [];
  return { messages: metaChoices(body, opts(n, label), "Choose:", limits, warnings), warnings };
};
const lastContent = (m: WhatsAppMessage[]) => m.filter((x) => x.kind === "content").at(-1) as Extract<WhatsAppMessage, { kind: "content" }> | undefined;

describe("shortening labels", () => {
  it("keeps a label of exactly the limit and shortens one past it with an ellipsis", () => {
    expect(shorten(s(20), 20)).toBe(s(20));
    expect(shorten(s(21), 20)).toBe(`${s(19)}…`);
    expect(Array.from(shorten(s(21), 20))).toHaveLength(20);
  });
  it("keeps shortened labels unique", () => {
    const labels = uniqueLabels([`${s(25)}1`, `${s(25)}2`, `${s(25)}3`], 20);
    expect(new Set(labels).size).toBe(3);
    for (const l of labels) expect(Array.from(l).length).toBeLessThanOrEqual(20);
  });
});

describe("WhatsApp limits", () => {
  it("reply buttons: 3 options are buttons, 4 become a list picker", () => {
    expect(lastContent(wa("Pick", 3).messages)?.template.type).toBe("twilio/quick-reply");
    expect(lastContent(wa("Pick", 4).messages)?.template.type).toBe("twilio/list-picker");
  });
  it("list picker: 10 items are a list, 11 become numbered text", () => {
    expect(lastContent(wa("Pick", 10).messages)?.template.type).toBe("twilio/list-picker");
    const eleven = wa("Pick", 11);
    expect(lastContent(eleven.messages)).toBeUndefined();
    expect((eleven.messages[0] as { body: string }).body).toContain("11. Option 11");
    expect(eleven.warnings[0]?.feature).toBe("list");
    // What a typed number means, in the numbered order.
    expect(eleven.warnings[0]?.numbered).toEqual(opts(11).map((o) => ({ label: o.label, payload: o.payload })));
    expect(wa("Pick", 10).warnings).toEqual([]);
  });
  it("button titles: 20 characters kept, 21 shortened", () => {
    const titles = (n: number) => whatsappTaps(wa("Pick", 2, (i) => s(n, String(i))).messages).map((t) => t.title);
    expect(titles(20)).toEqual([s(20, "0"), s(20, "1")]);
    expect(titles(21)).toEqual([`${s(19, "0")}…`, `${s(19, "1")}…`]);
  });
  it("list item titles: 24 characters kept, 25 shortened", () => {
    const items = (n: number) => whatsappTaps(wa("Pick", 4, (i) => s(n, String(i))).messages);
    expect(items(24)[0]!.title).toBe(s(24, "0"));
    expect(items(25)[0]!.title).toBe(`${s(23, "0")}…`);
  });
  it("list item descriptions: 72 kept, 73 shortened", () => {
    const warnings: RenderWarning[] = [];
    const d = (n: number) => whatsappTaps(choiceMessages("Pick", opts(4).map((o) => ({ ...o, description: s(n) })), "Choose:", warnings))[0]!.description;
    expect(d(72)).toBe(s(72));
    expect(d(73)).toBe(`${s(71)}…`);
  });
  it("interactive body: a variable of 255 characters is sent as the body, 256 sent whole as text before a short prompt", () => {
    const fits = wa(s(255), 2).messages;
    expect(fits).toHaveLength(1);
    expect(lastContent(fits)!.variables["1"]).toBe(s(255));
    const over = wa(s(256), 2).messages;
    expect(over[0]).toEqual({ kind: "text", body: s(256) });
    expect(lastContent(over)!.variables["1"]).toBe("Choose:");
  });
  it("a body on several lines goes as text first; the buttons follow with one line (Twilio refuses a newline in a body variable)", () => {
    const multi = wa("Cancel order\nOrder: SO-1002\nCard: ••••4242", 2);
    expect(multi.messages[0]).toEqual({ kind: "text", body: "Cancel order\nOrder: SO-1002\nCard: ••••4242" });
    expect(lastContent(multi.messages)!.variables["1"]).toBe("Choose:");
    for (const body of ["five     spaces", "a\ttab"]) expect(wa(body, 2).messages[0]).toEqual({ kind: "text", body });
    expect(wa("four    spaces", 2).messages).toHaveLength(1);
  });
  it("free-form text: 1600 characters in one message, 1601 in two", () => {
    expect(splitText(s(1600), C.WHATSAPP_TEXT_MAX)).toHaveLength(1);
    expect(splitText(s(1601), C.WHATSAPP_TEXT_MAX)).toHaveLength(2);
  });
  it("media: JPEG and PNG up to 5 MB and PDF up to 16 MB are media; one byte more, or GIF and WebP, a link", () => {
    const file = (mimeType: "image/jpeg" | "image/png" | "image/gif" | "image/webp" | "application/pdf", size: number) => renderWhatsApp({ type: "file", id: "f", name: "x", mimeType, size, url: "https://shop.example/v1/files/f_1" }, { refs: recordingRefs() });
    const MB = 1024 * 1024;
    for (const [mimeType, max] of [["image/jpeg", 5 * MB], ["image/png", 5 * MB], ["application/pdf", 16 * MB]] as const) {
      expect(file(mimeType, max)).toEqual({ messages: [{ kind: "media", body: "x", mediaUrl: "https://shop.example/v1/files/f_1" }], warnings: [] });
      const over = file(mimeType, max + 1);
      expect(over.messages).toEqual([{ kind: "text", body: "x: https://shop.example/v1/files/f_1" }]);
      expect(over.warnings[0]?.feature).toBe("files");
    }
    for (const mimeType of ["image/gif", "image/webp"] as const) expect(file(mimeType, 1024).messages).toEqual([{ kind: "text", body: "x: https://shop.example/v1/files/f_1" }]);
  });
  it("the fake Twilio's rules accept each limit and refuse one past it", () => {
    const qr = (n: number, title = "T") => ({ friendly_name: "x", language: "en", variables: {}, types: { "twilio/quick-reply": { body: "b", actions: Array.from({ length: n }, (_, i) => ({ title: `${title}${i}`, id: "x" })) } } });
    expect(checkContentCreate(qr(3))).toEqual([]);
    expect(checkContentCreate(qr(4))).not.toEqual([]);
    expect(checkContentCreate(qr(1, s(19)))).toEqual([]);
    expect(checkContentCreate(qr(1, s(20)))).not.toEqual([]);
    const dup = { friendly_name: "x", language: "en", types: { "twilio/quick-reply": { body: "b", actions: [{ title: "A", id: "1" }, { title: "A", id: "2" }] } } };
    expect(checkContentCreate(dup)).not.toEqual([]);
    const lp = (n: number, item = "I", description = "d", id = "x") => ({ friendly_name: "x", language: "en", types: { "twilio/list-picker": { body: "b", button: "Choose", items: Array.from({ length: n }, (_, i) => ({ id, item: `${item}${i}`, description })) } } });
    expect(checkContentCreate(lp(10))).toEqual([]);
    expect(checkContentCreate(lp(11))).not.toEqual([]);
    expect(checkContentCreate(lp(1, s(23)))).toEqual([]);
    expect(checkContentCreate(lp(1, s(24)))).not.toEqual([]);
    expect(checkContentCreate(lp(1, "I", s(72)))).toEqual([]);
    expect(checkContentCreate(lp(1, "I", s(73)))).not.toEqual([]);
    expect(checkContentCreate(lp(1, "I", "d", s(200)))).toEqual([]);
    expect(checkContentCreate(lp(1, "I", "d", s(201)))).not.toEqual([]);
    const types = { "twilio/quick-reply": { body: "{{1}}", actions: [{ title: "A", id: "{{2}}" }] } };
    expect(checkResolvedContent(types, { "1": s(255), "2": s(200) })).toEqual([]);
    expect(checkResolvedContent(types, { "1": s(256), "2": "x" })).not.toEqual([]);
    expect(checkResolvedContent(types, { "1": "b", "2": s(201) })).not.toEqual([]);
    // Twilio 21656: a body variable on two lines, with a tab, with five spaces in a row, or empty.
    for (const body of ["two\nlines", "a\ttab", "five     spaces", " "]) expect(checkResolvedContent(types, { "1": body, "2": "x" }), JSON.stringify(body)).not.toEqual([]);
    expect(checkResolvedContent(types, { "1": "four    spaces", "2": "x" })).toEqual([]);
    // Every variable needs a sample value at creation; a list-picker item needs a description.
    const shaped = { friendly_name: "x", language: "en", types: { "twilio/quick-reply": { body: "{{1}}", actions: [{ title: "{{2}}", id: "{{3}}" }] } } };
    expect(checkContentCreate({ ...shaped, variables: { "1": "b", "2": "t", "3": "i" } })).toEqual([]);
    expect(checkContentCreate({ ...shaped, variables: { "1": "b", "2": "t" } })).toEqual(["variable {{3}} has no sample value in variables"]);
    expect(checkContentCreate({ ...lp(1), types: { "twilio/list-picker": { body: "b", button: "Choose", items: [{ id: "x", item: "I" }] } } })).toEqual(['list-picker: item "I" has no description (required)']);
    // A title sent as a variable is checked as the customer sees it.
    const resolvedTitles = { "twilio/quick-reply": { body: "{{1}}", actions: [{ title: "{{2}}", id: "{{3}}" }, { title: "{{4}}", id: "{{5}}" }] } };
    expect(checkResolvedContent(resolvedTitles, { "1": "b", "2": s(20), "3": "a", "4": "Other", "5": "b" })).toEqual([]);
    expect(checkResolvedContent(resolvedTitles, { "1": "b", "2": s(21), "3": "a", "4": "Other", "5": "b" })).not.toEqual([]);
    expect(checkResolvedContent(resolvedTitles, { "1": "b", "2": "Same", "3": "a", "4": "Same", "5": "b" })).not.toEqual([]);
  });
});

const body = (m: GraphMessage) => checkSendBody({ recipient: { id: "1" }, messaging_type: "RESPONSE", message: (m as { message: unknown }).message }, MESSENGER_RULES);

describe("Messenger limits", () => {
  it("buttons: 3 options are a button template, 4 become quick replies", () => {
    const three = meta("Pick", 3).messages.at(-1) as unknown as { message: { attachment?: unknown } };
    expect(three.message.attachment).toBeDefined();
    const four = meta("Pick", 4).messages.at(-1) as unknown as { message: { quick_replies?: unknown[] } };
    expect(four.message.quick_replies).toHaveLength(4);
  });
  it("quick replies: 13 kept, 14 become numbered text", () => {
    expect((meta("Pick", 13).messages.at(-1) as unknown as { message: { quick_replies: unknown[] } }).message.quick_replies).toHaveLength(13);
    const fourteen = meta("Pick", 14);
    expect((fourteen.messages[0] as unknown as { message: { text: string; quick_replies?: unknown } }).message).toEqual({ text: expect.stringContaining("14. Option 14") });
    expect(fourteen.warnings[0]?.feature).toBe("quick_replies");
    expect(fourteen.warnings[0]?.numbered?.map((o) => o.payload)).toEqual(opts(14).map((o) => o.payload));
    expect(meta("Pick", 13).warnings).toEqual([]);
  });
  it("button template text: 640 in the template, 641 sent as text before a short prompt", () => {
    const fits = meta(s(640), 2).messages;
    expect(fits).toHaveLength(1);
    const over = meta(s(641), 2).messages;
    expect(over[0]).toEqual({ kind: "message", message: { text: s(641) } });
    for (const m of [...fits, ...over]) expect(body(m)).toEqual([]);
  });
  it("quick reply titles: 20 kept, 21 shortened", () => {
    const titles = (n: number) => (meta("Pick", 4, MESSENGER_LIMITS, (i) => s(n, String(i))).messages.at(-1) as unknown as { message: { quick_replies: Array<{ title: string }> } }).message.quick_replies.map((q) => q.title);
    expect(titles(20)[0]).toBe(s(20, "0"));
    expect(titles(21)[0]).toBe(`${s(19, "0")}…`);
  });
  it("text: 2000 characters in one message, 2001 split in two", () => {
    expect(renderMessenger({ type: "text", id: "x", from: "agent", text: s(2000) }, { refs: recordingRefs() }).messages).toHaveLength(1);
    expect(renderMessenger({ type: "text", id: "x", from: "agent", text: s(2001) }, { refs: recordingRefs() }).messages).toHaveLength(2);
  });
  it("the fake Graph's rules accept each limit and refuse one past it", () => {
    const qr = (n: number, title = "T", payload = "p") => ({ recipient: { id: "1" }, messaging_type: "RESPONSE", message: { text: "t", quick_replies: Array.from({ length: n }, (_, i) => ({ content_type: "text", title: `${title}${i}`.slice(0, Math.max(title.length, 1) + 1), payload })) } });
    expect(checkSendBody(qr(13), MESSENGER_RULES)).toEqual([]);
    expect(checkSendBody(qr(14), MESSENGER_RULES)).not.toEqual([]);
    expect(checkSendBody(qr(1, s(19)), MESSENGER_RULES)).toEqual([]);
    expect(checkSendBody(qr(1, s(20)), MESSENGER_RULES)).not.toEqual([]);
    expect(checkSendBody(qr(1, "T", s(1000)), MESSENGER_RULES)).toEqual([]);
    expect(checkSendBody(qr(1, "T", s(1001)), MESSENGER_RULES)).not.toEqual([]);
    const bt = (n: number, text = "t") => ({ recipient: { id: "1" }, messaging_type: "RESPONSE", message: { attachment: { type: "template", payload: { template_type: "button", text, buttons: Array.from({ length: n }, (_, i) => ({ type: "postback", title: `B${i}`, payload: "p" })) } } } });
    expect(checkSendBody(bt(0), MESSENGER_RULES)).not.toEqual([]);
    expect(checkSendBody(bt(1), MESSENGER_RULES)).toEqual([]);
    expect(checkSendBody(bt(3), MESSENGER_RULES)).toEqual([]);
    expect(checkSendBody(bt(4), MESSENGER_RULES)).not.toEqual([]);
    expect(checkSendBody(bt(1, s(640)), MESSENGER_RULES)).toEqual([]);
    expect(checkSendBody(bt(1, s(641)), MESSENGER_RULES)).not.toEqual([]);
    const text = (t: string) => ({ recipient: { id: "1" }, messaging_type: "RESPONSE", message: { text: t } });
    expect(checkSendBody(text(s(2000)), MESSENGER_RULES)).toEqual([]);
    expect(checkSendBody(text(s(2001)), MESSENGER_RULES)).not.toEqual([]);
    expect(checkSendBody({ ...text("x"), messaging_type: "MESSAGE_TAG", tag: "HUMAN_AGENT" }, MESSENGER_RULES)).toEqual([]);
    expect(checkSendBody({ ...text("x"), tag: "HUMAN_AGENT" }, MESSENGER_RULES)).not.toEqual([]);
  });
});

describe("Instagram limits", () => {
  it("text: 1000 bytes in one message, 1001 bytes split, counted in UTF-8", () => {
    const fits: Outbound = { type: "text", id: "x", from: "agent", text: s(500, "é") };
    const over: Outbound = { type: "text", id: "x", from: "agent", text: `${s(500, "é")}a` };
    expect(utf8Bytes(s(500, "é"))).toBe(1000);
    expect(renderInstagram(fits, { refs: recordingRefs() }).messages).toHaveLength(1);
    const split = renderInstagram(over, { refs: recordingRefs() }).messages;
    expect(split).toHaveLength(2);
    for (const m of split) expect(checkSendBody({ recipient: { id: "1" }, messaging_type: "RESPONSE", message: (m as { message: unknown }).message }, INSTAGRAM_RULES)).toEqual([]);
  });
  it("quick replies: 13 kept, 14 become numbered text; text only", () => {
    const thirteen = meta("Pick", 13, INSTAGRAM_LIMITS).messages.at(-1) as unknown as { message: { quick_replies: Array<{ content_type: string }> } };
    expect(thirteen.message.quick_replies).toHaveLength(13);
    expect(new Set(thirteen.message.quick_replies.map((q) => q.content_type))).toEqual(new Set(["text"]));
    expect(meta("Pick", 14, INSTAGRAM_LIMITS).warnings[0]?.feature).toBe("quick_replies");
  });
  it("the fake Graph's Instagram rules refuse 1001 bytes and non-text quick replies", () => {
    const text = (t: string) => ({ recipient: { id: "1" }, messaging_type: "RESPONSE", message: { text: t } });
    expect(checkSendBody(text(s(1000)), INSTAGRAM_RULES)).toEqual([]);
    expect(checkSendBody(text(s(1001)), INSTAGRAM_RULES)).not.toEqual([]);
    expect(checkSendBody({ recipient: { id: "1" }, messaging_type: "RESPONSE", message: { text: "t", quick_replies: [{ content_type: "user_email", title: "x", payload: "p" }] } }, INSTAGRAM_RULES)).not.toEqual([]);
  });
});
