import { describe, expect, it } from "vitest";
import { STEP_UP_META_KEY } from "@caplo/shared/outcome";
import { parseChallenges, stepUpFromChallenge } from "./challenge.ts";
import { outcomeOf } from "./outcome.ts";

const stepUp = (header: string | null | undefined) => {
  const result = stepUpFromChallenge(header);
  return result && (outcomeOf(result) as { stepUp: unknown }).stepUp;
};

describe("stepUpFromChallenge (RFC 9470)", () => {
  it("reads acr_values as the level and max_age as maxAuthAgeSeconds", () => {
    expect(stepUp('Bearer error="insufficient_user_authentication", error_description="A more recent authentication is required", acr_values="high", max_age=300')).toEqual({ level: "high", maxAuthAgeSeconds: 300 });
  });

  it("accepts quoted max_age, any parameter order and case-insensitive scheme", () => {
    expect(stepUp('bearer max_age="60", acr_values="standard", error="insufficient_user_authentication"')).toEqual({ level: "standard", maxAuthAgeSeconds: 60 });
  });

  it("picks the strongest known level acr_values lists, and high for an unknown acr", () => {
    expect(stepUp('Bearer error="insufficient_user_authentication", acr_values="low standard"')).toEqual({ level: "standard" });
    expect(stepUp('Bearer error="insufficient_user_authentication", acr_values="urn:mace:incommon:iap:silver"')).toEqual({ level: "high" });
    expect(stepUp('Bearer error="insufficient_user_authentication"')).toEqual({ level: "standard" });
  });

  it("handles commas and escaped quotes inside quoted strings", () => {
    expect(stepUp('Bearer realm="a, \\"b\\"", error="insufficient_user_authentication", acr_values="low"')).toEqual({ level: "low" });
  });

  it("finds the Bearer challenge among several", () => {
    expect(stepUp('Basic realm="x", Bearer error="insufficient_user_authentication", acr_values="high", DPoP algs="ES256"')).toEqual({ level: "high" });
    expect(stepUp('DPoP error="insufficient_user_authentication", Bearer realm="api"')).toBeUndefined();
  });

  it("clamps max_age to 86400 and ignores one that is not a number", () => {
    expect(stepUp('Bearer error="insufficient_user_authentication", max_age=100000')).toEqual({ level: "standard", maxAuthAgeSeconds: 86_400 });
    expect(stepUp('Bearer error="insufficient_user_authentication", max_age=-5')).toEqual({ level: "standard" });
    expect(stepUp('Bearer error="insufficient_user_authentication", max_age=0')).toEqual({ level: "standard", maxAuthAgeSeconds: 0 });
  });

  it("returns undefined for any other header", () => {
    for (const header of [
      null,
      undefined,
      "",
      'Bearer error="invalid_token"',
      'Bearer realm="api"',
      'Basic error="insufficient_user_authentication"',
      'Bearer error="insufficient_user_authentication_x"',
      'Bearer error="insufficient_user_authentication',
      "garbage ===",
    ]) {
      expect(stepUpFromChallenge(header), String(header)).toBeUndefined();
    }
  });

  it("parses token68 credentials and repeated parameters without confusion", () => {
    expect(parseChallenges("Negotiate abc123==, Bearer error=insufficient_user_authentication, error=invalid_token")).toEqual([
      { scheme: "negotiate", params: new Map() },
      { scheme: "bearer", params: new Map([["error", "insufficient_user_authentication"]]) },
    ]);
  });

  it("never throws or loops on arbitrary headers (seeded random strings of challenge characters)", () => {
    let seed = 42;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const alphabet = ['B', 'e', 'a', 'r', ' ', ',', '=', '"', '\\', 'x', '\t', 'error', 'insufficient_user_authentication', 'acr_values', 'max_age', '1', 'high'];
    for (let n = 0; n < 2000; n++) {
      const header = Array.from({ length: Math.floor(random() * 30) }, () => alphabet[Math.floor(random() * alphabet.length)]).join("");
      const result = stepUpFromChallenge(header);
      if (result) expect(["low", "standard", "high"]).toContain((outcomeOf(result) as { stepUp: { level: string } }).stepUp.level);
    }
    expect(stepUpFromChallenge("x".repeat(10_000))).toBeUndefined();
  });

  it("is a step-up result the tool wrapper sends under STEP_UP_META_KEY", () => {
    expect(STEP_UP_META_KEY).toBe("si.caplo/step-up");
    expect(outcomeOf(stepUpFromChallenge('Bearer error="insufficient_user_authentication"'))).toBeDefined();
  });
});
