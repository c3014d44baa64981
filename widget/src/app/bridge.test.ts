// @vitest-environment happy-dom
import { describe, expect, test } from "vitest";
import { readHostCommand } from "./bridge.ts";
import { readPageMessage } from "./components/PagePanel.tsx";
import { readParams } from "./params.ts";

const parent = {} as Window;
const other = {} as Window;
const msg = (data: unknown, origin: string, source: Window) => ({ data, origin, source }) as unknown as MessageEvent;

describe("host page messages", () => {
  test("only the parent window at the host page's origin is heard", () => {
    const identify = { caplo: 1, type: "identify", token: "signed" };
    expect(readHostCommand(msg(identify, "https://shop.example", parent), parent, "https://shop.example")).toEqual({ type: "identify", token: "signed" });
    expect(readHostCommand(msg(identify, "https://evil.example", parent), parent, "https://shop.example")).toBeNull();
    expect(readHostCommand(msg(identify, "https://shop.example", other), parent, "https://shop.example")).toBeNull();
    expect(readHostCommand(msg(identify, "https://shop.example", parent), parent, null)).toBeNull();
  });

  test("unmarked, unknown or oversized messages are ignored", () => {
    const at = (data: unknown) => readHostCommand(msg(data, "https://shop.example", parent), parent, "https://shop.example");
    expect(at({ type: "identify", token: "x" })).toBeNull();
    expect(at({ caplo: 1, type: "eval", code: "x" })).toBeNull();
    expect(at({ caplo: 1, type: "identify", token: "x".repeat(8193) })).toBeNull();
    expect(at({ caplo: 1, type: "identify", token: "x".repeat(8192) })).toEqual({ type: "identify", token: "x".repeat(8192) });
    expect(at("identify")).toBeNull();
    expect(at({ caplo: 1, type: "init", resume: "tok" })).toEqual({ type: "init", resume: "tok" });
    expect(at({ caplo: 1, type: "init", resume: 5 })).toEqual({ type: "init", resume: null });
    expect(at({ caplo: 1, type: "warm", extra: "ignored" })).toEqual({ type: "warm" });
  });
});

describe("page panel messages", () => {
  test("a page is heard only from its own frame at one of the listed origins, and may only close the panel", () => {
    const frame = {} as Window;
    const origins = ["https://pay.example"];
    expect(readPageMessage(msg({ type: "caplo:done" }, "https://pay.example", frame), frame, origins)).toBe("done");
    expect(readPageMessage(msg({ type: "caplo:close" }, "https://pay.example", frame), frame, origins)).toBe("close");
    expect(readPageMessage(msg({ type: "caplo:done" }, "https://evil.example", frame), frame, origins)).toBeNull();
    expect(readPageMessage(msg({ type: "caplo:done" }, "https://pay.example", other), frame, origins)).toBeNull();
    expect(readPageMessage(msg({ type: "outcome", state: "applied" }, "https://pay.example", frame), frame, origins)).toBeNull();
  });
});

describe("iframe parameters", () => {
  test("the browser's ancestor origin wins over the origin the URL claims; bad values fall back", () => {
    const p = readParams("?agent=shop&origin=https%3A%2F%2Fevil.example&locale=sl&color=%23ff0000", "https://shop.example", "en-US");
    expect(p).toEqual({ agent: "shop", parentOrigin: "https://shop.example", locale: "sl", color: "#ff0000", theme: null, preload: false });
    const bad = readParams("?agent=%3Cx%3E&origin=javascript%3Aalert(1)&locale=%3Cb%3E&color=red;background:url(x)", undefined, "de-AT");
    expect(bad).toEqual({ agent: "", parentOrigin: null, locale: "de-AT", color: null, theme: null, preload: false });
  });

  test("preload=1 (the loader made the frame ahead of a click) and nothing else marks a preloaded frame", () => {
    expect(readParams("?agent=shop&preload=1", undefined, "en").preload).toBe(true);
    expect(readParams("?agent=shop&preload=true", undefined, "en").preload).toBe(false);
    expect(readParams("?agent=shop", undefined, "en").preload).toBe(false);
  });
});
