// @vitest-environment happy-dom
import { beforeEach, describe, expect, test } from "vitest";
import { CACHED_EVENTS_MAX, WidgetStorage } from "./storage.ts";

beforeEach(() => {
  localStorage.clear();
  sessionStorage.clear();
});

const entry = (seq: number) => ({ seq, at: "", message: { type: "text" as const, id: `m${seq}`, from: "agent" as const, text: `t${seq}` } });

describe("what survives a reload", () => {
  test("the resume token and the shown events come back, per agent", () => {
    const a = new WidgetStorage("shop");
    a.saveResumeToken("tok");
    a.save({ conversationId: "c1", entries: [entry(1), entry(2)], used: { "review:p1": "confirm" } });
    expect(new WidgetStorage("shop").resumeToken()).toBe("tok");
    expect(new WidgetStorage("shop").load()).toEqual({ conversationId: "c1", entries: [entry(1), entry(2)], used: { "review:p1": "confirm" } });
    expect(new WidgetStorage("other").load()).toBeUndefined();
  });

  test("a damaged cache is dropped rather than shown", () => {
    const s = new WidgetStorage("shop");
    for (const raw of ["{", '{"conversationId":"c","entries":[{"seq":2},{"seq":1}]}', '{"conversationId":"c","entries":[{"seq":1,"message":{"type":"text"}}]}']) {
      sessionStorage.setItem("caplo:shop:events", raw);
      expect(s.load(), raw).toBeUndefined();
    }
  });

  test("a history longer than the cache is not cached, so a reload asks the server for all of it", () => {
    const s = new WidgetStorage("shop");
    s.save({ conversationId: "c1", entries: Array.from({ length: CACHED_EVENTS_MAX + 1 }, (_, i) => entry(i + 1)), used: {} });
    expect(s.load()).toBeUndefined();
    s.save({ conversationId: "c1", entries: Array.from({ length: CACHED_EVENTS_MAX }, (_, i) => entry(i + 1)), used: {} });
    expect(s.load()?.entries).toHaveLength(CACHED_EVENTS_MAX);
  });
});
