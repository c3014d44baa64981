import { describe, expect, it } from "vitest";
import { chooseEncoding, parseAcceptEncoding } from "./contentEncoding.ts";

const both = ["br", "gzip"] as const;

describe("chooseEncoding", () => {
  it("sends brotli to a browser that takes it, gzip to one that takes only gzip, the file itself to one that says nothing", () => {
    expect(chooseEncoding("gzip, deflate, br, zstd", both)).toBe("br");
    expect(chooseEncoding("gzip, deflate", both)).toBe("gzip");
    expect(chooseEncoding(undefined, both)).toBe("identity");
    expect(chooseEncoding("", both)).toBe("identity");
  });

  it("takes only the encodings built beside the file", () => {
    expect(chooseEncoding("br, gzip", ["gzip"])).toBe("gzip");
    expect(chooseEncoding("br", [])).toBe("identity");
  });

  it("follows q-values: the higher q wins, br before gzip on equal q, identity above both wins", () => {
    expect(chooseEncoding("br;q=0.5, gzip;q=0.8", both)).toBe("gzip");
    expect(chooseEncoding("gzip;q=0.9, br;q=0.9", both)).toBe("br");
    expect(chooseEncoding("br;q=0.2, identity", both)).toBe("identity");
    expect(chooseEncoding("BR;Q=1.000", both)).toBe("br");
  });

  it("never sends a coding refused with q=0, even through *", () => {
    expect(chooseEncoding("br;q=0, gzip", both)).toBe("gzip");
    expect(chooseEncoding("br;q=0, gzip;q=0", both)).toBe("identity");
    expect(chooseEncoding("*;q=0.5, br;q=0", both)).toBe("gzip");
  });

  it("* stands for every coding not named, identity included unless named", () => {
    expect(chooseEncoding("*", both)).toBe("br");
    expect(chooseEncoding("*;q=0, identity", both)).toBe("identity");
    expect(chooseEncoding("*;q=0, gzip", both)).toBe("gzip");
  });

  it("answers none acceptable when identity is refused and no built encoding is taken", () => {
    expect(chooseEncoding("identity;q=0", [])).toBeNull();
    expect(chooseEncoding("*;q=0", both)).toBeNull();
    expect(chooseEncoding("identity;q=0, deflate", both)).toBeNull();
    // …but an available coding still serves it.
    expect(chooseEncoding("identity;q=0, gzip", both)).toBe("gzip");
  });

  it("reads x-gzip as gzip and a malformed q as a refusal, never as acceptance", () => {
    expect(chooseEncoding("x-gzip", both)).toBe("gzip");
    expect(parseAcceptEncoding("br;q=2, gzip;q=abc, deflate;q=0.1234").get("br")).toBe(0);
    expect(parseAcceptEncoding("br;q=2, gzip;q=abc").get("gzip")).toBe(0);
    expect(chooseEncoding("br;q=2, gzip;q=abc", both)).toBe("identity");
    expect(chooseEncoding(" , ;q=1, br ; q=0.7 ", both)).toBe("br");
  });
});
